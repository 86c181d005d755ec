//! The harness's record of a run, and the fenced resource the clients write to.
//!
//! Every event is stamped with the harness's monotonic time when it reaches the harness (a client
//! whose clock is faked cannot skew the order). The resource is Kleppmann's storage service: a
//! set per lock name that a holder reads and writes back with its element added, under its
//! fencing token; it refuses a write under a token lower than one it saw (in a read or a write). The record and the resource
//! share one lock, so what the resource accepted and when it did are one story.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::history::{Event, F, Kind};

/// Sends `signal` to each of `pids`.
pub(crate) fn signal(pids: &[i32], signal: Signal) {
    for &pid in pids {
        let _ = kill(Pid::from_raw(pid), signal);
    }
}

/// A fault the nemesis injected, from `start` to `end` (harness nanoseconds).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct Fault {
    pub(crate) what: String,
    pub(crate) start: u64,
    pub(crate) end: u64,
}

/// The events of a run, the faults, and the fenced resource.
pub(crate) struct Recorder {
    start: Instant,
    /// Whether the resource checks fencing tokens (off only to show what fencing prevents).
    fenced: bool,
    /// The permits of the semaphore the clients hold (1: a lock).
    permits: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    events: Vec<Event>,
    /// Each process's invocation not yet completed.
    open: HashMap<u32, (F, String)>,
    sets: HashMap<String, Slot>,
    next_value: u64,
    faults: Vec<Fault>,
    /// The OS processes of each client process (a command-line client's lock and section).
    pids: HashMap<u32, Vec<i32>>,
    /// How many connections each process has open (see `serve`).
    connections: HashMap<u32, usize>,
    /// Set by the pause nemesis: the next process to read is stopped before it gets its answer,
    /// and told here.
    pause_next_reader: Option<std::sync::mpsc::Sender<(u32, Vec<i32>)>>,
    /// What went wrong in the harness itself (a client breaking the protocol): the run fails.
    problems: Vec<String>,
}

/// One name's set and the highest fencing token the resource saw for it; for a semaphore, every
/// token it saw and the holders that wrote.
#[derive(Default)]
struct Slot {
    highest: Option<u64>,
    values: Vec<u64>,
    seen: std::collections::BTreeSet<u64>,
    entered: std::collections::HashSet<(u32, u64)>,
}

impl Recorder {
    /// The record of a run whose clients hold a lock (`permits` 1) or a semaphore's permits.
    pub(crate) fn new(fenced: bool, permits: usize) -> Arc<Self> {
        Arc::new(Self { start: Instant::now(), fenced, permits: permits.max(1), inner: Mutex::default() })
    }

    /// Nanoseconds since the run began.
    pub(crate) fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records the invocation of `f` on `name` by `process`.
    pub(crate) fn invoke(&self, process: u32, f: F, name: &str) -> Result<(), String> {
        let mut inner = self.lock();
        let time = self.now();
        inner.invoke(process, f, name, time, None, None)
    }

    /// Completes `process`'s open invocation as `kind`, with the fencing token granted if any.
    pub(crate) fn complete(&self, process: u32, kind: Kind, fence: Option<u64>) -> Result<F, String> {
        let mut inner = self.lock();
        let time = self.now();
        inner.complete(process, kind, fence, None, time)
    }

    /// The operation `process` has open, if any.
    pub(crate) fn open(&self, process: u32) -> Option<F> {
        self.lock().open.get(&process).map(|(f, _)| *f)
    }

    /// The set of `name` as the resource holds it now, read by `process` under `fence`: a fenced
    /// resource then refuses writes under lower tokens (a holder's read-modify-write is one
    /// fenced operation: without this, a stale holder's read and a newer holder's write would
    /// interleave and lose the stale holder's element, fences notwithstanding). Not recorded.
    /// If the pause nemesis asked for it, `process` is stopped (SIGSTOP) before it gets the answer.
    pub(crate) fn read(&self, process: u32, name: &str, fence: u64) -> Vec<u64> {
        let mut inner = self.lock();
        inner.pause_if_asked(process);
        let slot = inner.sets.entry(name.to_owned()).or_default();
        if self.fenced {
            slot.highest = slot.highest.max(Some(fence));
        }
        slot.values.clone()
    }

    /// `process` writes to the resource a semaphore guards, under `fence`, as it enters or leaves:
    /// recorded as a `write` (invoked and completed at once), `ok` if accepted. A fenced resource
    /// refuses a token older than the oldest of the `permits` highest it has seen. A holder's
    /// first write stops it first if the pause nemesis asked (as a read of a lock's resource does).
    pub(crate) fn write(&self, process: u32, name: &str, fence: u64) -> Result<bool, String> {
        let mut inner = self.lock();
        if inner.sets.entry(name.to_owned()).or_default().entered.insert((process, fence)) {
            inner.pause_if_asked(process);
        }
        let time = self.now();
        inner.invoke(process, F::Write, name, time, Some(fence), None)?;
        let slot = inner.sets.entry(name.to_owned()).or_default();
        let oldest_kept = slot.seen.iter().rev().nth(self.permits - 1).copied();
        let accepted = !self.fenced || oldest_kept.is_none_or(|oldest| fence >= oldest);
        slot.seen.insert(fence);
        let kind = if accepted { Kind::Ok } else { Kind::Fail };
        inner.complete(process, kind, Some(fence), None, time)?;
        Ok(accepted)
    }

