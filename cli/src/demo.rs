//! `tenure demo`: worker processes on the store, and a timeline that shows mutual exclusion,
//! fencing tokens that only grow, and a leader failover after the leader is killed.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::Args;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};
use tenure_tokio::{Coordination, Tokio};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use crate::store::{self, StoreKind};
use crate::{DemoArgs, Failure, say};

const ROUNDS: u32 = 3;
const LEADER_LEASE: Duration = Duration::from_secs(1);

#[derive(Args, Debug)]
pub(crate) struct WorkerArgs {
    /// The run's name prefix.
    #[arg(long)]
    run: String,
    /// This worker's number.
    #[arg(long)]
    id: u8,
}

fn now_us() -> i64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since.as_micros()).unwrap_or(i64::MAX)
}

/// One event, one JSON line on stdout.
fn emit(id: u8, event: &str, fence: Option<u64>) {
    let line = json!({ "t_us": now_us(), "worker": id, "event": event, "fence": fence });
    #[allow(clippy::print_stdout)]
    {
        println!("{line}");
    }
}

/// A worker: takes part in the election, and takes the counter lock a few times.
pub(crate) async fn worker(backend: Option<&str>, args: WorkerArgs) -> Result<i32, Failure> {
    let store = store::open(backend).await?;
    let coordination = Coordination::new(Tokio::current()).source(&store);
    let failure = |e: tenure::Error| Failure::from_error(&e);
    let election = coordination
        .leader_election(&format!("{}-leader", args.run))
        .map_err(failure)?
        .lease_duration(LEADER_LEASE)
        .renew_deadline(Duration::from_millis(800))
        .backend_timeout(Duration::from_millis(500))
        .retry_interval(Duration::from_millis(100))
        .env_load(false)
        .build()
        .map_err(failure)?;
    election.start();
    let watcher = election.clone();
    let id = args.id;
    tokio::spawn(async move {
        loop {
            watcher.wait_for_leader().await;
            emit(id, "leading", None);
            watcher.wait_lose_leader().await;
            emit(id, "stepped-down", None);
        }
    });
    let lock = coordination
        .lock(&format!("{}-counter", args.run))
        .map_err(failure)?
        .lease_duration(Duration::from_secs(5))
        .retry_interval(Duration::from_millis(20))
        .env_load(false)
        .build()
        .map_err(failure)?;
    for round in 0..ROUNDS {
        let guard = lock.acquire().await.map_err(failure)?;
        emit(id, "acquired", Some(guard.fencing_token().get()));
        tokio::time::sleep(Duration::from_millis(60)).await;
        emit(id, "released", Some(guard.fencing_token().get()));
        guard.release().await.map_err(failure)?;
        tokio::time::sleep(Duration::from_millis(15 + 10 * u64::from(id) + 5 * u64::from(round))).await;
    }
    emit(id, "done", None);
    // Stay in the election until told to stop.
    let mut interrupts = crate::hold::signals()?;
    interrupts.next().await;
    election.stop().await;
    store::close(&store).await;
    Ok(0)
}

struct Event {
    t_us: i64,
    worker: u8,
    event: String,
    fence: Option<u64>,
}

fn parse(line: &str) -> Option<Event> {
    let v: Value = serde_json::from_str(line).ok()?;
    Some(Event {
        t_us: v.get("t_us")?.as_i64()?,
        worker: u8::try_from(v.get("worker")?.as_u64()?).ok()?,
        event: v.get("event")?.as_str()?.to_owned(),
        fence: v.get("fence").and_then(Value::as_u64),
    })
}

