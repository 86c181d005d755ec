//! What a run found: every checker's verdict, the totals, and a timeline picture (one row per
//! process, each operation a bar, faults shaded) in SVG.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::history::{F, Op, Outcome};
use crate::record::Fault;
use crate::{Verdict, mutex, progress, semaphore, set};

/// The verdict of every checker on `ops` of a lock, of a semaphore of `permits`, or of an
/// `election`'s terms, by checker name; the last is every kind's progress.
pub(crate) fn judge(ops: &[Op], permits: Option<u32>, election: bool) -> Vec<(&'static str, Verdict)> {
    let mut verdicts = match permits {
        None if election => {
            vec![("mutex", mutex::check_terms(ops)), ("resource", mutex::check_resource(ops)), ("set", set::check(ops))]
        }
        None => vec![("mutex", mutex::check(ops)), ("resource", mutex::check_resource(ops)), ("set", set::check(ops))],
        Some(n) => vec![
            ("grants", mutex::check(ops)),
            ("resource", mutex::owners(ops)),
            ("capacity", semaphore::check(ops, n as usize)),
        ],
    };
    verdicts.push(("progress", progress::check(ops)));
    verdicts
}

/// What a run amounts to, in numbers (`totals.json`; `tenure-jepsen table` makes the rows of
/// docs/safety.md from them).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Totals {
    pub(crate) operations: usize,
    /// Acquires granted.
    pub(crate) granted: usize,
    /// Writes the resource refused (stale tokens).
    pub(crate) refused: usize,
    /// Operations of unknown outcome.
    pub(crate) unknown: usize,
    pub(crate) faults: usize,
    pub(crate) overtaken: usize,
    /// Per checker, the anomalies found by kind.
    pub(crate) anomalies: BTreeMap<String, BTreeMap<String, usize>>,
}

/// The totals of a judged history.
pub(crate) fn totals(ops: &[Op], faults: &[Fault], verdicts: &[(&str, Verdict)], permits: Option<u32>) -> Totals {
    let count = |f: F, outcome: Outcome| ops.iter().filter(|op| op.f == f && op.outcome == outcome).count();
    let mut anomalies: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for (checker, verdict) in verdicts {
        let kinds = anomalies.entry((*checker).to_owned()).or_default();
        for a in &verdict.anomalies {
            *kinds.entry(a.kind.to_owned()).or_default() += 1;
        }
    }
    Totals {
        operations: ops.len(),
        granted: count(F::Acquire, Outcome::Ok),
        refused: count(F::Add, Outcome::Fail) + count(F::Write, Outcome::Fail),
        unknown: ops.iter().filter(|op| op.outcome == Outcome::Info).count(),
        faults: faults.len(),
        // (N holders of a semaphore are inside at once by right.)
        overtaken: if permits.is_some() { 0 } else { overlaps(ops) },
        anomalies,
    }
}

/// The report in words: totals, then each checker's verdict with its first anomalies.
pub(crate) fn summary(ops: &[Op], faults: &[Fault], verdicts: &[(&str, Verdict)], permits: Option<u32>) -> String {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for op in ops {
        *counts.entry(format!("{:?} {:?}", op.f, op.outcome).to_lowercase()).or_default() += 1;
    }
    let mut text = format!("operations: {} ({})\n", ops.len(), join(&counts));
    let _ = writeln!(text, "faults: {}", faults.len());
    let overlaps = if permits.is_some() { 0 } else { overlaps(ops) };
    if overlaps > 0 {
        let _ = writeln!(
            text,
            "holds overtaken by another grant: {overlaps} (a lease ended under its holder; \
             what keeps the data safe then is the fenced resource)"
        );
    }
    for (name, verdict) in verdicts {
        let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
        for a in &verdict.anomalies {
            *kinds.entry(a.kind.to_owned()).or_default() += 1;
        }
        let state = if verdict.is_valid() { "valid".to_owned() } else { format!("INVALID ({})", join(&kinds)) };
        let _ = writeln!(text, "checker {name}: {} operations judged, {state}", verdict.checked);
        for a in verdict.anomalies.iter().take(3) {
            let at = a.ops.iter().filter_map(|&i| ops.get(i)).map(|op| op.invoked).max().unwrap_or_default();
            let _ = writeln!(text, "  {} at {:.3} s: {}", a.kind, seconds(at), a.message);
        }
    }
    text
}

/// How many holds saw another process granted the lock before they began their release (leases
/// are not exclusive when a holder is paused or its clock is wrong).
fn overlaps(ops: &[Op]) -> usize {
    let mut held: Vec<(u32, u64, u64)> = Vec::new(); // process, granted at, release invoked at
    let mut open: BTreeMap<u32, u64> = BTreeMap::new();
    for op in ops {
        match (op.f, op.outcome, op.completed) {
            (F::Acquire, Outcome::Ok, Some(at)) => {
                open.insert(op.process, at);
            }
            (F::Release, ..) => {
                if let Some(at) = open.remove(&op.process) {
                    held.push((op.process, at, op.invoked));
                }
            }
            _ => {}
        }
    }
    held.iter().filter(|(p, from, to)| held.iter().any(|(q, at, _)| q != p && from < at && at < to)).count()
}

fn join(counts: &BTreeMap<String, usize>) -> String {
    counts.iter().map(|(k, n)| format!("{n} {k}")).collect::<Vec<_>>().join(", ")
}

fn seconds(nanos: u64) -> f64 {
    nanos as f64 / 1e9
}

