//! What machines ask of a lease store, what it answers, and the reference model of its semantics.
//!
//! A machine emits [`StoreRequest`]s; a driver runs each against its backend and feeds the answer
//! back as `Result<StoreReply, BackendError>`. The memory backend, the simulator and the backend
//! conformance suite answer with [`StoreModel::apply`], the reference semantics of spec §5.

mod details;
mod model;
mod queue;
mod revoke;
mod rw;
mod sem;

use std::sync::Arc;
use std::time::Duration;

pub use details::{GrantDetails, HolderDetails, MAX_DETAILS_BYTES, MAX_PURPOSE_BYTES, check_purpose};
pub use model::{LockLease, StoreKey, StoreModel};
pub use queue::{Grant, Waiter};
pub use revoke::{MAX_REASON_BYTES, REVOKED_PREFIX, Revocation, RevokeReason};
pub use rw::{RwState, WriteGrant};
pub use sem::{PermitAnswer, SemState};

use crate::ids::{FencingToken, Key, OpId, Token};
use crate::record::{LeaderRecord, Metadata};
use crate::time::Timestamp;

/// One store operation (the methods of spec §5.1–5.4). Keys carry their kind prefix.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum StoreOp {
    /// `LockBackend.acquire`: take or renew; answers [`StoreReply::Fence`].
    LockAcquire {
        /// The lock key.
        key: Key,
        /// The holder's token.
        token: Token,
        /// How long the lease lasts from when the store applies it.
        lease: Duration,
        /// Who holds, kept beside a new grant ([`HolderDetails`]); a renewal ignores them.
        details: Option<HolderDetails>,
    },
    /// A queued acquire ([`StoreModel::lock_acquire_queued`]): takes or renews like
    /// [`StoreOp::LockAcquire`] unless a live waiter of another token is ahead; else keeps
    /// `token`'s place in the lock's queue for `wait` and answers `None`, and the store hands
    /// the lock over later by a push ([`Grant`]). Answers [`StoreReply::Fence`]. A store that
    /// keeps no queue answers it as a [`StoreOp::LockAcquire`] (the waiter then polls).
    LockAcquireQueued {
        /// The lock key.
        key: Key,
        /// The holder's token.
        token: Token,
        /// How long the lease lasts from when the store grants it.
        lease: Duration,
        /// How long the place in the queue lasts from when the store applies the attempt.
        wait: Duration,
        /// Who holds, kept beside a new grant, and with the place while it waits.
        details: Option<HolderDetails>,
    },
    /// `LockBackend.release`: answers [`StoreReply::Flag`] (true iff `token` held a live lease).
    LockRelease {
        /// The lock key.
        key: Key,
        /// The holder's token.
        token: Token,
    },
    /// `LockBackend.locked`: answers [`StoreReply::Flag`].
    LockLocked {
        /// The lock key.
        key: Key,
    },
    /// `LockBackend.owned`: answers [`StoreReply::Flag`].
    LockOwned {
        /// The lock key.
        key: Key,
        /// The token asked about.
        token: Token,
    },
    /// Revokes the live lease of a lock (`tenure revoke`, [`StoreModel::lock_revoke`]): a
    /// placeholder under the next fence takes the holder's place until its lease would have
    /// ended. Answers [`StoreReply::Revocation`].
    LockRevoke {
        /// The lock key (`lock:` or `tasklock:`).
        key: Key,
        /// Why, for the revoked holder and the listings.
        reason: RevokeReason,
    },
    /// `LeaderElectionBackend.acquire_or_renew`: answers [`StoreReply::Leader`].
    LeaderAcquireOrRenew {
        /// The election key.
        key: Key,
        /// The worker's token.
        token: Token,
        /// How long the lease lasts from when the store applies it.
        lease: Duration,
        /// What the worker attaches while it leads.
        metadata: Arc<Metadata>,
        /// Who leads, kept beside a term the call begins ([`HolderDetails`]; a renewal keeps
        /// the term's).
        details: Option<HolderDetails>,
    },
    /// `LeaderElectionBackend.release`: answers [`StoreReply::Flag`].
    LeaderRelease {
        /// The election key.
        key: Key,
        /// The worker's token.
        token: Token,
    },
    /// `LeaderElectionBackend.get`: answers [`StoreReply::MaybeLeader`].
    LeaderGet {
        /// The election key.
        key: Key,
    },
    /// `ScheduleBackend.claim`: answers [`StoreReply::Flag`].
    ScheduleClaim {
        /// The task name.
        key: Key,
        /// The fire time claimed, in epoch seconds.
        due: f64,
    },
    /// `ScheduleBackend.last_fired`: answers [`StoreReply::LastFired`].
    ScheduleLastFired {
        /// The task name.
        key: Key,
    },
    /// `ReadWriteLockBackend.acquire_read`: answers [`StoreReply::Fence`] with the generation
    /// read ([`StoreModel::rw_acquire_read`]).
    RwAcquireRead {
        /// The read-write lock key (`rwlock:<name>`).
        key: Key,
        /// The reader's token.
        token: Token,
        /// How long the lease lasts from when the store applies it.
        lease: Duration,
        /// Who holds, kept beside a grant ([`HolderDetails`]); `None` on a renewal.
        details: Option<HolderDetails>,
    },
    /// `ReadWriteLockBackend.acquire_write`: answers [`StoreReply::Write`]
    /// ([`StoreModel::rw_acquire_write`]).
    RwAcquireWrite {
        /// The read-write lock key.
        key: Key,
        /// The writer's token.
        token: Token,
        /// How long the lease (or the intent, if refused) lasts from when the store applies it.
        lease: Duration,
        /// A refusal keeps an intent that holds new readers out.
        intent: bool,
        /// Who holds, kept beside a grant ([`HolderDetails`]); `None` on a renewal.
        details: Option<HolderDetails>,
    },
    /// `ReadWriteLockBackend.release_read`: answers [`StoreReply::Flag`].
    RwReleaseRead {
        /// The read-write lock key.
        key: Key,
        /// The reader's token.
        token: Token,
    },
    /// `ReadWriteLockBackend.release_write`: answers [`StoreReply::Flag`].
    RwReleaseWrite {
        /// The read-write lock key.
        key: Key,
        /// The writer's token.
        token: Token,
    },
    /// `ReadWriteLockBackend.cancel_intent`: answers [`StoreReply::Flag`].
    RwCancelIntent {
        /// The read-write lock key.
        key: Key,
        /// The writer's token.
        token: Token,
    },
    /// `ReadWriteLockBackend.downgrade`: answers [`StoreReply::Fence`] with the generation
    /// ([`StoreModel::rw_downgrade`]).
    RwDowngrade {
        /// The read-write lock key.
        key: Key,
        /// The writer's token, reading from now on.
        token: Token,
        /// How long the read lease lasts from when the store applies it.
        lease: Duration,
    },
    /// `ReadWriteLockBackend.state`: answers [`StoreReply::Rw`].
    RwState {
        /// The read-write lock key.
        key: Key,
    },
    /// `ReadWriteLockBackend.owned_read`: answers [`StoreReply::Flag`].
    RwOwnedRead {
        /// The read-write lock key.
        key: Key,
        /// The token asked about.
        token: Token,
    },
    /// `ReadWriteLockBackend.owned_write`: answers [`StoreReply::Flag`].
    RwOwnedWrite {
        /// The read-write lock key.
        key: Key,
        /// The token asked about.
        token: Token,
    },
    /// A semaphore's permit: answers [`StoreReply::Permit`] ([`StoreModel::sem_acquire`]).
    SemAcquire {
        /// The semaphore key (`semaphore:<name>`).
        key: Key,
        /// The holder's token.
        token: Token,
        /// How long the lease lasts from when the store applies it.
        lease: Duration,
        /// The permit count the holder expects the store to keep.
        permits: u32,
        /// A refusal keeps (or refreshes) the holder's place in line for this long.
        wait: Option<Duration>,
        /// Who holds, kept beside a grant ([`HolderDetails`]); `None` on a renewal.
        details: Option<HolderDetails>,
    },
    /// Gives a semaphore's permit back and leaves the line: answers [`StoreReply::Flag`] (true
    /// iff `token` held a live permit).
    SemRelease {
        /// The semaphore key.
        key: Key,
        /// The holder's token.
        token: Token,
    },
    /// Whether `token` holds a live permit: answers [`StoreReply::Flag`].
    SemOwned {
        /// The semaphore key.
        key: Key,
        /// The token asked about.
        token: Token,
    },
    /// A semaphore's state: answers [`StoreReply::Sem`].
    SemState {
        /// The semaphore key.
        key: Key,
    },
}

