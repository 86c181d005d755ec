//! Events as the harness records them, and the operations they pair into.

use serde::{Deserialize, Serialize};

/// What an event is: the invocation of an operation, or how it completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Invoke,
    Ok,
    Fail,
    /// The outcome is unknown: it may have taken effect, at any time from its invocation on.
    Info,
}

/// The operation: a lock's acquire and release, a write to the fenced resource, an element
/// added to the lock-guarded set, a read of that set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum F {
    Acquire,
    Release,
    Write,
    Add,
    Read,
}

/// One line of a history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    pub process: u32,
    #[serde(rename = "type")]
    pub kind: Kind,
    pub f: F,
    /// The lock (or set) name.
    pub name: String,
    /// The fencing token granted (an acquire's completion) or sent (a write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fence: Option<u64>,
    /// The element added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<u64>,
    /// The elements read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<u64>>,
    /// The harness's monotonic time, in nanoseconds.
    pub time: u64,
}

/// How an operation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Fail,
    /// Unknown: an `info` completion, or none before the history ended.
    Info,
}

/// An invocation and its completion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Op {
    pub process: u32,
    pub f: F,
    pub name: String,
    pub outcome: Outcome,
    pub invoked: u64,
    /// When it completed; `None` when it never did (its effect may land at any time after).
    pub completed: Option<u64>,
    /// The completion's fencing token, else the invocation's.
    pub fence: Option<u64>,
    pub value: Option<u64>,
    pub values: Option<Vec<u64>>,
}

impl Op {
    /// Whether it certainly completed before `other` was invoked (real-time order).
    pub fn precedes(&self, other: &Op) -> bool {
        self.completed.is_some_and(|done| done < other.invoked)
    }
}

/// A history that cannot be read as one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HistoryError {
    /// A line that is no event (its number, from 1, and why).
    Line(usize, String),
    /// A completion with no invocation open on its process, or an invocation while one is open.
    Unpaired { event: usize, process: u32 },
}

impl std::fmt::Display for HistoryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Line(line, why) => write!(f, "line {line} is no event: {why}"),
            Self::Unpaired { event, process } => {
                write!(f, "event {event} of process {process} does not pair: one operation at a time per process")
            }
        }
    }
}

impl std::error::Error for HistoryError {}

/// The events of a history in JSON lines (blank lines skipped).
pub fn parse(text: &str) -> Result<Vec<Event>, HistoryError> {
    let lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    lines.map(|(i, l)| serde_json::from_str(l).map_err(|e| HistoryError::Line(i + 1, e.to_string()))).collect()
}

/// The operations of `events`, in invocation order: each process runs one at a time, so each
/// completion closes its process's open invocation; one still open at the end is `Info`.
pub fn ops(events: &[Event]) -> Result<Vec<Op>, HistoryError> {
    let mut ops: Vec<Op> = Vec::new();
    let mut open: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
    for (i, e) in events.iter().enumerate() {
        let unpaired = HistoryError::Unpaired { event: i, process: e.process };
        if e.kind == Kind::Invoke {
            if open.insert(e.process, ops.len()).is_some() {
                return Err(unpaired);
            }
            ops.push(Op {
                process: e.process,
                f: e.f,
                name: e.name.clone(),
                outcome: Outcome::Info,
                invoked: e.time,
                completed: None,
                fence: e.fence,
                value: e.value,
                values: None,
            });
            continue;
        }
        let Some(at) = open.remove(&e.process) else { return Err(unpaired) };
        let op = &mut ops[at];
        if op.f != e.f {
            return Err(unpaired);
        }
        op.outcome = match e.kind {
            Kind::Ok => Outcome::Ok,
            Kind::Fail => Outcome::Fail,
            Kind::Info | Kind::Invoke => Outcome::Info,
        };
        // An info completion says nothing of when the effect landed.
        op.completed = (e.kind != Kind::Info).then_some(e.time);
        op.fence = e.fence.or(op.fence);
        op.value = e.value.or(op.value);
        op.values.clone_from(&e.values);
    }
    Ok(ops)
}
