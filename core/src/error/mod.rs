//! The one error type of Tenure, mirroring grelmicro 0.44's coordination error classes by variant.
//!
//! Every variant has a code and a class in [the error table](table): the one list every binding
//! builds its error classes from (a cross-binding test checks the Python, Node and JVM classes
//! against it). The predicates below answer the membership questions of the API reference's
//! class hierarchy:
//!
//! ```text
//! CoordinationError          BackendMissing, lock-backend family
//! ├─ LockReentrantError      Reentrant
//! │  └─ LockBusyError        Busy
//! ├─ LockUpgradeError        Upgrade
//! ├─ LockNotOwnedError       NotOwned
//! │  └─ LockLostError        Lost
//! └─ LockBackendError        Acquire, Extend, Release, LockedCheck, OwnedCheck
//! AdmissionError
//! └─ WouldBlockError         WouldBlock
//!    └─ LockTimeoutError     Timeout            (also a timeout error)
//! BackendScopeError          BackendScope
//! OutOfContextError          OutOfContext
//! └─ BackendNotOpenError     NotOpen
//! SettingsValidationError    Settings           (also a value error)
//! ConfigTypeError            WrongConfigType    (also a type error)
//! EventLoopDeadlockError     Deadlock
//! ```
//!
//! Messages carry the unprefixed lock name and never the ownership token, which is a capability.

mod backend;
mod settings;
pub mod table;

pub use backend::{BackendError, BackendErrorKind};
pub use settings::SettingsError;

use std::fmt;
use std::time::Duration;

/// Every way a Tenure operation can fail.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A `Coordination` component has no backend for this kind of primitive.
    #[error(
        "Coordination has no {slot} backend. Pass a provider that serves it, or set the {slot} backend explicitly."
    )]
    BackendMissing {
        /// Which slot is empty.
        slot: BackendSlot,
    },
    /// The same holder tried to acquire a lock it already holds or is acquiring.
    #[error("Lock does not support nested usage: name={name}. This holder already holds or is acquiring it.")]
    Reentrant {
        /// The lock name.
        name: String,
    },
    /// A read holder asked for the write lock.
    #[error("Lock cannot be upgraded from read to write: name={name}.")]
    Upgrade {
        /// The lock name.
        name: String,
    },
    /// Release, extend or exit on a lease this caller does not hold (never acquired, already
    /// released, expired, or taken over).
    #[error("Lock not held: name={name}. This caller never acquired it, already released it, or its lease ran out.")]
    NotOwned {
        /// The lock name.
        name: String,
    },
    /// The store failed while acquiring.
    #[error("Failed to acquire lock: name={name}. {}", hint(.cause))]
    Acquire {
        /// The lock name.
        name: String,
        /// What the store did.
        #[source]
        cause: BackendError,
    },
    /// The store failed while extending.
    #[error("Failed to extend lock: name={name}. {}", hint(.cause))]
    Extend {
        /// The lock name.
        name: String,
        /// What the store did.
        #[source]
        cause: BackendError,
    },
    /// The store failed while releasing (or, for a task lock, while shortening the hold on exit).
    #[error("Failed to release lock: name={name}. {}", hint(.cause))]
    Release {
        /// The lock name.
        name: String,
        /// What the store did.
        #[source]
        cause: BackendError,
    },
    /// The store failed in `locked()`.
    #[error("Failed to check if lock is acquired: name={name}. {}", hint(.cause))]
    LockedCheck {
        /// The lock name.
        name: String,
        /// What the store did.
        #[source]
        cause: BackendError,
    },
    /// The store failed in `owned()`.
    #[error("Failed to check if lock is owned: name={name}. {}", hint(.cause))]
    OwnedCheck {
        /// The lock name.
        name: String,
        /// What the store did.
        #[source]
        cause: BackendError,
    },
    /// A non-blocking attempt was turned away.
    #[error("{}", would_block(.name, *.reason))]
    WouldBlock {
        /// The lock or election name.
        name: String,
        /// Which primitive turned the caller away.
        reason: WouldBlockReason,
    },
    /// A bounded acquire did not succeed in time.
    #[error("Lock '{name}' not acquired within {}s", .timeout.as_secs_f64())]
    Timeout {
        /// The lock name.
        name: String,
        /// The timeout the caller gave.
        timeout: Duration,
    },
    /// No backend could be resolved for a primitive built without one.
    #[error("{message}")]
    OutOfContext {
        /// What was asked, and how to fix it.
        message: String,
    },
    /// A backend reaches less far (one process, one host) than its coordination component
    /// requires, where `GREL_ENVIRONMENT` is `staging` or `production`.
    #[error("{message}")]
    BackendScope {
        /// Which backends fall short, where, and what to do.
        message: String,
    },
    /// A setting, a name, an environment variable or a stored value is invalid.
    #[error("{0}")]
    Settings(SettingsError),
    /// `reconfigure` was given a configuration of another primitive.
    #[error("reconfigure requires {expected}, got {got}")]
    WrongConfigType {
        /// The configuration type the primitive uses.
        expected: &'static str,
        /// The configuration type it was given.
        got: &'static str,
    },
    /// A blocking adapter was called on the thread that must serve it.
    #[error(
        "{what} was called on the thread that runs the event loop it waits for, which would deadlock. Call it from another thread or use the async API."
    )]
    Deadlock {
        /// The call that was refused.
        what: String,
    },
    /// A backend was used before it was opened or after it was closed.
    #[error("{what} is not open. Open it before use; after it is closed, open it again.")]
    NotOpen {
        /// The backend or call.
        what: String,
    },
    /// A second operation was started on a holder while one is still in progress.
    #[error("Lock busy: name={name}. Another {operation} on this holder is still in progress.")]
    Busy {
        /// The lock name.
        name: String,
        /// The operation in progress.
        operation: &'static str,
    },
    /// A lease held with its renewals running ended on its own while the work under it ran, and
    /// the work was cancelled.
    #[error("Lock lost while held: name={name}, reason={cause}. {}", cause.explain())]
    Lost {
        /// The lock name.
        name: String,
        /// Why the lease ended.
        cause: LossCause,
    },
}

