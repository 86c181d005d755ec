//! [`Forward`]: the sink every front end with a host of its own installs (Python, Node, the JVM):
//! it copies each measurement and span into a bounded buffer, and one thread of the process hands
//! them in batches to `deliver`, which converts them to its host's API (one interpreter lock
//! taken per batch, never on the driver's threads).
//!
//! A record costs its caller a lock of an uncontended mutex and a push: the delivering thread is
//! woken by the first record after a delivery (and when a batch is full), then collects for
//! [`COLLECT`] before it delivers, so a busy process wakes it a hundred times a second at most
//! and an idle one never. A sink dropped with records waiting delivers them, then its thread ends.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::{Instrument, Measurement, SpanRecord, Telemetry, Value};

/// The most records waiting for the delivering thread; past it they are dropped (and counted):
/// a host that stalls must not grow the process without bound.
pub const QUEUE: usize = 65_536;

/// Records that wake the delivering thread before [`COLLECT`] has passed.
const BATCH: usize = 1_024;

/// How long the delivering thread collects after the first record before it delivers.
const COLLECT: Duration = Duration::from_millis(10);

/// A measurement or a span, owned, for a binding's thread.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Record {
    /// A measurement.
    Measurement {
        /// What is measured (name, kind, unit, description, boundaries).
        instrument: &'static Instrument,
        /// The value.
        value: f64,
        /// Its attributes.
        attributes: Vec<(&'static str, Value)>,
    },
    /// A finished span.
    Span(SpanRecord),
}

/// A sink that hands records in batches to `deliver`, on a thread of its own.
pub struct Forward {
    shared: Arc<Shared>,
}

/// What a [`Forward`] hands its batches to.
type Deliver = Box<dyn Fn(&[Record]) + Send + Sync>;

struct Shared {
    state: Mutex<State>,
    /// Wakes the delivering thread: a first record, or a full batch.
    wake: Condvar,
    deliver: Deliver,
    dropped: AtomicU64,
}

#[derive(Default)]
struct State {
    buffer: Vec<Record>,
    /// The process whose thread delivers (a forked child starts one of its own).
    owner: Option<u32>,
    /// The sink was dropped: deliver what is left, then end.
    closed: bool,
}

/// How often (in records) a full buffer checks that this process's thread delivers it: a child
/// forked while its parent's buffer held records finds out within this many.
const FORK_CHECK: usize = 64;

impl Forward {
    /// A sink calling `deliver` with each batch (on its own thread, started at the first record,
    /// and again in a forked child).
    pub fn new(deliver: impl Fn(&[Record]) + Send + Sync + 'static) -> Self {
        let shared = Shared {
            state: Mutex::default(),
            wake: Condvar::new(),
            deliver: Box::new(deliver),
            dropped: AtomicU64::new(0),
        };
        Self { shared: Arc::new(shared) }
    }