/// The demo: start the workers, print what they do, kill the leader, check the outcome.
#[allow(clippy::print_stdout)]
pub(crate) async fn run(backend: Option<&str>, args: DemoArgs) -> Result<i32, Failure> {
    let url = store::url(backend)?;
    if store::target(&url)?.kind() == StoreKind::Memory {
        return Err(Failure::usage(
            "the demo needs a store shared by processes; memory: is not (try sqlite:///tmp/demo.db)",
        ));
    }
    store::close(&store::open(Some(&url)).await?).await; // fail early, with the store's own message
    let run = format!("demo-{}", std::process::id());
    let exe = std::env::current_exe().map_err(|e| Failure::new(1, format!("cannot find the tenure binary: {e}")))?;
    println!("tenure demo: {} worker processes on {}", args.workers, tenure_open::shown_url(&url));
    println!(
        "  lock {run}-counter: each worker takes it {ROUNDS} times; election {run}-leader: lease {}s",
        LEADER_LEASE.as_secs_f64()
    );
    println!();
    let start = now_us();
    let (tx, mut rx) = mpsc::unbounded_channel::<Event>();
    let mut children: BTreeMap<u8, Child> = BTreeMap::new();
    for id in 0..args.workers {
        let mut child = Command::new(&exe)
            .args(["--backend", &url, "demo-worker", "--run", &run, "--id", &id.to_string()])
            .stdout(Stdio::piped())
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| Failure::new(1, format!("cannot start a worker: {e}")))?;
        if let Some(stdout) = child.stdout.take() {
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stdout).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if let Some(event) = parse(&line) {
                        let _ = tx.send(event);
                    }
                }
            });
        }
        children.insert(id, child);
    }
    drop(tx);

    let at = |t_us: i64| {
        #[allow(clippy::cast_precision_loss)]
        let secs = (t_us - start) as f64 / 1e6;
        secs
    };
    let mut sections: Vec<(i64, i64, u64, u8)> = Vec::new();
    let mut open: BTreeMap<u8, (i64, u64)> = BTreeMap::new();
    let mut done = 0;
    let mut leader: Option<u8> = None;
    let mut killed: Option<(u8, i64)> = None;
    let mut failover: Option<(u8, u8, f64)> = None;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while failover.is_none() {
        let event = tokio::select! {
            event = rx.recv() => event,
            () = tokio::time::sleep_until(deadline) => None,
        };
        let Some(e) = event else { break };
        let who = format!("w{}", e.worker);
        match e.event.as_str() {
            "acquired" => {
                let fence = e.fence.unwrap_or_default();
                println!("  {:>7.3}s  {who:<4}  acquired the lock, fencing token {fence}", at(e.t_us));
                open.insert(e.worker, (e.t_us, fence));
            }
            "released" => {
                println!("  {:>7.3}s  {who:<4}  released it", at(e.t_us));
                if let Some((from, fence)) = open.remove(&e.worker) {
                    sections.push((from, e.t_us, fence, e.worker));
                }
            }
            "leading" => {
                println!("  {:>7.3}s  {who:<4}  leads the election", at(e.t_us));
                if let Some((dead, t_kill)) = killed {
                    failover = Some((dead, e.worker, at(e.t_us) - at(t_kill)));
                }
                leader = Some(e.worker);
            }
            "stepped-down" => println!("  {:>7.3}s  {who:<4}  stepped down", at(e.t_us)),
            "done" => done += 1,
            _ => {}
        }
        if killed.is_none()
            && done == args.workers
            && let Some(victim) = leader
        {
            if let Some(child) = children.get_mut(&victim) {
                if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
                    let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
                }
                let _ = child.wait().await;
            }
            let t = now_us();
            println!("  {:>7.3}s  demo  killed w{victim}, the leader, with SIGKILL (no clean release)", at(t));
            killed = Some((victim, t));
        }
    }
    for child in children.values_mut() {
        if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
    }
    for child in children.values_mut() {
        let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
    }

    sections.sort_by_key(|s| s.0);
    let overlapping = sections.windows(2).filter(|w| w[1].0 < w[0].1).count();
    let fences: Vec<u64> = sections.iter().map(|s| s.2).collect();
    let increasing = fences.windows(2).all(|w| w[1] > w[0]);
    let expected = usize::from(args.workers) * ROUNDS as usize;
    println!();
    let mark = |ok: bool| if ok { "ok  " } else { "FAIL" };
    let exclusion = overlapping == 0 && sections.len() == expected;
    println!("  {} mutual exclusion: {} critical sections, {overlapping} overlapping", mark(exclusion), sections.len());
    let list = fences.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
    println!("  {} fencing tokens strictly increase: {list}", mark(increasing && !fences.is_empty()));
    match failover {
        Some((from, to, secs)) => println!(
            "  {} leader failover: w{from} killed, w{to} leads {secs:.2}s later (the lease was {}s)",
            mark(true),
            LEADER_LEASE.as_secs_f64()
        ),
        None => println!("  {} leader failover: no new leader within the demo's 30 s", mark(false)),
    }
    let all = exclusion && increasing && failover.is_some();
    if !all {
        say!("the demo found a problem (above)");
    }
    Ok(if all { 0 } else { 1 })
}
