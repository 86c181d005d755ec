//! One run: the store, the harness's listener, the clients and the nemesis, for the time asked;
//! then the final read, the checkers, and the report in the run's folder (`history.jsonl`,
//! `faults.jsonl`, `report.txt`, `timeline.svg`, the clients' logs).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::clients::{self, Setup};
use crate::history::{self, Event};
use crate::nemesis::{self, Schedule};
use crate::partition::Cut;
use crate::record::{Fault, Recorder};
use crate::report;
use crate::serve;
use crate::stores::Store;

/// What to run.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Plan {
    pub store: String,
    pub nemesis: String,
    pub time: Duration,
    pub fronts: Vec<String>,
    pub per_front: u32,
    /// The lease, in seconds.
    pub lease: f64,
    pub out: PathBuf,
    /// The clients hold permits of a semaphore of this many (none: a lock).
    pub permits: Option<u32>,
    /// The clients run for leader of an election (instead of taking a lock).
    #[serde(default)]
    pub election: bool,
    /// Redis grants wait for this many replicas (`min_replicas`).
    #[serde(default)]
    pub min_replicas: Option<u32>,
    pub fenced: bool,
    pub tenure: PathBuf,
    pub harness: PathBuf,
    pub python: PathBuf,
    pub node_path: Option<PathBuf>,
    pub kotlin_cp: Option<String>,
    pub workers: PathBuf,
}

/// Makes the run `plan` describes and judges it; `stop` ends it early.
pub fn run(plan: &Plan, stop: &Arc<AtomicBool>) -> Result<Judged, String> {
    let lease = Duration::try_from_secs_f64(plan.lease)
        .ok()
        .filter(|l| !l.is_zero())
        .ok_or_else(|| format!("--lease {} is no positive number of seconds", plan.lease))?;
    let _ = std::fs::remove_dir_all(&plan.out);
    std::fs::create_dir_all(&plan.out).map_err(|e| format!("{}: {e}", plan.out.display()))?;
    let plan_json = serde_json::to_string_pretty(plan).map_err(|e| e.to_string())?;
    std::fs::write(plan.out.join("plan.json"), plan_json).map_err(|e| format!("plan.json: {e}"))?;
    let recorder = Recorder::new(plan.fenced, plan.permits.map_or(1, |n| n as usize));
    let address = serve::start(recorder.clone()).map_err(|e| format!("the harness's listener: {e}"))?;
    let mut store = Store::start(&plan.store, &plan.out, &plan.nemesis)?;
    nemesis::check(&plan.nemesis, &store)?;
    let url = match plan.min_replicas {
        Some(n) if matches!(store, Store::Redis(_) | Store::Sentinel(..)) => {
            let join = if store.url().contains('?') { '&' } else { '?' };
            format!("{}{join}min_replicas={n}", store.url())
        }
        Some(_) => return Err("--min-replicas is a Redis option (stores redis and sentinel)".into()),
        None => store.url(),
    };
    let clocks = (plan.nemesis == "clock").then(|| plan.out.join("clocks"));
    let clients_count = plan.fronts.len() * plan.per_front as usize;
    let cut = match plan.nemesis.as_str() {
        "partition" => Some(Arc::new(Cut::new(clients_count, 0)?)),
        _ => None,
    };
    if let Some(dir) = &clocks {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let setup = Setup {
        url,
        name: "jepsen".into(),
        address,
        lease: plan.lease,
        timeout: 3.0 * plan.lease,
        tenure: plan.tenure.clone(),
        harness: plan.harness.clone(),
        python: plan.python.clone(),
        node_path: plan.node_path.clone(),
        kotlin_cp: plan.kotlin_cp.clone(),
        workers: plan.workers.clone(),
        clocks: clocks.clone(),
        logs: plan.out.clone(),
        cut: cut.clone(),
        permits: plan.permits,
        election: plan.election,
    };
    let clients_stop = Arc::new(AtomicBool::new(false));
    let clients = clients::start(&plan.fronts, plan.per_front, &setup, &recorder, &clients_stop);
    let nemesis_stop = Arc::new(AtomicBool::new(false));
    let schedule =
        Schedule { quiet: Duration::from_secs(2), length: Duration::from_secs(2), lease, clients: clients_count };
    let injecting = {
        let (recorder, nemesis_stop, nemesis) = (recorder.clone(), nemesis_stop.clone(), plan.nemesis.clone());
        std::thread::spawn(move || {
            let levers = nemesis::Levers { clocks: clocks.as_deref(), cut: cut.as_deref() };
            nemesis::run(&nemesis, &mut store, schedule, &levers, &recorder, &nemesis_stop);
            store
        })
    };
    let end = std::time::Instant::now() + plan.time;
    while std::time::Instant::now() < end && !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(50));
    }
    nemesis_stop.store(true, Ordering::SeqCst);
    // (A nemesis that panicked — a store that did not come back in time — ends the run, but the
    // clients are stopped first, and the history written.)
    let store = injecting.join();
    if store.is_err() {
        recorder.problem("the nemesis panicked (see above): the store did not come back".into());
    }
    // Healed: the clients go on a little before they stop, so that the end of the history shows
    // the store serving again.
    std::thread::sleep(2 * lease);
    clients_stop.store(true, Ordering::SeqCst);
    for client in clients {
        if client.join().is_err() {
            recorder.problem("a client's thread panicked".into());
        }
    }
    recorder.final_reads(0);
    drop(store);
    let (events, faults) = (recorder.events(), recorder.faults());
    write_lines(&plan.out.join("history.jsonl"), &events)?;
    write_lines(&plan.out.join("faults.jsonl"), &faults)?;
    let judged = judge(&plan.out, &title(plan), &events, &faults, (plan.permits, plan.election))?;
    let problems = recorder.problems();
    if !problems.is_empty() {
        return Err(format!("{}the run had problems:\n  {}", judged.report, problems.join("\n  ")));
    }
    Ok(judged)
}