impl StoreOp {
    /// The key the operation touches.
    pub fn key(&self) -> &Key {
        match self {
            Self::LockAcquire { key, .. }
            | Self::LockAcquireQueued { key, .. }
            | Self::LockRelease { key, .. }
            | Self::LockLocked { key }
            | Self::LockOwned { key, .. }
            | Self::LockRevoke { key, .. }
            | Self::LeaderAcquireOrRenew { key, .. }
            | Self::LeaderRelease { key, .. }
            | Self::LeaderGet { key }
            | Self::ScheduleClaim { key, .. }
            | Self::ScheduleLastFired { key }
            | Self::RwAcquireRead { key, .. }
            | Self::RwAcquireWrite { key, .. }
            | Self::RwReleaseRead { key, .. }
            | Self::RwReleaseWrite { key, .. }
            | Self::RwCancelIntent { key, .. }
            | Self::RwDowngrade { key, .. }
            | Self::RwState { key }
            | Self::RwOwnedRead { key, .. }
            | Self::RwOwnedWrite { key, .. }
            | Self::SemAcquire { key, .. }
            | Self::SemRelease { key, .. }
            | Self::SemOwned { key, .. }
            | Self::SemState { key } => key,
        }
    }

    /// The operation's name as metrics report it (`lock_acquire`, `rw_release_write`…).
    pub fn name(&self) -> &'static str {
        match self {
            Self::LockAcquire { .. } => "lock_acquire",
            Self::LockAcquireQueued { .. } => "lock_acquire_queued",
            Self::LockRelease { .. } => "lock_release",
            Self::LockLocked { .. } => "lock_locked",
            Self::LockOwned { .. } => "lock_owned",
            Self::LockRevoke { .. } => "lock_revoke",
            Self::LeaderAcquireOrRenew { .. } => "leader_acquire_or_renew",
            Self::LeaderRelease { .. } => "leader_release",
            Self::LeaderGet { .. } => "leader_get",
            Self::ScheduleClaim { .. } => "schedule_claim",
            Self::ScheduleLastFired { .. } => "schedule_last_fired",
            Self::RwAcquireRead { .. } => "rw_acquire_read",
            Self::RwAcquireWrite { .. } => "rw_acquire_write",
            Self::RwReleaseRead { .. } => "rw_release_read",
            Self::RwReleaseWrite { .. } => "rw_release_write",
            Self::RwCancelIntent { .. } => "rw_cancel_intent",
            Self::RwDowngrade { .. } => "rw_downgrade",
            Self::RwState { .. } => "rw_state",
            Self::RwOwnedRead { .. } => "rw_owned_read",
            Self::RwOwnedWrite { .. } => "rw_owned_write",
            Self::SemAcquire { .. } => "sem_acquire",
            Self::SemRelease { .. } => "sem_release",
            Self::SemOwned { .. } => "sem_owned",
            Self::SemState { .. } => "sem_state",
        }
    }
}