/// Why a lease kept alive ended on its own (a [`Error::Lost`]'s cause).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LossCause {
    /// The maximum hold was reached and the lease ended (released, or a task lock exited).
    MaxHold,
    /// The validity ran out while no renewal was tried (the process was paused or its runtime
    /// starved past the lease).
    Expired,
    /// The validity ran out while renewals failed or were still unanswered (the store was
    /// unreachable or too slow).
    Unreachable,
    /// A renewal found the lease taken by another holder.
    Lost,
    /// A renewal was answered with a fencing token below this holder's (the store lost its
    /// grants, as after a failover to a replica that had not seen them).
    FenceRegression,
    /// An operator revoked the lease (`tenure revoke`), for this reason.
    Revoked(crate::store::RevokeReason),
}

impl LossCause {
    /// The cause as bindings and the CLI's JSON give it: `max_hold`, `expired`, `unreachable`,
    /// `lost`, `fence_regression` or `revoked`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::MaxHold => "max_hold",
            Self::Expired => "expired",
            Self::Unreachable => "unreachable",
            Self::Lost => "lost",
            Self::FenceRegression => "fence_regression",
            Self::Revoked(_) => "revoked",
        }
    }

    /// The reason an operator gave, for a revocation.
    pub fn revoked_reason(&self) -> Option<&str> {
        match self {
            Self::Revoked(reason) => Some(reason.as_str()),
            _ => None,
        }
    }

    fn explain(&self) -> String {
        match self {
            Self::MaxHold => {
                "The maximum hold was reached and the lease given back; the work was cancelled.".to_owned()
            }
            Self::Expired => "The lease's validity ran out before a renewal was even tried (the process was paused \
                              or its runtime starved past the lease); the work was cancelled."
                .to_owned(),
            Self::Unreachable => "Renewals failed or went unanswered until the lease's validity ran out (the store \
                                  was unreachable or too slow); the work was cancelled."
                .to_owned(),
            Self::Lost => "A renewal found the lease held by another holder; the work was cancelled.".to_owned(),
            Self::FenceRegression => "A renewal was answered with a fencing token below this lease's (the store lost \
                                      its grants, as after a failover); the work was cancelled."
                .to_owned(),
            Self::Revoked(reason) => format!(
                "An operator revoked the lease ({reason:?}); its fence was advanced, so a fenced resource refuses \
                 this holder's writes; the work was cancelled."
            ),
        }
    }
}

impl fmt::Display for LossCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// grelmicro's messages: "Lock not acquired: name=<n>", "Task lock not acquired: name=<n>",
/// "Not leader: <n>" (without the token, which grelmicro shows and Tenure never does).
fn would_block(name: &str, reason: WouldBlockReason) -> String {
    match reason {
        WouldBlockReason::NotLeader => format!("{reason}: {name}"),
        _ => format!("{reason}: name={name}"),
    }
}