    /// Records dropped: the buffer was full (the host did not keep up), or no thread could
    /// deliver.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    fn send(&self, record: Record) {
        let shared = &self.shared;
        let mut state = shared.lock();
        if state.buffer.len().is_multiple_of(FORK_CHECK) {
            let pid = std::process::id();
            if state.owner != Some(pid) {
                // This process has no delivering thread yet (a forked child's buffer is its
                // parent's, which the parent delivers).
                state.buffer.clear();
                let delivering = Arc::clone(shared);
                let thread = std::thread::Builder::new().name("tenure-telemetry".into());
                if thread.spawn(move || run(&delivering)).is_err() {
                    // No thread, no telemetry: measuring must never fail the caller.
                    drop(state);
                    shared.dropped.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                state.owner = Some(pid);
            }
        }
        if state.buffer.len() >= QUEUE {
            drop(state);
            shared.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let first = state.buffer.is_empty();
        state.buffer.push(record);
        let full = state.buffer.len() == BATCH;
        drop(state);
        if first || full {
            shared.wake.notify_one();
        }
    }
}

impl Drop for Forward {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.wake.notify_one();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The delivering thread: waits for a first record, collects for [`COLLECT`] (or until a batch is
/// full), hands over at most [`BATCH`] records at a time; ends once the sink is dropped and
/// nothing is left.
fn run(shared: &Shared) {
    loop {
        let mut state = shared.lock();
        while state.buffer.is_empty() {
            if state.closed {
                return;
            }
            state = shared.wake.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
        state = shared
            .wake
            .wait_timeout_while(state, COLLECT, |s| s.buffer.len() < BATCH && !s.closed)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
        let take = state.buffer.len().min(BATCH);
        let batch: Vec<Record> = state.buffer.drain(..take).collect();
        drop(state);
        // A host that panics loses that batch, not the thread.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (shared.deliver)(&batch)));
    }
}

impl Telemetry for Forward {
    fn record(&self, m: &Measurement<'_>) {
        let attributes = m.attributes.to_vec();
        self.send(Record::Measurement { instrument: m.instrument, value: m.value, attributes });
    }

    fn span(&self, span: &SpanRecord) {
        self.send(Record::Span(span.clone()));
    }
}

impl std::fmt::Debug for Forward {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Forward").field("dropped", &self.dropped()).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Instant;

    use super::*;

    fn measurement() -> Measurement<'static> {
        Measurement { instrument: super::super::INSTRUMENTS[0], value: 1.0, attributes: &[] }
    }

    #[test]
    fn records_reach_deliver_in_batches_on_one_thread() {
        let (tell, told) = mpsc::channel::<(usize, String)>();
        let tell = Mutex::new(tell);
        let forward = Forward::new(move |batch: &[Record]| {
            let thread = std::thread::current().name().unwrap_or_default().to_owned();
            let _ = tell.lock().unwrap_or_else(PoisonError::into_inner).send((batch.len(), thread));
        });
        for _ in 0..3_000 {
            forward.record(&measurement());
        }
        let (mut delivered, mut batches) = (0, 0);
        let deadline = Instant::now() + Duration::from_secs(30);
        while delivered < 3_000 {
            let (len, thread) = told.recv_timeout(deadline - Instant::now()).expect("every record delivered");
            assert_eq!(thread, "tenure-telemetry");
            assert!(len <= BATCH);
            delivered += len;
            batches += 1;
        }
        assert_eq!(delivered, 3_000);
        assert!(batches < 3_000, "one record a batch: nothing was batched");
        assert_eq!(forward.dropped(), 0);
    }

    #[test]
    fn a_host_that_stalls_loses_records_past_the_bound_and_never_blocks_the_caller() {
        let (release, stalled) = mpsc::channel::<()>();
        let stalled = Mutex::new(stalled);
        let forward = Forward::new(move |_: &[Record]| {
            let _ = stalled.lock().unwrap_or_else(PoisonError::into_inner).recv();
        });
        // The first batch stalls the delivering thread; the buffer then fills to its bound.
        forward.record(&measurement());
        let deadline = Instant::now() + Duration::from_secs(30);
        while forward.shared.lock().buffer.len() == 1 {
            assert!(Instant::now() < deadline, "the delivering thread never took the first record");
            std::thread::yield_now();
        }
        for _ in 0..QUEUE + 10 {
            forward.record(&measurement());
        }
        assert_eq!(forward.dropped(), 10);
        drop(release);
    }

    #[test]
    fn records_waiting_when_the_sink_is_dropped_are_delivered() {
        let (tell, told) = mpsc::channel::<usize>();
        let tell = Mutex::new(tell);
        let forward = Forward::new(move |batch: &[Record]| {
            let _ = tell.lock().unwrap_or_else(PoisonError::into_inner).send(batch.len());
        });
        for _ in 0..10 {
            forward.record(&measurement());
        }
        drop(forward);
        let mut delivered = 0;
        while delivered < 10 {
            delivered += told.recv_timeout(Duration::from_secs(30)).expect("the waiting records delivered");
        }
        assert_eq!(delivered, 10);
    }
}