/// The first line of a run's report.
pub fn title(plan: &Plan) -> String {
    let fenced = if plan.fenced { "" } else { ", resource UNFENCED" };
    let primitive = match plan.permits {
        _ if plan.election => "an election".into(),
        None => "a lock".into(),
        Some(n) => format!("a semaphore of {n}"),
    };
    let replicas = plan.min_replicas.map_or(String::new(), |n| format!(" (min_replicas={n})"));
    format!(
        "{}{replicas} / {} / {} × {} on {primitive}, {:?}{fenced}",
        plan.store,
        plan.nemesis,
        plan.fronts.join(","),
        plan.per_front,
        plan.time
    )
}

/// Judges the history in `dir` again.
pub fn check(dir: &Path) -> Result<Judged, String> {
    let (events, faults, heading, held) = recorded(dir)?;
    judge(dir, &heading, &events, &faults, held)
}

/// The timeline of the run in `dir` from `from` to `to` seconds into it (an SVG): a window of a
/// long run, as docs/safety.md shows them.
pub fn window(dir: &Path, from: f64, to: f64) -> Result<String, String> {
    if !(from.is_finite() && to.is_finite() && 0.0 <= from && from < to) {
        return Err(format!("the window {from} s to {to} s is no window: 0 <= FROM < TO, in seconds"));
    }
    let (events, faults, heading, (permits, election)) = recorded(dir)?;
    let ops = history::ops(&events).map_err(|e| format!("the history does not pair: {e}"))?;
    let verdicts = report::judge(&ops, permits, election);
    let nanos = |s: f64| u64::try_from(Duration::from_secs_f64(s).as_nanos()).unwrap_or(u64::MAX);
    let title = format!("{heading} ({from} s to {to} s)");
    Ok(report::timeline(&title, &ops, &faults, &verdicts, Some((nanos(from), nanos(to)))))
}

/// What a run recorded: its events, its faults, its report's heading, and what it held (a
/// semaphore's permits, whether it was an election).
type Recorded = (Vec<Event>, Vec<Fault>, String, (Option<u32>, bool));