fn hint(cause: &BackendError) -> &'static str {
    match cause.kind() {
        BackendErrorKind::Closed => "The backend is not open: open it before using the lock.",
        BackendErrorKind::Timeout => {
            "The backend did not answer within backend_timeout; check it is reachable, then retry."
        }
        _ => "Check the backend is open and reachable, then retry.",
    }
}

impl Error {
    /// A settings error about `field`.
    pub fn settings(field: &str, message: impl Into<String>) -> Self {
        Self::Settings(SettingsError::field(field, message))
    }

    /// A stable, machine-readable code for this variant (bindings' error codes, CLI `--json`).
    pub fn code(&self) -> &'static str {
        match self {
            Self::BackendMissing { .. } => "COORDINATION_BACKEND_MISSING",
            Self::Reentrant { .. } => "LOCK_REENTRANT",
            Self::Upgrade { .. } => "LOCK_UPGRADE",
            Self::NotOwned { .. } => "LOCK_NOT_OWNED",
            Self::Acquire { .. } => "LOCK_ACQUIRE_FAILED",
            Self::Extend { .. } => "LOCK_EXTEND_FAILED",
            Self::Release { .. } => "LOCK_RELEASE_FAILED",
            Self::LockedCheck { .. } => "LOCK_LOCKED_CHECK_FAILED",
            Self::OwnedCheck { .. } => "LOCK_OWNED_CHECK_FAILED",
            Self::WouldBlock { .. } => "WOULD_BLOCK",
            Self::Timeout { .. } => "LOCK_TIMEOUT",
            Self::OutOfContext { .. } => "OUT_OF_CONTEXT",
            Self::BackendScope { .. } => "BACKEND_SCOPE",
            Self::Settings(_) => "SETTINGS_INVALID",
            Self::WrongConfigType { .. } => "CONFIG_TYPE",
            Self::Deadlock { .. } => "EVENT_LOOP_DEADLOCK",
            Self::NotOpen { .. } => "BACKEND_NOT_OPEN",
            Self::Busy { .. } => "LOCK_BUSY",
            Self::Lost { .. } => "LOCK_LOST",
        }
    }

    /// The lock or election name the error is about, if any.
    pub fn name(&self) -> Option<&str> {
        match self {
            Self::Reentrant { name }
            | Self::Upgrade { name }
            | Self::NotOwned { name }
            | Self::Acquire { name, .. }
            | Self::Extend { name, .. }
            | Self::Release { name, .. }
            | Self::LockedCheck { name, .. }
            | Self::OwnedCheck { name, .. }
            | Self::WouldBlock { name, .. }
            | Self::Timeout { name, .. }
            | Self::Busy { name, .. }
            | Self::Lost { name, .. } => Some(name),
            _ => None,
        }
    }

    /// The timeout of a [`Error::Timeout`].
    pub fn timeout(&self) -> Option<Duration> {
        match self {
            Self::Timeout { timeout, .. } => Some(*timeout),
            _ => None,
        }
    }

    /// The setting or variable a [`Error::Settings`] is about, when it names one.
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::Settings(settings) => settings.field_name(),
            _ => None,
        }
    }

    /// Why a [`Error::Lost`] lease ended.
    pub fn loss_cause(&self) -> Option<LossCause> {
        match self {
            Self::Lost { cause, .. } => Some(cause.clone()),
            _ => None,
        }
    }

    /// The store failure behind a lock-backend error.
    pub fn backend_error(&self) -> Option<&BackendError> {
        match self {
            Self::Acquire { cause, .. }
            | Self::Extend { cause, .. }
            | Self::Release { cause, .. }
            | Self::LockedCheck { cause, .. }
            | Self::OwnedCheck { cause, .. } => Some(cause),
            _ => None,
        }
    }

    /// The reference's `CoordinationError` and its subclasses.
    pub fn is_coordination(&self) -> bool {
        matches!(
            self,
            Self::BackendMissing { .. }
                | Self::Reentrant { .. }
                | Self::Upgrade { .. }
                | Self::NotOwned { .. }
                | Self::Busy { .. }
                | Self::Lost { .. }
        ) || self.is_lock_backend()
    }

    /// The reference's `LockBackendError`: the store failed during a lock operation.
    pub fn is_lock_backend(&self) -> bool {
        self.backend_error().is_some()
    }

    /// The reference's `LockReleaseError`.
    pub fn is_release(&self) -> bool {
        matches!(self, Self::Release { .. })
    }

    /// The reference's `LockNotOwnedError` (a lost lease is one too).
    pub fn is_not_owned(&self) -> bool {
        matches!(self, Self::NotOwned { .. } | Self::Lost { .. })
    }

    /// The reference's `LockReentrantError` (a busy holder is one too).
    pub fn is_reentrant(&self) -> bool {
        matches!(self, Self::Reentrant { .. } | Self::Busy { .. })
    }

    /// The reference's `AdmissionError` and `WouldBlockError` (a timeout is also a would-block).
    pub fn is_would_block(&self) -> bool {
        matches!(self, Self::WouldBlock { .. } | Self::Timeout { .. })
    }

    /// The reference's `LockTimeoutError` (a timeout error of the language too).
    pub fn is_timeout(&self) -> bool {
        matches!(self, Self::Timeout { .. })
    }

    /// The reference's `SettingsValidationError` (a value error of the language too).
    pub fn is_settings(&self) -> bool {
        matches!(self, Self::Settings(_))
    }

    /// The reference's `OutOfContextError` (a backend not open is one too).
    pub fn is_out_of_context(&self) -> bool {
        matches!(self, Self::OutOfContext { .. } | Self::NotOpen { .. })
    }
}

