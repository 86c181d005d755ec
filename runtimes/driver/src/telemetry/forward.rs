//! [`Forward`]: the sink every front end with a host of its own installs (Python, Node, the
//! JVM): it copies each measurement and span into a bounded queue, and one thread of the
//! process hands them in batches to the binding's `deliver`, which converts them to its host's
//! API (one interpreter lock taken per batch, never on the driver's threads).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Mutex, PoisonError};

use super::{Instrument, Measurement, SpanRecord, Telemetry, Value};

/// The most records waiting for the delivering thread; past it they are dropped (and counted):
/// a host that stalls must not grow the process without bound.
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
    queue: Mutex<Option<(u32, SyncSender<Record>)>>,
    deliver: fn(&[Record]),
    dropped: AtomicU64,
}

impl Forward {
    /// A sink calling `deliver` with each batch (on its own thread, started at the first record,
    /// and again in a forked child).
    pub fn new(deliver: fn(&[Record])) -> Self {
        Self { queue: Mutex::new(None), deliver, dropped: AtomicU64::new(0) }
    }

    /// Records dropped because the queue was full (the host did not keep up).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    fn send(&self, record: Record) {
        let pid = std::process::id();
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if queue.as_ref().is_none_or(|(owner, _)| *owner != pid) {
            let (sender, receiver) = sync_channel::<Record>(QUEUE);
            let deliver = self.deliver;
            let started =
                std::thread::Builder::new().name("tenure-telemetry".into()).spawn(move || run(&receiver, deliver));
            if started.is_err() {
                // No thread, no telemetry: measuring must never fail the caller.
                return;
            }
            *queue = Some((pid, sender));
        }
        if let Some((_, sender)) = queue.as_ref()
            && let Err(TrySendError::Full(_)) = sender.try_send(record)
        {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The delivering thread: waits for a record, takes what else is queued (up to a batch), hands
/// them over; ends when the sink is gone.
fn run(receiver: &Receiver<Record>, deliver: fn(&[Record])) {
    while let Ok(first) = receiver.recv() {
        let mut batch = vec![first];
        batch.extend(receiver.try_iter().take(BATCH - 1));
        deliver(&batch);
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
