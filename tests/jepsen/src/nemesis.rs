//! The faults of a run, on a schedule: a quiet spell, a fault, its healing, again, until the run
//! ends. Each fault is noted with its start and end for the checkers' report and the timeline.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::partition::Cut;
use crate::record::{Recorder, signal};
use crate::stores::Store;

/// The nemeses: none; a holder paused (SIGSTOP) between its read and its write, past its lease;
/// a client cut from the store (`partition`); a client's clock jumped within or
/// beyond the lease; and the store faults of [`Store::inject`].
pub(crate) const NEMESES: &[&str] = &[
    "none",
    "pause",
    "clock",
    "partition",
    "kill",
    "freeze",
    "failover",
    "lag",
    "leader",
    "quorum",
    "isolate",
    "bridge",
];

/// When faults come: `quiet` between them, each lasting `length` (a pause: `length` past the lease).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Schedule {
    pub(crate) quiet: Duration,
    pub(crate) length: Duration,
    pub(crate) lease: Duration,
    pub(crate) clients: usize,
}

/// Whether `nemesis` can run on `store`.
pub(crate) fn check(nemesis: &str, store: &Store) -> Result<(), String> {
    match nemesis {
        "none" | "pause" | "clock" => Ok(()),
        "partition" if store.ports().is_empty() => {
            Err("the store has no network to cut (it can: none, pause, clock)".into())
        }
        "partition" => Ok(()),
        fault if store.faults().contains(&fault) => Ok(()),
        fault if NEMESES.contains(&fault) => Err(format!(
            "the store cannot suffer {fault:?} (it can: none, pause, clock, {})",
            store.faults().join(", ")
        )),
        other => Err(format!("no nemesis {other:?} (they are: {})", NEMESES.join(", "))),
    }
}

/// What the nemesis acts on besides the store: the folder of the clients' faked clocks, the
/// cgroups that cut clients from the store.
#[derive(Debug, Default)]
pub(crate) struct Levers<'a> {
    pub(crate) clocks: Option<&'a Path>,
    pub(crate) cut: Option<&'a Cut>,
}

/// Injects `nemesis` on `schedule` until `stop`.
pub(crate) fn run(
    nemesis: &str,
    store: &mut Store,
    schedule: Schedule,
    levers: &Levers<'_>,
    recorder: &Recorder,
    stop: &AtomicBool,
) {
    if nemesis == "none" {
        return;
    }
    let mut turn = 0;
    loop {
        if nap(schedule.quiet, stop) {
            return;
        }
        let start = recorder.now();
        let done = match nemesis {
            "pause" => pause(schedule, recorder),
            "clock" => clock(schedule, turn, levers.clocks),
            "partition" => partition(schedule, turn, levers.cut, &store.ports()),
            fault => store.inject(fault, schedule.length, turn),
        };
        match done {
            Ok(what) => recorder.fault(format!("{nemesis}: {what}"), start),
            Err(problem) => recorder.problem(format!("nemesis {nemesis}: {problem}")),
        }
        turn += 1;
    }
}

/// Sleeps `length` unless `stop` is set meanwhile; whether it was.
fn nap(length: Duration, stop: &AtomicBool) -> bool {
    let end = Instant::now() + length;
    while Instant::now() < end {
        if stop.load(Ordering::SeqCst) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.load(Ordering::SeqCst)
}

/// Pauses a holder between its read of the resource and its write (the recorder stops the next
/// reader before it gets its answer: Kleppmann's paused client), past its lease; waits up to
/// `length` for a reader.
fn pause(schedule: Schedule, recorder: &Recorder) -> Result<String, String> {
    let told = recorder.pause_next_reader();
    let (process, pids) = match told.recv_timeout(schedule.length) {
        Ok(paused) => paused,
        Err(_) => {
            recorder.unpause_next_reader();
            // A reader may have been stopped meanwhile.
            match told.try_recv() {
                Ok(paused) => paused,
                Err(_) => return Ok("nobody read the resource to pause".into()),
            }
        }
    };
    let length = schedule.lease + schedule.length;
    std::thread::sleep(length);
    signal(&pids, Signal::SIGCONT);
    Ok(format!("process {process} SIGSTOP after its read, for {:.1} s", length.as_secs_f64()))
}

/// Cuts one client (in turn) from the store for `length`, then heals.
fn partition(schedule: Schedule, turn: usize, cut: Option<&Cut>, ports: &[u16]) -> Result<String, String> {
    let cut = cut.ok_or("the clients are in no cgroups to cut")?;
    let client = turn % schedule.clients.max(1);
    cut.cut(client, ports)?;
    std::thread::sleep(schedule.length);
    cut.heal()?;
    Ok(format!("client {client} cut from the store"))
}

/// Moves one client's clock (in turn) forward or back, within or beyond the lease, for `length`.
fn clock(schedule: Schedule, turn: usize, clocks: Option<&Path>) -> Result<String, String> {
    let clocks = clocks.ok_or("the clients' clocks are not faked")?;
    // Each turn the next offset, and a client chosen so that every client meets every offset
    // (the first: client 0, +3 leases).
    let client = (turn + turn / 4) % schedule.clients.max(1);
    let lease = schedule.lease.as_secs_f64();
    let offset = [3.0 * lease, -3.0 * lease, 0.5 * lease, -0.5 * lease][turn % 4];
    let file = clocks.join(format!("clock-{client}"));
    let write = |spec: String| std::fs::write(&file, spec).map_err(|e| format!("{}: {e}", file.display()));
    write(format!("{offset:+.3}\n"))?;
    std::thread::sleep(schedule.length);
    write("+0\n".into())?;
    Ok(format!("client {client} clock {offset:+.1} s"))
}
