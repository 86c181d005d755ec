//! The driver's `tracing` events, handed to Python's `logging` under the logger `tenure`:
//! leadership gained, released and stopped at INFO, a lost lock or leadership at WARNING, store
//! failures at ERROR (the election's are throttled by the driver to one per `error_interval`).
//! DEBUG events (every acquire and release) are forwarded only when `TENURE_LOG_DEBUG=1` was set
//! at import, so the common path never takes the interpreter lock to log.
//!
//! Events are queued to one thread of this module that calls `logging`: the driver emits them
//! while it holds a machine's lock, and a Python thread may be waiting for that lock while it
//! holds the interpreter lock, so the emitter must never wait for the interpreter itself.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use tracing::Level;

use tenure::log::{Forward, LogRecord};

use crate::bridge::with_python;

static DEBUG: AtomicBool = AtomicBool::new(false);

/// Installs the forwarding subscriber as the process's global one (unless another is set).
pub(crate) fn install(debug: bool) {
    DEBUG.store(debug, Ordering::Relaxed);
    let _ = tracing::subscriber::set_global_default(Forward::new(wanted, forward));
}

fn wanted(level: Level) -> bool {
    level <= Level::INFO || (level == Level::DEBUG && DEBUG.load(Ordering::Relaxed))
}

fn forward(record: &LogRecord) {
    let level = match record.level {
        Level::ERROR => 40,
        Level::WARN => 30,
        Level::INFO => 20,
        _ => 10,
    };
    send(level, record.line());
}

/// A record for `logging`: its level and its line.
type Line = (u8, String);

/// The queue to the logging thread of this process (made again in a forked child).
fn send(level: u8, line: String) {
    static QUEUE: Mutex<Option<(u32, Sender<Line>)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut queue = QUEUE.lock().unwrap_or_else(PoisonError::into_inner);
    if queue.as_ref().is_none_or(|(owner, _)| *owner != pid) {
        let (sender, receiver) = channel::<Line>();
        let started = std::thread::Builder::new().name("tenure-logging".into()).spawn(move || {
            while let Ok((level, line)) = receiver.recv() {
                with_python(|py| log(py, level, &line));
            }
        });
        if started.is_err() {
            return; // no thread, no forwarding: logging must never fail the caller
        }
        *queue = Some((pid, sender));
    }
    if let Some((_, sender)) = queue.as_ref() {
        let _ = sender.send((level, line));
    }
}

fn log(py: Python<'_>, level: u8, line: &str) {
    static LOGGER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let logger =
        LOGGER.get_or_try_init(py, || py.import("logging")?.call_method1("getLogger", ("tenure",)).map(Bound::unbind));
    if let Ok(logger) = logger {
        let _ = logger.call_method1(py, "log", (level, line));
    }
}