impl From<SettingsError> for Error {
    fn from(e: SettingsError) -> Self {
        Self::Settings(e)
    }
}

/// The backend slots of a `Coordination` component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BackendSlot {
    /// Locks and task locks.
    Lock,
    /// Leader elections.
    LeaderElection,
    /// Cron schedules.
    Schedule,
    /// Read-write locks.
    ReadWriteLock,
    /// Semaphores.
    Semaphore,
}

impl fmt::Display for BackendSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Lock => "lock",
            Self::LeaderElection => "leader election",
            Self::Schedule => "schedule",
            Self::ReadWriteLock => "read-write lock",
            Self::Semaphore => "semaphore",
        })
    }
}

/// Which primitive turned a non-blocking caller away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WouldBlockReason {
    /// `Lock::acquire_nowait` found the lock held.
    LockHeld,
    /// `TaskLock` enter found the task lock held.
    TaskLockHeld,
    /// A leader guard was entered by a worker that does not lead.
    NotLeader,
    /// A read attempt found a writer holding the read-write lock or waiting for it.
    ReadRefused,
    /// A write attempt found readers or another writer holding the read-write lock.
    WriteRefused,
    /// A semaphore's attempt found every permit taken (or taken by the waiters ahead).
    PermitsTaken,
}

impl fmt::Display for WouldBlockReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::LockHeld => "Lock not acquired",
            Self::TaskLockHeld => "Task lock not acquired",
            Self::NotLeader => "Not leader",
            Self::ReadRefused => "Read lock not acquired",
            Self::WriteRefused => "Write lock not acquired",
            Self::PermitsTaken => "Semaphore permit not acquired",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cause() -> BackendError {
        BackendError::new(BackendErrorKind::Unavailable, "connection refused")
    }

    #[test]
    fn predicates_follow_the_grelmicro_044_hierarchy() {
        let name = "cart".to_owned();
        let timeout = Error::Timeout { name: name.clone(), timeout: Duration::from_millis(10) };
        assert!(timeout.is_timeout() && timeout.is_would_block() && !timeout.is_coordination());
        let not_owned = Error::NotOwned { name: name.clone() };
        // 0.44: LockNotOwnedError is a CoordinationError, not a LockReleaseError.
        assert!(not_owned.is_coordination() && !not_owned.is_release() && !not_owned.is_lock_backend());
        let release = Error::Release { name: name.clone(), cause: cause() };
        assert!(release.is_release() && release.is_lock_backend() && release.is_coordination());
        let would = Error::WouldBlock { name, reason: WouldBlockReason::NotLeader };
        assert!(would.is_would_block() && !would.is_timeout());
        assert_eq!(would.to_string(), "Not leader: cart");
    }

    #[test]
    fn messages_name_the_lock_and_chain_the_cause() {
        let err = Error::Acquire { name: "x".into(), cause: cause() };
        assert_eq!(
            err.to_string(),
            "Failed to acquire lock: name=x. Check the backend is open and reachable, then retry."
        );
        let source = std::error::Error::source(&err).map(ToString::to_string);
        assert_eq!(source.as_deref(), Some("store unavailable: connection refused"));
        let timeout = Error::Timeout { name: "x".into(), timeout: Duration::from_millis(10) };
        assert_eq!(timeout.to_string(), "Lock 'x' not acquired within 0.01s");
        assert_eq!(timeout.name(), Some("x"));
        assert_eq!(timeout.code(), "LOCK_TIMEOUT");
    }
}
