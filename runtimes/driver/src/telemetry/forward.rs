//! [`Forward`]: the sink every front end with a host of its own installs (Python, Node, the
//! JVM): it copies each measurement and span into a bounded queue, and one thread of the
//! process hands them in batches to the binding's `deliver`, which converts them to its host's
//! API (one interpreter lock taken per batch, never on the driver's threads).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, PoisonError};

use super::{Instrument, Measurement, SpanRecord, Telemetry, Value};

/// The most records waiting for the delivering thread; past it they are dropped (and counted):
/// a host that stalls must not grow the process without bound (nothing is allocated ahead).
pub const QUEUE: usize = 65_536;

/// The most records handed over in one batch.
const BATCH: usize = 1_024;

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
#[derive(Debug)]
pub struct Forward {
    queue: Mutex<Option<(u32, Sender<Record>)>>,
    /// Records sent and not yet taken by the delivering thread (the queue's bound).
    queued: Arc<AtomicUsize>,
    deliver: fn(&[Record]),
    dropped: AtomicU64,
}

impl Forward {
    /// A sink calling `deliver` with each batch (on its own thread, started at the first record,
    /// and again in a forked child).
    pub fn new(deliver: fn(&[Record])) -> Self {
        Self { queue: Mutex::new(None), queued: Arc::default(), deliver, dropped: AtomicU64::new(0) }
    }

    /// Records dropped: the queue was full (the host did not keep up), or no thread could deliver.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    fn send(&self, record: Record) {
        if self.queued.load(Ordering::Relaxed) >= QUEUE {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let pid = std::process::id();
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if queue.as_ref().is_none_or(|(owner, _)| *owner != pid) {
            let (sender, receiver) = channel::<Record>();
            let (deliver, queued) = (self.deliver, self.queued.clone());
            queued.store(0, Ordering::Relaxed);
            let thread = std::thread::Builder::new().name("tenure-telemetry".into());
            if thread.spawn(move || run(&receiver, &queued, deliver)).is_err() {
                // No thread, no telemetry: measuring must never fail the caller.
                self.dropped.fetch_add(1, Ordering::Relaxed);
                return;
            }
            *queue = Some((pid, sender));
        }
        // Counted before it is sent, so the delivering thread never takes it off first.
        self.queued.fetch_add(1, Ordering::Relaxed);
        if queue.as_ref().is_none_or(|(_, sender)| sender.send(record).is_err()) {
            self.queued.fetch_sub(1, Ordering::Relaxed);
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The delivering thread: waits for a record, takes what else is queued (up to a batch), hands
/// them over; ends when the sink is gone.
fn run(receiver: &Receiver<Record>, queued: &AtomicUsize, deliver: fn(&[Record])) {
    while let Ok(first) = receiver.recv() {
        let mut batch = vec![first];
        batch.extend(receiver.try_iter().take(BATCH - 1));
        queued.fetch_sub(batch.len(), Ordering::Relaxed);
        // A host that panics loses that batch, not the thread.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| deliver(&batch)));
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
