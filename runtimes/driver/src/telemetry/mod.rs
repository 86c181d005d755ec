//! What the driver measures (DESIGN §6): metrics, spans and the events users act on, decided
//! here once and handed to one [`Telemetry`] sink that a front end installs: the OpenTelemetry
//! API in Rust (feature `opentelemetry`: `telemetry::opentelemetry::install`), Python's
//! `opentelemetry-api`, Node's `@opentelemetry/api`, a JVM listener. A sink converts; it decides
//! nothing: every instrument, its unit, its bucket boundaries, when it is recorded and with which
//! attributes are the driver's ([`INSTRUMENTS`]).
//!
//! With no sink installed, a hook is a relaxed atomic load (and a holder's meter an empty `Mutex`
//! and `OnceLock`: 3.2 % more instructions a memory cycle, docs/benchmarks.md). The state gauges (holders,
//! waiters, the last fence, leaders) are atomics the driver keeps; a sink reads them when its host
//! collects ([`observe`]), so a cycle records four measurements, not eight.
//!
//! ```
//! use std::sync::Arc;
//! use tenure::telemetry::{self, Measurement, Telemetry};
//!
//! #[derive(Debug)]
//! struct Print;
//! impl Telemetry for Print {
//!     fn record(&self, m: &Measurement<'_>) {
//!         let _ = (m.instrument.name, m.value, m.attributes);
//!     }
//!     // Holders, waiters, fences and leaders are read when collecting: `telemetry::observe`.
//! }
//! telemetry::install(Arc::new(Print));
//! # telemetry::uninstall();
//! ```
//!
//! **Names as attributes.** Every measurement about a lock carries its `name`. Each process
//! reports at most [`name_limit`] distinct names (default 1,000; `TENURE_METRICS_MAX_NAMES` or
//! [`set_name_limit`]); later names are reported as [`OTHER_NAME`], so per-job or per-user lock
//! names cannot grow a metrics backend without bound. A limit of 0 reports every name as
//! `_other`.

mod calls;
mod command;
mod forward;
mod gauges;
mod instruments;
mod meter;
mod names;
#[cfg(feature = "opentelemetry")]
pub mod opentelemetry;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::SystemTime;

pub(crate) use calls::{answered_now, timed};
pub(crate) use command::Completion;
pub use forward::{Forward, QUEUE, Record};
pub use gauges::{observe, observe_named};
pub use instruments::{
    ACQUIRE_DURATION, FENCE, HOLD_DURATION, HOLDERS, INSTRUMENTS, Instrument, InstrumentKind, LEADER, LEADER_CHANGES,
    LOSSES, RENEWALS, STORE_CALL_DURATION, VALIDITY_WARNINGS, WAIT_DURATION, WAITERS,
};
pub(crate) use meter::{Holding, Meter};
pub use names::{OTHER_NAME, name_limit, set_name_limit};

/// One measurement: add `value` to a counter, record it in a histogram, or set a gauge to it,
/// as [`Instrument::kind`] says.
#[derive(Debug, Clone, Copy)]
pub struct Measurement<'a> {
    /// What is measured.
    pub instrument: &'static Instrument,
    /// The value, in the instrument's unit (seconds for durations).
    pub value: f64,
    /// Its attributes: `primitive` and `name`, then `outcome` or `cause`; a store call's are
    /// `operation` and `outcome`.
    pub attributes: &'a [(&'static str, Value)],
}

/// An attribute value.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Value {
    /// A text known when the driver was built (`lock`, `acquired`).
    Static(&'static str),
    /// A text (a lock name, an error).
    Str(Arc<str>),
    /// A whole number (a fencing token, milliseconds).
    Int(i64),
}

impl std::fmt::Display for Value {
    /// The value as text (a binding whose host takes text attributes).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Static(text) => f.write_str(text),
            Self::Str(text) => f.write_str(text),
            Self::Int(number) => write!(f, "{number}"),
        }
    }
}

/// `at` in nanoseconds since the Unix epoch (0 before it), as hosts take a span's times.
pub fn unix_nanos(at: SystemTime) -> u64 {
    let since = at.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
}

/// Something that happened during a span, at `at`.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanEvent {
    /// `tenure.renewal_failed`, `tenure.validity_low` or `tenure.lost`.
    pub name: &'static str,
    /// When.
    pub at: SystemTime,
    /// What about it (the error, the validity left, the cause).
    pub attributes: Vec<(&'static str, Value)>,
}

/// A finished span: `tenure.acquire`, `tenure.hold` (a lease, from its grant to its end) or
/// `tenure.release`. Its attributes are the lock's `name` and `primitive`, the `fence`, and the
/// `outcome` (`cause` for a hold): never the ownership token.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanRecord {
    /// The span's name.
    pub name: &'static str,
    /// When it began.
    pub start: SystemTime,
    /// When it ended.
    pub end: SystemTime,
    /// Its attributes.
    pub attributes: Vec<(&'static str, Value)>,
    /// What happened during it.
    pub events: Vec<SpanEvent>,
    /// The error that ended it, if it failed (its message carries no token or password).
    pub error: Option<String>,
}

/// Where the driver's measurements and spans go. Called on the driver's threads, often with a
/// lock's state held: a sink must not block (queue to a thread of its own if its host needs a
/// lock or an interpreter) and must not panic.
pub trait Telemetry: Send + Sync + std::fmt::Debug + 'static {
    /// One measurement.
    fn record(&self, measurement: &Measurement<'_>);

    /// A finished span (default: dropped).
    fn span(&self, span: &SpanRecord) {
        let _ = span;
    }
}

static ENABLED: AtomicBool = AtomicBool::new(false);
static SINK: RwLock<Option<Arc<dyn Telemetry>>> = RwLock::new(None);

/// Sends the driver's measurements and spans to `sink` from now on (in place of any before).
/// Install it before creating locks: a lease granted before is not counted among the holders.
pub fn install(sink: Arc<dyn Telemetry>) {
    let before = SINK.write().unwrap_or_else(PoisonError::into_inner).replace(sink);
    ENABLED.store(true, Ordering::Release);
    // Dropped outside the lock: its drop may end holds, which report to the new sink.
    drop(before);
}

/// Stops measuring; the hooks cost one atomic load again.
pub fn uninstall() {
    ENABLED.store(false, Ordering::Release);
    let before = SINK.write().unwrap_or_else(PoisonError::into_inner).take();
    drop(before);
}

/// Whether a sink is installed.
#[inline]
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Hands the installed sink to `f`, if there is one.
fn with_sink(f: impl FnOnce(&dyn Telemetry)) {
    if !enabled() {
        return;
    }
    if let Some(sink) = &*SINK.read().unwrap_or_else(PoisonError::into_inner) {
        // A sink that panics loses that measurement: it never unwinds through a driver turn.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&**sink)));
    }
}

/// Records `value` on `instrument` with `attributes`.
fn record(instrument: &'static Instrument, value: f64, attributes: &[(&'static str, Value)]) {
    with_sink(|sink| sink.record(&Measurement { instrument, value, attributes }));
}

/// Hands a finished span to the sink.
fn span(span: &SpanRecord) {
    with_sink(|sink| sink.span(span));
}