/// A store's answer to a [`StoreOp`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum StoreReply {
    /// The fencing token of a granted lease, or `None` when another token holds it.
    Fence(Option<FencingToken>),
    /// A yes/no answer.
    Flag(bool),
    /// The leader record after `acquire_or_renew`.
    Leader(LeaderRecord),
    /// The live leader record, if any.
    MaybeLeader(Option<LeaderRecord>),
    /// The last claimed fire time, if any.
    LastFired(Option<f64>),
    /// A write lease granted, or `None` when readers or another writer hold the lock.
    Write(Option<WriteGrant>),
    /// A read-write lock's state.
    Rw(RwState),
    /// A semaphore acquire's answer: the permit granted, if any, and the stored count.
    Permit(PermitAnswer),
    /// A semaphore's state.
    Sem(SemState),
    /// A lock acquire or renewal refused by a revocation's placeholder: the revoked lease's
    /// fence and why. The holder of that fence has lost its lease to the revocation; any other
    /// token reads it as the lock held.
    Revoked {
        /// The revoked lease's fence.
        fence: FencingToken,
        /// Why it was revoked.
        reason: RevokeReason,
    },
    /// What a [`StoreOp::LockRevoke`] did; `None` when no lease was live.
    Revocation(Option<Revocation>),
}

impl StoreReply {
    /// The kind of answer, for error messages (never the content, which may hold a token).
    pub fn shape(&self) -> &'static str {
        match self {
            Self::Fence(_) => "a fencing token",
            Self::Flag(_) => "a yes/no answer",
            Self::Leader(_) => "a leader record",
            Self::MaybeLeader(_) => "an optional leader record",
            Self::LastFired(_) => "a fire time",
            Self::Write(_) => "a write grant",
            Self::Rw(_) => "a read-write lock state",
            Self::Permit(_) => "a permit",
            Self::Sem(_) => "a semaphore state",
            Self::Revoked { .. } => "a revoked lease",
            Self::Revocation(_) => "a revocation",
        }
    }
}

/// A store operation a machine wants run, with the id its reply must carry and the instant after
/// which the machine stops waiting for it (`backend_timeout` after it was issued).
#[derive(Clone, Debug, PartialEq)]
pub struct StoreRequest {
    /// Names the reply.
    pub id: OpId,
    /// What to do.
    pub op: StoreOp,
    /// When the machine gives up on it.
    pub deadline: Timestamp,
}
