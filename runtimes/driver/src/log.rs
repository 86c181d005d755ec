//! The driver's `tracing` events as plain records, for bindings that hand them to their host's
//! logging (Python's `logging`, a Node event emitter): leadership gained, released and stopped at
//! INFO, a lost lock or leadership at WARNING, store failures at ERROR, every acquire and release
//! at DEBUG. No event carries an ownership token or a password.

use std::fmt::Write as _;

use tracing::field::{Field, Visit};
use tracing::{Event, Level};

/// One event: its level, its message and its other fields, in order, as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    /// ERROR, WARN, INFO, DEBUG or TRACE.
    pub level: Level,
    /// What happened.
    pub message: String,
    /// The event's other fields (`lock`, `election`, `fence`, `error`, …), as text.
    pub fields: Vec<(&'static str, String)>,
}

impl LogRecord {
    /// The record of `event`.
    pub fn of(event: &Event<'_>) -> Self {
        let mut record = Self { level: *event.metadata().level(), message: String::new(), fields: Vec::new() };
        event.record(&mut record);
        record
    }

    /// The message and its fields on one line: `lock lost: lock=orders fence=3`.
    pub fn line(&self) -> String {
        let mut line = self.message.clone();
        for (i, (name, value)) in self.fields.iter().enumerate() {
            let _ = write!(line, "{}{name}={value}", if i == 0 { ": " } else { " " });
        }
        line
    }
}

impl Visit for LogRecord {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            self.fields.push((field.name(), format!("{value:?}")));
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            self.fields.push((field.name(), value.to_owned()));
        }
    }
}

/// A `tracing` subscriber that hands a binding the events it wants, as [`LogRecord`]s: `wants`
/// is asked at every event (listeners come and go), `deliver` gets each wanted one.
#[derive(Debug)]
pub struct Forward {
    wants: fn(Level) -> bool,
    deliver: fn(&LogRecord),
}

impl Forward {
    /// A subscriber asking `wants` and calling `deliver`.
    pub const fn new(wants: fn(Level) -> bool, deliver: fn(&LogRecord)) -> Self {
        Self { wants, deliver }
    }
}

impl tracing::Subscriber for Forward {
    fn register_callsite(&self, _: &'static tracing::Metadata<'static>) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::sometimes()
    }

    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        (self.wants)(*metadata.level())
    }

    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }

    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, event: &Event<'_>) {
        (self.deliver)(&LogRecord::of(event));
    }

    fn enter(&self, _: &tracing::span::Id) {}

    fn exit(&self, _: &tracing::span::Id) {}
}
