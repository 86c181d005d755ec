//! What a store holds, listed for people and tools (`tenure status`, `tenure exporter`): every
//! lock, task lock, read-write lock, semaphore and leader record under the store's prefix. Tokens
//! are capabilities: what shows them to people shows [`holder_worker`] of them.

use tenure_core::{FencingToken, LeaderRecord, WallTime};

use super::BackendFuture;
pub use crate::details::HolderInfo;

/// A lock name as a store holds it, for people and tools (`tenure status`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockState {
    /// The key, with its kind prefix (`lock:cart`, `tasklock:nightly`).
    pub key: String,
    /// The last fencing token issued for the name (kept after release), if any was.
    pub fence: Option<FencingToken>,
    /// The token of the live holder, if a lease is live. A token is a capability: show people
    /// [`holder_worker`] of it, not the token.
    pub holder: Option<String>,
    /// When the live lease ends, by the store's clock.
    pub expires_at: Option<WallTime>,
    /// Who holds the live lease, as its holder told the store ([`HolderInfo`]); `None` when no
    /// lease is live or its holder told nothing (a grelmicro process).
    pub details: Option<HolderInfo>,
    /// The waiters keeping a place in the store's line, first in line first; `None` where the
    /// store keeps no line for locks (its waiters poll).
    pub waiting: Option<Vec<Waiting>>,
}

/// One waiter in a lock's line ([`LockState::waiting`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waiting {
    /// The waiter's token (show people [`holder_worker`] of it).
    pub token: String,
    /// When it took its place, if the store keeps that.
    pub since: Option<WallTime>,
    /// What the waiter told the store, if anything.
    pub details: Option<HolderInfo>,
}

/// A live leader record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderState {
    /// The key (`leader:scheduler`).
    pub key: String,
    /// The record.
    pub record: LeaderRecord,
    /// Who leads, as the leader told the store when its term began (host, pid, program, purpose,
    /// since when); `None` where it told nothing (a grelmicro process, `etcdctl elect`).
    pub details: Option<HolderInfo>,
}

pub use tenure_core::holder_worker;

/// A read-write lock (`rwlock:doc`) or a semaphore (`semaphore:pool`) as a store holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedState {
    /// The key, with its kind prefix.
    pub key: String,
    /// The last fencing token issued: a read-write lock's generation (its last writer's token),
    /// a semaphore's last permit's; `None` if none was.
    pub fence: Option<FencingToken>,
    /// The live leases, in the order of their tokens.
    pub holders: Vec<Holding>,
    /// The tokens waiting with a place kept in the store, first in line first (a read-write lock's
    /// waiting writers, a semaphore's waiters); empty where nobody waits.
    pub waiters: Vec<String>,
    /// A semaphore's permit count, as stored; `None` for a read-write lock.
    pub permits: Option<u32>,
}

/// One live lease of a [`SharedState`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holding {
    /// The holder's token (show people [`holder_worker`] of it).
    pub token: String,
    /// Which side it holds.
    pub side: Side,
    /// When the lease ends, by the store's clock.
    pub expires_at: WallTime,
    /// Who holds it, as its holder told the store with the grant (host, pid, program, purpose,
    /// since when); `None` where it told nothing (a grelmicro process, a user-written store).
    pub details: Option<HolderInfo>,
}

/// The side a [`Holding`] holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// A reader of a read-write lock.
    Read,
    /// The writer of a read-write lock.
    Write,
    /// A permit of a semaphore.
    Permit,
}

impl Side {
    /// `read`, `write` or `permit`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Permit => "permit",
        }
    }
}

/// A store that can list what it holds.
pub trait Inspect: Send + Sync + 'static {
    /// The state of the lock keys `keys` that the store knows, or of every lock key when `keys`
    /// is empty; in key order.
    fn lock_states(&self, keys: Vec<String>) -> BackendFuture<'static, Vec<LockState>>;

    /// The live leader records of `keys`, or all of them when `keys` is empty; in key order.
    fn leader_states(&self, keys: Vec<String>) -> BackendFuture<'static, Vec<LeaderState>>;

    /// The read-write locks and semaphores of `keys` (`rwlock:…`, `semaphore:…`) that the store
    /// knows, or all of them when `keys` is empty; in key order. A name is known once acquired
    /// (its fencing counter stays) or while it has holders or waiters.
    fn shared_states(&self, keys: Vec<String>) -> BackendFuture<'static, Vec<SharedState>>;
}