/// The timeline: a row per process, a bar per operation (acquire grey, a granted lease green
/// until its release, an accepted add dark green, a refused one red, unknown outcomes orange),
/// faults shaded behind, anomalies marked in red; the whole run, or the `window` of it (from, to,
/// in nanoseconds of the run).
pub(crate) fn timeline(
    title: &str,
    ops: &[Op],
    faults: &[Fault],
    verdicts: &[(&str, Verdict)],
    window: Option<(u64, u64)>,
) -> String {
    let end = ops.iter().filter_map(|op| op.completed.or(Some(op.invoked))).max().unwrap_or(1).max(1);
    let (from, to) = window.map_or((0, end), |(from, to)| (from.min(end), to.min(end)));
    let span = to.saturating_sub(from).max(1);
    let shown = |a: u64, b: u64| b >= from && a <= to;
    let mut rows: Vec<u32> = ops.iter().map(|op| op.process).collect();
    rows.sort_unstable();
    rows.dedup();
    let (left, width, row) = (90.0, 1400.0, 18.0);
    let height = 40.0 + row * rows.len() as f64 + 30.0;
    let x = |t: u64| left + width * ((t.clamp(from, to) - from) as f64 / span as f64);
    let y = |p: u32| 30.0 + row * rows.iter().position(|&r| r == p).unwrap_or_default() as f64;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" font-family=\"monospace\" font-size=\"11\">\n",
        left + width + 20.0
    );
    let _ = writeln!(svg, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>");
    let _ = writeln!(svg, "<text x=\"4\" y=\"16\" font-size=\"13\">{}</text>", escape(title));
    for fault in faults.iter().filter(|f| shown(f.start, f.end)) {
        let (a, b) = (x(fault.start), x(fault.end).max(x(fault.start) + 1.0));
        let _ = writeln!(
            svg,
            "<rect x=\"{a:.1}\" y=\"24\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#ddd\"><title>{}</title></rect>",
            b - a,
            height - 50.0,
            escape(&fault.what)
        );
    }
    for &p in &rows {
        let _ = writeln!(svg, "<text x=\"4\" y=\"{:.1}\">{}</text>", y(p) + 12.0, process_label(p));
    }
    // An operation of unknown outcome is drawn until its process's next one.
    let mut next: Vec<u64> = vec![end; ops.len()];
    let mut later: BTreeMap<u32, u64> = BTreeMap::new();
    for (i, op) in ops.iter().enumerate().rev() {
        next[i] = later.get(&op.process).copied().unwrap_or(end);
        later.insert(op.process, op.invoked);
    }
    let mut granted: BTreeMap<u32, (u64, Option<u64>)> = BTreeMap::new();
    for (i, op) in ops.iter().enumerate() {
        let done = op.completed.unwrap_or(next[i]);
        let color = match (op.f, op.outcome) {
            (_, Outcome::Info) => "#f90",
            (F::Add, Outcome::Ok) => "#060",
            (F::Add, Outcome::Fail) => "#d00",
            (F::Release, _) => "#36c",
            _ => "#999",
        };
        if op.f == F::Acquire && op.outcome == Outcome::Ok {
            granted.insert(op.process, (done, op.fence));
        }
        if op.f == F::Release
            && let Some((since, fence)) = granted.remove(&op.process)
            && shown(since, op.invoked)
        {
            bar(&mut svg, x(since), x(op.invoked), y(op.process) + 4.0, 8.0, "#9d9", &held(fence));
        }
        if !shown(op.invoked, done) {
            continue;
        }
        let what = format!("{:?} {:?} fence {:?} value {:?}", op.f, op.outcome, op.fence, op.value);
        bar(&mut svg, x(op.invoked), x(done), y(op.process) + 2.0, 12.0, color, &what);
    }
    for (_, verdict) in verdicts {
        for anomaly in &verdict.anomalies {
            for op in anomaly
                .ops
                .iter()
                .filter_map(|&i| ops.get(i))
                .filter(|op| shown(op.invoked, op.completed.unwrap_or(end)))
            {
                let (a, b) = (x(op.invoked), x(op.completed.unwrap_or(end)));
                let _ = writeln!(
                    svg,
                    "<rect x=\"{a:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"16\" fill=\"none\" stroke=\"red\" stroke-width=\"2\"><title>{}</title></rect>",
                    y(op.process),
                    (b - a).max(2.0),
                    escape(&anomaly.message)
                );
            }
        }
    }
    let bottom = height - 8.0;
    let _ = writeln!(svg, "<text x=\"{left}\" y=\"{bottom:.1}\">{:.1} s</text>", seconds(from));
    let _ = writeln!(
        svg,
        "<text x=\"{:.1}\" y=\"{bottom:.1}\" text-anchor=\"end\">{:.1} s</text>\n</svg>",
        left + width,
        seconds(to)
    );
    svg
}

fn held(fence: Option<u64>) -> String {
    format!("held, fence {}", fence.map_or("?".into(), |f| f.to_string()))
}

fn process_label(p: u32) -> String {
    if p == 0 { "harness".into() } else { format!("process {p}") }
}

fn bar(svg: &mut String, a: f64, b: f64, y: f64, h: f64, color: &str, title: &str) {
    let _ = writeln!(
        svg,
        "<rect x=\"{a:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{h}\" fill=\"{color}\"><title>{}</title></rect>",
        (b - a).max(1.0),
        escape(title)
    );
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}
