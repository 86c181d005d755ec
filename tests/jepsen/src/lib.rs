//! Jepsen-style checks of Tenure: a history of what real client processes asked of a real store
//! while faults were injected, and checkers that judge it against a model.
//!
//! A history is a list of [`Event`]s in JSON lines, each an invocation or its completion (`ok`,
//! `fail`, or `info` when the outcome is unknown: a timeout, a lost connection), with the
//! process, the lock name, the fencing token and the harness's monotonic time (the harness
//! stamps events as they reach it, so a client whose clock is faked does not skew the order).
//! [`history::ops`] pairs them into operations; the checkers in [`mutex`], [`set`],
//! [`semaphore`] and [`progress`] return a [`Verdict`] naming the first anomalies found.

mod clients;
pub mod history;
pub mod mutex;
mod nemesis;
mod partition;
pub mod progress;
mod record;
mod report;
pub mod run;
pub mod semaphore;
mod serve;
mod servers;
pub mod set;
mod stores;

#[cfg(test)]
mod tests;

pub use history::{Event, F, HistoryError, Kind, Op, Outcome, ops, parse};

/// What a checker found in a history.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// How many operations it judged.
    pub checked: usize,
    /// What breaks the model, in the order found (empty: the history is valid).
    pub anomalies: Vec<Anomaly>,
}

impl Verdict {
    /// Whether no anomaly was found.
    pub fn is_valid(&self) -> bool {
        self.anomalies.is_empty()
    }
}

/// One violation of a model: its kind (`"stale-fence"`, `"lost"` …), the operations involved (their
/// indices in the list [`ops`] made) and what happened, in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Anomaly {
    pub kind: &'static str,
    pub ops: Vec<usize>,
    pub message: String,
}