/// What the run in `dir` recorded.
fn recorded(dir: &Path) -> Result<Recorded, String> {
    let read =
        |name: &str| std::fs::read_to_string(dir.join(name)).map_err(|e| format!("{}: {e}", dir.join(name).display()));
    let events = history::parse(&read("history.jsonl")?).map_err(|e| e.to_string())?;
    let faults = read("faults.jsonl")?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Fault>(l).map_err(|e| format!("faults.jsonl: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    // A semaphore's run says so in its plan.
    let plan: Option<Plan> = read("plan.json").ok().and_then(|text| serde_json::from_str(&text).ok());
    let heading = plan.as_ref().map_or_else(|| dir.display().to_string(), title);
    let held = plan.as_ref().map_or((None, false), |p| (p.permits, p.election));
    Ok((events, faults, heading, held))
}

/// What the checkers made of a history.
#[derive(Debug)]
pub struct Judged {
    /// The kinds of the anomalies found (empty: the history is valid).
    pub kinds: Vec<String>,
    /// The report in words (as in `report.txt`).
    pub report: String,
}

/// Runs the checkers and writes `report.txt`, `totals.json` and `timeline.svg` in `dir`.
/// (`held`: the permits of a semaphore, and whether the clients ran an election.)
fn judge(
    dir: &Path,
    title: &str,
    events: &[Event],
    faults: &[Fault],
    (permits, election): (Option<u32>, bool),
) -> Result<Judged, String> {
    let ops = history::ops(events).map_err(|e| format!("the history does not pair: {e}"))?;
    let verdicts = report::judge(&ops, permits, election);
    let summary = report::summary(&ops, faults, &verdicts, permits);
    let totals =
        serde_json::to_string_pretty(&report::totals(&ops, faults, &verdicts, permits)).map_err(|e| e.to_string())?;
    let write = |name: &str, text: String| std::fs::write(dir.join(name), text).map_err(|e| format!("{name}: {e}"));
    let report = format!("{title}\n{summary}");
    write("report.txt", report.clone())?;
    write("totals.json", totals)?;
    write("timeline.svg", report::timeline(title, &ops, faults, &verdicts, None))?;
    let kinds = verdicts.iter().flat_map(|(_, v)| v.anomalies.iter().map(|a| a.kind.to_owned())).collect();
    Ok(Judged { kinds, report })
}

/// The rows of docs/safety.md's table for the runs in `dirs` (their `plan.json` and `totals.json`).
pub fn table(dirs: &[PathBuf]) -> Result<String, String> {
    let mut text = String::from(
        "| store | holds | nemesis | clients | s | operations | granted | faults | overtaken | stale writes refused | unknown | grants | resource | set or capacity | progress |\n\
         | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- | --- |\n",
    );
    for dir in dirs {
        let read = |name: &str| {
            std::fs::read_to_string(dir.join(name)).map_err(|e| format!("{}: {e}", dir.join(name).display()))
        };
        let plan: Plan = serde_json::from_str(&read("plan.json")?).map_err(|e| format!("plan.json: {e}"))?;
        let totals: report::Totals =
            serde_json::from_str(&read("totals.json")?).map_err(|e| format!("totals.json: {e}"))?;
        let verdict = |checker: &str| match totals.anomalies.get(checker).filter(|k| !k.is_empty()) {
            None => "valid".to_owned(),
            Some(kinds) => kinds.iter().map(|(k, n)| format!("**{n} {k}**")).collect::<Vec<_>>().join(", "),
        };
        // The checkers of report::judge, by column.
        let (holds, grants, last) = match plan.permits {
            _ if plan.election => ("an election".to_owned(), "mutex", "set"),
            None => ("a lock".to_owned(), "mutex", "set"),
            Some(n) => (format!("{n} permits"), "grants", "capacity"),
        };
        let nemesis = if plan.fenced { plan.nemesis.clone() } else { format!("{} (resource unfenced)", plan.nemesis) };
        text.push_str(&format!(
            "| {}{} | {holds} | {nemesis} | {} × {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            plan.store,
            plan.min_replicas.map_or(String::new(), |n| format!(" (min_replicas={n})")),
            plan.fronts.join(", "),
            plan.per_front,
            plan.time.as_secs(),
            totals.operations,
            totals.granted,
            totals.faults,
            totals.overtaken,
            totals.refused,
            totals.unknown,
            verdict(grants),
            verdict("resource"),
            verdict(last),
            verdict("progress"),
        ));
    }
    Ok(text)
}

fn write_lines<T: serde::Serialize>(path: &Path, items: &[T]) -> Result<(), String> {
    let mut text = String::new();
    for item in items {
        text.push_str(&serde_json::to_string(item).map_err(|e| e.to_string())?);
        text.push('\n');
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}
