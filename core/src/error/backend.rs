//! [`BackendError`]: a failed store call, as a backend reports it to the core, and its kind.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// What kind of failure a store call met.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BackendErrorKind {
    /// No answer within `backend_timeout`; the outcome is unknown.
    Timeout,
    /// The store could not be reached (refused, reset, DNS, closed connection).
    Unavailable,
    /// The store answered something that does not fit the request.
    Protocol,
    /// A record read back from the store is malformed or over a size limit.
    MalformedRecord,
    /// The store refused the command (permissions, read-only replica, script error).
    Rejected,
    /// A fencing token came back lower than one already seen for the name.
    FenceRegression,
    /// The backend is not open.
    Closed,
    /// Anything else.
    Other,
}

impl BackendErrorKind {
    /// A stable, machine-readable code for this kind (bindings' store error codes).
    pub fn code(self) -> &'static str {
        match self {
            Self::Timeout => "STORE_TIMEOUT",
            Self::Unavailable => "STORE_UNAVAILABLE",
            Self::Protocol => "STORE_PROTOCOL",
            Self::MalformedRecord => "STORE_MALFORMED_RECORD",
            Self::Rejected => "STORE_REJECTED",
            Self::FenceRegression => "STORE_FENCE_REGRESSION",
            Self::Closed => "STORE_CLOSED",
            Self::Other => "STORE_FAILED",
        }
    }
}

impl fmt::Display for BackendErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Timeout => "timed out",
            Self::Unavailable => "store unavailable",
            Self::Protocol => "unexpected answer",
            Self::MalformedRecord => "malformed record",
            Self::Rejected => "rejected by the store",
            Self::FenceRegression => "fencing token went backwards",
            Self::Closed => "backend not open",
            Self::Other => "backend error",
        })
    }
}

/// A failed store call, as a backend reports it to the core.
///
/// One pointer wide, so that errors and the events carrying them stay small in every machine.
#[derive(Clone, Debug)]
pub struct BackendError(Box<BackendErrorInner>);

#[derive(Clone, Debug)]
struct BackendErrorInner {
    kind: BackendErrorKind,
    message: String,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl BackendError {
    /// A failure of `kind` described by `message`.
    pub fn new(kind: BackendErrorKind, message: impl Into<String>) -> Self {
        Self(Box::new(BackendErrorInner { kind, message: message.into(), source: None }))
    }

    /// The call got no answer within `after`.
    pub fn timeout(after: Duration) -> Self {
        Self::new(BackendErrorKind::Timeout, format!("no answer within {}s", after.as_secs_f64()))
    }

    /// A grant whose reply came back after the lease it granted had run out (counted from when the
    /// request was sent): the holder cannot count on any of it.
    pub fn late_grant() -> Self {
        Self::new(
            BackendErrorKind::Timeout,
            "the grant arrived after its lease had run out (the reply took longer than the lease)",
        )
    }

    /// Attaches the underlying client error.
    #[must_use]
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.0.source = Some(Arc::new(source));
        self
    }

    /// The kind of failure.
    pub fn kind(&self) -> BackendErrorKind {
        self.0.kind
    }

    /// The description.
    pub fn message(&self) -> &str {
        &self.0.message
    }
}

impl PartialEq for BackendError {
    fn eq(&self, other: &Self) -> bool {
        self.kind() == other.kind() && self.message() == other.message()
    }
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind(), self.message())
    }
}

impl std::error::Error for BackendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}
