//! Which of a user's methods a store operation is, with its arguments, and what it answers.

use std::sync::Arc;
use std::time::Duration;

use tenure_core::{Key, Metadata, StoreOp, Token};

/// A user's method, by a name unique across the protocols (`leader_release` is the election's
/// `release`, `sem_acquire` the semaphore's `acquire`): [`Method::user_name`] is the name the
/// user's object has it under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `acquire(name, token, duration)`: a fence, or none.
    Acquire,
    /// A lock's `release(name, token)`.
    Release,
    /// `locked(name)`.
    Locked,
    /// A lock's `owned(name, token)`.
    Owned,
    /// `acquire_or_renew(name, token, duration, metadata)`: a record.
    AcquireOrRenew,
    /// An election's `release(name, token)`.
    LeaderRelease,
    /// `get(name)`: a record, or none.
    Get,
    /// `acquire_read(name, token, duration)`: the generation read, or none.
    AcquireRead,
    /// `acquire_write(name, token, duration, intent)`: a write grant, or none.
    AcquireWrite,
    /// `release_read(name, token)`.
    ReleaseRead,
    /// `release_write(name, token)`.
    ReleaseWrite,
    /// `cancel_intent(name, token)`.
    CancelIntent,
    /// `downgrade(name, token, duration)`: the generation, or none.
    Downgrade,
    /// A read-write lock's `state(name)`.
    RwState,
    /// `owned_read(name, token)`.
    OwnedRead,
    /// `owned_write(name, token)`.
    OwnedWrite,
    /// A semaphore's `acquire(name, token, duration, permits, wait)`: a fence or none, and the
    /// stored count.
    SemAcquire,
    /// A semaphore's `release(name, token)`.
    SemRelease,
    /// A semaphore's `owned(name, token)`.
    SemOwned,
    /// A semaphore's `state(name)`.
    SemState,
}

/// What a method answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A fencing token, or none when another token holds the lock.
    Fence,
    /// A bool.
    Flag,
    /// A leader record.
    Record,
    /// A leader record, or none.
    MaybeRecord,
    /// A read-write lock's generation (0 before the first write), or none when refused.
    Generation,
    /// A write grant (fencing token, poisoned), or none.
    Write,
    /// A read-write lock's state.
    Rw,
    /// A semaphore's permit (fencing token or none) with the stored count.
    Permit,
    /// A semaphore's state.
    Sem,
}

impl Method {
    /// The method's unique name: `acquire`, `acquire_or_renew`, `leader_release`, `rw_state`,
    /// `sem_acquire`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Acquire => "acquire",
            Self::Release => "release",
            Self::Locked => "locked",
            Self::Owned => "owned",
            Self::AcquireOrRenew => "acquire_or_renew",
            Self::LeaderRelease => "leader_release",
            Self::Get => "get",
            Self::AcquireRead => "acquire_read",
            Self::AcquireWrite => "acquire_write",
            Self::ReleaseRead => "release_read",
            Self::ReleaseWrite => "release_write",
            Self::CancelIntent => "cancel_intent",
            Self::Downgrade => "downgrade",
            Self::RwState => "rw_state",
            Self::OwnedRead => "owned_read",
            Self::OwnedWrite => "owned_write",
            Self::SemAcquire => "sem_acquire",
            Self::SemRelease => "sem_release",
            Self::SemOwned => "sem_owned",
            Self::SemState => "sem_state",
        }
    }

    /// The name the user's object has the method under (`release` for every release but a
    /// read-write lock's, `state` for both states).
    pub fn user_name(self) -> &'static str {
        match self {
            Self::LeaderRelease | Self::SemRelease => "release",
            Self::SemAcquire => "acquire",
            Self::SemOwned => "owned",
            Self::RwState | Self::SemState => "state",
            other => other.as_str(),
        }
    }

    /// The name in camel case, as JavaScript, Kotlin and Java objects have it (`acquireOrRenew`,
    /// `cancelIntent`, `release` for every release but a read-write lock's).
    pub fn camel_name(self) -> &'static str {
        match self {
            Self::AcquireOrRenew => "acquireOrRenew",
            Self::AcquireRead => "acquireRead",
            Self::AcquireWrite => "acquireWrite",
            Self::ReleaseRead => "releaseRead",
            Self::ReleaseWrite => "releaseWrite",
            Self::CancelIntent => "cancelIntent",
            Self::OwnedRead => "ownedRead",
            Self::OwnedWrite => "ownedWrite",
            other => other.user_name(),
        }
    }

    /// What it answers.
    pub fn shape(self) -> Shape {
        match self {
            Self::Acquire => Shape::Fence,
            Self::Release
            | Self::Locked
            | Self::Owned
            | Self::LeaderRelease
            | Self::ReleaseRead
            | Self::ReleaseWrite
            | Self::CancelIntent
            | Self::OwnedRead
            | Self::OwnedWrite
            | Self::SemRelease
            | Self::SemOwned => Shape::Flag,
            Self::AcquireOrRenew => Shape::Record,
            Self::Get => Shape::MaybeRecord,
            Self::AcquireRead | Self::Downgrade => Shape::Generation,
            Self::AcquireWrite => Shape::Write,
            Self::RwState => Shape::Rw,
            Self::SemAcquire => Shape::Permit,
            Self::SemState => Shape::Sem,
        }
    }
}

