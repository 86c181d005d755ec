//! The driver's log events for the JVM package, which hands them to `java.util.logging` (logger
//! `tenure`): leadership gained, released and stopped at `info`, a lost lock or leadership at
//! `warn`, store failures at `error`, every acquire and release at `debug` for a sink that asked
//! for them. Records reach the sink in order on a thread of their own, so that a slow handler
//! never stalls a renewal; nothing is recorded while no sink listens.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, Once, PoisonError, mpsc};

use tenure::log::{Forward, LogRecord};
use tracing::Level;

use crate::election::ListenerError;

/// One of an event's fields (`lock`, `election`, `fence`, `error`, …), as text.
#[derive(Debug, Clone, uniffi::Record)]
pub struct LogField {
    pub name: String,
    pub value: String,
}

/// Hears the driver's events: `level` is `error`, `warn`, `info` or `debug`; `line` is the
/// message and its fields on one line (`lock lost: lock=orders fence=3`).
#[uniffi::export(callback_interface)]
pub trait LogSink: Send + Sync {
    fn record(&self, level: String, message: String, fields: Vec<LogField>, line: String) -> Result<(), ListenerError>;
}

/// What the sink wants: 0 nothing (no sink), 1 `info` and above, 2 `debug` too.
static WANTED: AtomicU8 = AtomicU8::new(0);
static QUEUE: Mutex<Option<mpsc::Sender<LogRecord>>> = Mutex::new(None);

/// Hands the driver's events to `sink` from now on (in place of the sink before); `debug` adds
/// every acquire and release.
#[uniffi::export]
pub fn listen_logs(sink: Box<dyn LogSink>, debug: bool) {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Another global subscriber (none in a JVM) would keep it.
        let _ = tracing::subscriber::set_global_default(Forward::new(wanted, forward));
    });
    let (send, receive) = mpsc::channel::<LogRecord>();
    let delivering = std::thread::Builder::new().name("tenure-log".into()).spawn(move || {
        // Ends when the sender is replaced by a later sink's.
        for record in receive {
            let fields =
                record.fields.iter().map(|(name, value)| LogField { name: (*name).to_owned(), value: value.clone() });
            // A sink that throws loses that record only.
            let _ =
                sink.record(level(record.level).to_owned(), record.message.clone(), fields.collect(), record.line());
        }
    });
    if delivering.is_ok() {
        *QUEUE.lock().unwrap_or_else(PoisonError::into_inner) = Some(send);
        WANTED.store(if debug { 2 } else { 1 }, Ordering::Relaxed);
    }
}

fn level(level: Level) -> &'static str {
    match level {
        Level::ERROR => "error",
        Level::WARN => "warn",
        Level::INFO => "info",
        _ => "debug",
    }
}

fn wanted(level: Level) -> bool {
    WANTED.load(Ordering::Relaxed) >= if level > Level::INFO { 2 } else { 1 }
}

fn forward(record: &LogRecord) {
    if let Some(queue) = &*QUEUE.lock().unwrap_or_else(PoisonError::into_inner) {
        let _ = queue.send(record.clone());
    }
}