    /// Asks that the next process to read be stopped; it is named on the channel returned.
    pub(crate) fn pause_next_reader(&self) -> std::sync::mpsc::Receiver<(u32, Vec<i32>)> {
        let (tell, told) = std::sync::mpsc::channel();
        self.lock().pause_next_reader = Some(tell);
        told
    }

    /// Takes back a [`Recorder::pause_next_reader`] nobody answered.
    pub(crate) fn unpause_next_reader(&self) {
        self.lock().pause_next_reader = None;
    }

    /// `process` writes back `read` with a new element added, under `fence`: recorded as an `add`
    /// (invoked and completed at once), `ok` if the resource accepted it. Returns the element
    /// and whether it was accepted.
    pub(crate) fn add(&self, process: u32, name: &str, fence: u64, read: Vec<u64>) -> Result<(u64, bool), String> {
        let mut inner = self.lock();
        let time = self.now();
        inner.next_value += 1;
        let value = inner.next_value;
        inner.invoke(process, F::Add, name, time, Some(fence), Some(value))?;
        let slot = inner.sets.entry(name.to_owned()).or_default();
        let accepted = !self.fenced || slot.highest.is_none_or(|h| fence >= h);
        if accepted {
            slot.highest = slot.highest.max(Some(fence));
            slot.values = read;
            slot.values.push(value);
        }
        let kind = if accepted { Kind::Ok } else { Kind::Fail };
        inner.complete(process, kind, Some(fence), None, time)?;
        Ok((value, accepted))
    }

    /// The final read of every set, by `process` (the harness's own), once the clients stopped.
    pub(crate) fn final_reads(&self, process: u32) {
        let mut inner = self.lock();
        // (A semaphore's slot keeps no set.)
        let mut names: Vec<String> =
            inner.sets.iter().filter(|(_, s)| s.entered.is_empty()).map(|(n, _)| n.clone()).collect();
        names.sort();
        for name in names {
            let time = self.now();
            let values = inner.sets[&name].values.clone();
            let done = inner.invoke(process, F::Read, &name, time, None, None);
            let done = done.and_then(|()| inner.complete(process, Kind::Ok, None, Some(values), time));
            if let Err(problem) = done {
                inner.problems.push(problem);
            }
        }
    }

    /// Notes that `pid` runs (part of) client process `process`.
    pub(crate) fn register(&self, process: u32, pid: i32) {
        let mut inner = self.lock();
        let pids = inner.pids.entry(process).or_default();
        if !pids.contains(&pid) {
            pids.push(pid);
        }
    }

    /// Notes that a connection of `process` opened (`true`) or closed, every line of it handled.
    pub(crate) fn connected(&self, process: u32, open: bool) {
        let mut inner = self.lock();
        let count = inner.connections.entry(process).or_default();
        *count = if open { *count + 1 } else { count.saturating_sub(1) };
    }

    /// Waits (up to `within`) until every connection of `process` is closed and handled: an exited
    /// client's last lines are recorded before its exit is. Whether they were.
    pub(crate) fn settled(&self, process: u32, within: std::time::Duration) -> bool {
        let deadline = Instant::now() + within;
        loop {
            if self.lock().connections.get(&process).is_none_or(|&n| n == 0) {
                return true;
            }
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    /// Forgets the OS processes of `process` (they exited).
    pub(crate) fn unregister(&self, process: u32) {
        self.lock().pids.remove(&process);
    }

    /// Notes a fault injected from `start` until now.
    pub(crate) fn fault(&self, what: String, start: u64) {
        let end = self.now();
        self.lock().faults.push(Fault { what, start, end });
    }

    /// Notes a failure of the harness or of a client's protocol.
    pub(crate) fn problem(&self, problem: String) {
        self.lock().problems.push(problem);
    }

    pub(crate) fn events(&self) -> Vec<Event> {
        self.lock().events.clone()
    }

    pub(crate) fn faults(&self) -> Vec<Fault> {
        self.lock().faults.clone()
    }

    pub(crate) fn problems(&self) -> Vec<String> {
        self.lock().problems.clone()
    }
}

impl Inner {
    /// Stops `process` (every OS process of it) if the pause nemesis asked, and tells it so.
    fn pause_if_asked(&mut self, process: u32) {
        if let Some(tell) = self.pause_next_reader.take() {
            let pids = self.pids.get(&process).cloned().unwrap_or_default();
            signal(&pids, Signal::SIGSTOP);
            let _ = tell.send((process, pids));
        }
    }

    fn invoke(
        &mut self,
        process: u32,
        f: F,
        name: &str,
        time: u64,
        fence: Option<u64>,
        value: Option<u64>,
    ) -> Result<(), String> {
        if let Some((open, _)) = self.open.get(&process) {
            return Err(format!("process {process} invoked {f:?} while its {open:?} was open"));
        }
        self.open.insert(process, (f, name.to_owned()));
        let name = name.to_owned();
        self.events.push(Event { process, kind: Kind::Invoke, f, name, fence, value, values: None, time });
        Ok(())
    }

    fn complete(
        &mut self,
        process: u32,
        kind: Kind,
        fence: Option<u64>,
        values: Option<Vec<u64>>,
        time: u64,
    ) -> Result<F, String> {
        let Some((f, name)) = self.open.remove(&process) else {
            return Err(format!("process {process} completed an operation it had not invoked"));
        };
        self.events.push(Event { process, kind, f, name, fence, value: None, values, time });
        Ok(f)
    }
}