/// One call of a user's method, with its arguments.
#[derive(Debug, Clone)]
pub struct Call {
    /// The method called.
    pub method: Method,
    /// The name with its kind prefix (`lock:cart`).
    pub name: String,
    /// The ownership token, for the calls that take one.
    pub token: Option<String>,
    /// The lease asked for (`duration`), for acquires and `downgrade`.
    pub lease: Option<Duration>,
    /// The leader's metadata, for `acquire_or_renew`.
    pub metadata: Option<Arc<Metadata>>,
    /// Whether a refused writer keeps an intent, for `acquire_write`.
    pub intent: Option<bool>,
    /// The permit count, for a semaphore's `acquire`.
    pub permits: Option<u32>,
    /// How long a refused contender keeps its place in line, for a semaphore's `acquire` (none:
    /// it keeps none).
    pub wait: Option<Duration>,
}

impl Call {
    /// The call `op` is, or none for an operation user backends do not have (schedules).
    pub fn of(op: &StoreOp) -> Option<Self> {
        let call = |method, key: &Key, token: Option<&Token>| Call {
            method,
            name: key.as_str().to_owned(),
            token: token.map(|t| t.as_str().to_owned()),
            lease: None,
            metadata: None,
            intent: None,
            permits: None,
            wait: None,
        };
        Some(match op {
            // A user's backend keeps no queue: a queued acquire is a plain one (the waiter polls).
            StoreOp::LockAcquire { key, token, lease, .. } | StoreOp::LockAcquireQueued { key, token, lease, .. } => {
                Call { lease: Some(*lease), ..call(Method::Acquire, key, Some(token)) }
            }
            StoreOp::LockRelease { key, token } => call(Method::Release, key, Some(token)),
            StoreOp::LockLocked { key } => call(Method::Locked, key, None),
            StoreOp::LockOwned { key, token } => call(Method::Owned, key, Some(token)),
            StoreOp::LeaderAcquireOrRenew { key, token, lease, metadata, .. } => Call {
                lease: Some(*lease),
                metadata: Some(metadata.clone()),
                ..call(Method::AcquireOrRenew, key, Some(token))
            },
            StoreOp::LeaderRelease { key, token } => call(Method::LeaderRelease, key, Some(token)),
            StoreOp::LeaderGet { key } => call(Method::Get, key, None),
            StoreOp::RwAcquireRead { key, token, lease, .. } => {
                Call { lease: Some(*lease), ..call(Method::AcquireRead, key, Some(token)) }
            }
            StoreOp::RwAcquireWrite { key, token, lease, intent, .. } => {
                Call { lease: Some(*lease), intent: Some(*intent), ..call(Method::AcquireWrite, key, Some(token)) }
            }
            StoreOp::RwReleaseRead { key, token } => call(Method::ReleaseRead, key, Some(token)),
            StoreOp::RwReleaseWrite { key, token } => call(Method::ReleaseWrite, key, Some(token)),
            StoreOp::RwCancelIntent { key, token } => call(Method::CancelIntent, key, Some(token)),
            StoreOp::RwDowngrade { key, token, lease } => {
                Call { lease: Some(*lease), ..call(Method::Downgrade, key, Some(token)) }
            }
            StoreOp::RwState { key } => call(Method::RwState, key, None),
            StoreOp::RwOwnedRead { key, token } => call(Method::OwnedRead, key, Some(token)),
            StoreOp::RwOwnedWrite { key, token } => call(Method::OwnedWrite, key, Some(token)),
            StoreOp::SemAcquire { key, token, lease, permits, wait, .. } => Call {
                lease: Some(*lease),
                permits: Some(*permits),
                wait: *wait,
                ..call(Method::SemAcquire, key, Some(token))
            },
            StoreOp::SemRelease { key, token } => call(Method::SemRelease, key, Some(token)),
            StoreOp::SemOwned { key, token } => call(Method::SemOwned, key, Some(token)),
            StoreOp::SemState { key } => call(Method::SemState, key, None),
            _ => return None,
        })
    }
}
