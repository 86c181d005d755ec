//! What a store must do for the driver, and grelmicro's backend calls both ways.
//!
//! The driver makes one call: [`LockBackend::execute`] (and [`LeaderElectionBackend::execute`])
//! with a [`StoreOp`], plus the optional pushes: [`LockBackend::wakeup`] (a release, for waiters
//! that try again) and [`LockBackend::turn`] / [`LockBackend::take_grant`] (the store's hand-off
//! to a queued waiter). A store written as
//! grelmicro's four calls (`acquire`, `release`, `locked`, `owned`) implements
//! [`LockOperations`] with plain async methods and is a [`LockBackend`] by that; code that wants
//! to make those calls on any backend (tests, tools) uses [`LockCalls`].

use std::future::Future;
use std::time::Duration;

use tenure_core::{
    BackendError, BackendErrorKind, Error, FencingToken, HolderDetails, Key, LeaderRecord, Metadata, Revocation,
    RevokeReason, StoreOp, StoreReply, Token,
};

use super::{BackendFuture, Inspect, LockState, ReadWriteLockBackend, SemaphoreBackend, Wakeup};

/// Locks with fencing tokens (spec §5.1), as the driver uses them (`Lock`, `TaskLock`).
pub trait LockBackend: Send + Sync + 'static {
    /// Runs one lock operation: [`StoreOp::LockAcquire`] (answers [`StoreReply::Fence`]),
    /// [`StoreOp::LockRelease`], [`StoreOp::LockLocked`] and [`StoreOp::LockOwned`] (answer
    /// [`StoreReply::Flag`]), with the semantics of [`tenure_core::StoreModel`].
    fn execute(&self, op: StoreOp) -> BackendFuture<'static, StoreReply>;

    /// A wake-up for the next release of `name`, if the store can push one (DESIGN §4.5);
    /// without one, waiters poll at `retry_interval`.
    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        let _ = name;
        None
    }

    /// The answer to `op` if the backend can give it without waiting (the memory backend), so
    /// the driver needs no future, timer or allocation for it. The default: `None`.
    fn answer_now(&self, op: &StoreOp) -> Option<Result<StoreReply, BackendError>> {
        let _ = op;
        None
    }

    /// A wake-up for `token`'s turn on `name`, if the store keeps its waiters in a queue and
    /// hands the lock to the oldest itself ([`StoreOp::LockAcquireQueued`]; DESIGN §4.5): it
    /// fires when the store pushes that it handed the lock to `token` (then
    /// [`LockBackend::take_grant`] gives the fencing token), or when `name` is released without
    /// a hand-off. `None` (the default): the store keeps no queue, and waiters use
    /// [`LockBackend::wakeup`].
    fn turn(&self, name: &str, token: &str) -> Option<Wakeup> {
        let _ = (name, token);
        None
    }

    /// The fencing token the store handed `token` on `name`, once its push arrived (given
    /// once).
    fn take_grant(&self, name: &str, token: &str) -> Option<FencingToken> {
        let _ = (name, token);
        None
    }

    /// The state of the lock key `key` (`lock:cart`, `tasklock:nightly`) for people
    /// (`Lock::state`): its fence, holder, expiry and holder details; `None` if the store cannot
    /// tell (the default). A store that lists its holders answers with [`state_of`].
    fn lock_state(&self, key: &str) -> Option<BackendFuture<'static, Option<LockState>>> {
        let _ = key;
        None
    }

    /// The same store's read-write locks, if it serves them (so that a store serving every
    /// kind fills a `Coordination`'s read-write lock slot too). The default: `None`.
    fn read_write(&self) -> Option<std::sync::Arc<dyn ReadWriteLockBackend>> {
        None
    }

    /// The same store's semaphores, if it serves them (see [`LockBackend::read_write`]).
    fn semaphore(&self) -> Option<std::sync::Arc<dyn SemaphoreBackend>> {
        None
    }
}

/// Leader election (spec §5.2), as the driver uses it.
pub trait LeaderElectionBackend: Send + Sync + 'static {
    /// Runs one election operation: [`StoreOp::LeaderAcquireOrRenew`] (answers
    /// [`StoreReply::Leader`]), [`StoreOp::LeaderRelease`] ([`StoreReply::Flag`]) and
    /// [`StoreOp::LeaderGet`] ([`StoreReply::MaybeLeader`]).
    fn execute(&self, op: StoreOp) -> BackendFuture<'static, StoreReply>;

    /// A wake-up for the next release of `name`, if the store can push one.
    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        let _ = name;
        None
    }

    /// The answer to `op` if the backend can give it without waiting (see
    /// [`LockBackend::answer_now`]).
    fn answer_now(&self, op: &StoreOp) -> Option<Result<StoreReply, BackendError>> {
        let _ = op;
        None
    }
}

/// A lock store written as grelmicro's four calls, with plain async methods; names arrive with
/// their kind prefix (`lock:cart`), tokens are opaque text. Every `LockOperations` is a
/// [`LockBackend`].
pub trait LockOperations: Clone + Send + Sync + 'static {
    /// Takes `name` for `lease` if it is free (with a new fencing token) or renews it if `token`
    /// holds it (same fencing token); `None` if another token holds it.
    fn acquire(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
    ) -> impl Future<Output = Result<Option<FencingToken>, BackendError>> + Send;

    /// Frees `name` if `token` holds a live lease; true iff it did.
    fn release(&self, name: &str, token: &str) -> impl Future<Output = Result<bool, BackendError>> + Send;

    /// Whether any token holds a live lease on `name`.
    fn locked(&self, name: &str) -> impl Future<Output = Result<bool, BackendError>> + Send;

    /// Whether `token` holds a live lease on `name`.
    fn owned(&self, name: &str, token: &str) -> impl Future<Output = Result<bool, BackendError>> + Send;

    /// A wake-up for the next release of `name`, if the store can push one.
    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        let _ = name;
        None
    }

    /// A queued acquire ([`StoreOp::LockAcquireQueued`]): like `acquire`, but a refused
    /// `token` keeps a place in the name's queue for `wait`. The default, for a store that keeps
    /// no queue: `acquire`.
    fn acquire_queued(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        wait: Duration,
    ) -> impl Future<Output = Result<Option<FencingToken>, BackendError>> + Send {
        let _ = wait;
        self.acquire(name, token, lease)
    }

    /// `acquire`, answered as [`StoreReply::Fence`], or as [`StoreReply::Revoked`] when a
    /// revocation's placeholder refuses it ([`refused`] tells which); a new grant keeps the
    /// holder's `details` beside it ([`HolderDetails`]). The default, for a store that can neither
    /// revoke nor keep details: `acquire`.
    fn acquire_answer(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        details: Option<&HolderDetails>,
    ) -> impl Future<Output = Result<StoreReply, BackendError>> + Send {
        let _ = details;
        async move { self.acquire(name, token, lease).await.map(StoreReply::Fence) }
    }

    /// `acquire_queued`, answered as [`LockOperations::acquire_answer`] is; a waiter's `details`
    /// are kept with its place, and beside the grant if the lock is handed to it. The default:
    /// `acquire_queued`.
    fn acquire_queued_answer(
        &self,
        name: &str,
        token: &str,
        (lease, wait): (Duration, Duration),
        details: Option<&HolderDetails>,
    ) -> impl Future<Output = Result<StoreReply, BackendError>> + Send {
        let _ = details;
        async move { self.acquire_queued(name, token, lease, wait).await.map(StoreReply::Fence) }
    }

    /// Revokes the live lease of `name` ([`StoreOp::LockRevoke`]): in one atomic step, the
    /// fence is advanced and a placeholder ([`RevokeReason::placeholder`]) holds the lock under
    /// it until the revoked lease would have ended. `None` when no lease is live. The default:
    /// the store cannot revoke.
    fn revoke(
        &self,
        name: &str,
        reason: &RevokeReason,
    ) -> impl Future<Output = Result<Option<Revocation>, BackendError>> + Send {
        let _ = reason;
        let message = format!("{name}: this store cannot revoke a lease");
        async move { Err(BackendError::new(BackendErrorKind::Rejected, message)) }
    }

    /// See [`LockBackend::turn`].
    fn turn(&self, name: &str, token: &str) -> Option<Wakeup> {
        let _ = (name, token);
        None
    }

    /// See [`LockBackend::take_grant`].
    fn take_grant(&self, name: &str, token: &str) -> Option<FencingToken> {
        let _ = (name, token);
        None
    }

    /// See [`LockBackend::lock_state`].
    fn lock_state(&self, key: &str) -> Option<BackendFuture<'static, Option<LockState>>> {
        let _ = key;
        None
    }

    /// See [`LockBackend::read_write`].
    fn read_write(&self) -> Option<std::sync::Arc<dyn ReadWriteLockBackend>> {
        None
    }

    /// See [`LockBackend::semaphore`].
    fn semaphore(&self) -> Option<std::sync::Arc<dyn SemaphoreBackend>> {
        None
    }
}

impl<T: LockOperations> LockBackend for T {
    fn execute(&self, op: StoreOp) -> BackendFuture<'static, StoreReply> {
        let store = self.clone();
        Box::pin(async move {
            match op {
                StoreOp::LockAcquire { key, token, lease, details } => {
                    store.acquire_answer(key.as_str(), token.as_str(), lease, details.as_ref()).await
                }
                StoreOp::LockAcquireQueued { key, token, lease, wait, details } => {
                    store.acquire_queued_answer(key.as_str(), token.as_str(), (lease, wait), details.as_ref()).await
                }
                StoreOp::LockRevoke { key, reason } => {
                    store.revoke(key.as_str(), &reason).await.map(StoreReply::Revocation)
                }
                StoreOp::LockRelease { key, token } => {
                    store.release(key.as_str(), token.as_str()).await.map(StoreReply::Flag)
                }
                StoreOp::LockLocked { key } => store.locked(key.as_str()).await.map(StoreReply::Flag),
                StoreOp::LockOwned { key, token } => {
                    store.owned(key.as_str(), token.as_str()).await.map(StoreReply::Flag)
                }
                other => Err(unsupported("a lock backend", &other)),
            }
        })
    }

    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        LockOperations::wakeup(self, name)
    }

    fn turn(&self, name: &str, token: &str) -> Option<Wakeup> {
        LockOperations::turn(self, name, token)
    }

    fn take_grant(&self, name: &str, token: &str) -> Option<FencingToken> {
        LockOperations::take_grant(self, name, token)
    }
    fn lock_state(&self, key: &str) -> Option<BackendFuture<'static, Option<LockState>>> {
        LockOperations::lock_state(self, key)
    }
    fn read_write(&self) -> Option<std::sync::Arc<dyn ReadWriteLockBackend>> {
        LockOperations::read_write(self)
    }
    fn semaphore(&self) -> Option<std::sync::Arc<dyn SemaphoreBackend>> {
        LockOperations::semaphore(self)
    }
}

/// An election store written as grelmicro's three calls. Every `LeaderElectionOperations` is a
/// [`LeaderElectionBackend`].
pub trait LeaderElectionOperations: Clone + Send + Sync + 'static {
    /// Acquires or renews leadership of `name` for `token`; the caller leads iff the returned
    /// record's holder is `token`.
    fn acquire_or_renew(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        metadata: &Metadata,
    ) -> impl Future<Output = Result<LeaderRecord, BackendError>> + Send;

    /// `acquire_or_renew`, keeping the worker's `details` beside a term the call begins
    /// ([`HolderDetails`]; a renewal writes nothing). The default, for a store that keeps no
    /// details: `acquire_or_renew`.
    fn acquire_or_renew_with_details(
        &self,
        name: &str,
        token: &str,
        (lease, metadata): (Duration, &Metadata),
        details: Option<&HolderDetails>,
    ) -> impl Future<Output = Result<LeaderRecord, BackendError>> + Send {
        let _ = details;
        self.acquire_or_renew(name, token, lease, metadata)
    }

    /// Deletes the record if `token` holds a live lease; true iff it did.
    fn release(&self, name: &str, token: &str) -> impl Future<Output = Result<bool, BackendError>> + Send;

    /// The live record, if any.
    fn get(&self, name: &str) -> impl Future<Output = Result<Option<LeaderRecord>, BackendError>> + Send;

    /// A wake-up for the next release of `name`, if the store can push one.
    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        let _ = name;
        None
    }
}

impl<T: LeaderElectionOperations> LeaderElectionBackend for T {
    fn execute(&self, op: StoreOp) -> BackendFuture<'static, StoreReply> {
        let store = self.clone();
        Box::pin(async move {
            match op {
                StoreOp::LeaderAcquireOrRenew { key, token, lease, metadata, details } => store
                    .acquire_or_renew_with_details(key.as_str(), token.as_str(), (lease, &metadata), details.as_ref())
                    .await
                    .map(StoreReply::Leader),
                StoreOp::LeaderRelease { key, token } => {
                    store.release(key.as_str(), token.as_str()).await.map(StoreReply::Flag)
                }
                StoreOp::LeaderGet { key } => store.get(key.as_str()).await.map(StoreReply::MaybeLeader),
                other => Err(unsupported("a leader election backend", &other)),
            }
        })
    }

    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        LeaderElectionOperations::wakeup(self, name)
    }
}

/// grelmicro's four lock calls on any [`LockBackend`], and Tenure's queued acquire, each one
/// [`LockBackend::execute`]; names with their kind prefix (`lock:cart`). A name or token that is
/// not valid fails as [`BackendErrorKind::Rejected`], an answer of the wrong shape as
/// [`BackendErrorKind::Protocol`].
pub trait LockCalls {
    /// See [`LockOperations::acquire`].
    fn acquire(&self, name: &str, token: &str, lease: Duration) -> BackendFuture<'static, Option<FencingToken>>;
    /// See [`LockOperations::acquire_queued`].
    fn acquire_queued(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        wait: Duration,
    ) -> BackendFuture<'static, Option<FencingToken>>;
    /// See [`LockOperations::release`].
    fn release(&self, name: &str, token: &str) -> BackendFuture<'static, bool>;
    /// See [`LockOperations::locked`].
    fn locked(&self, name: &str) -> BackendFuture<'static, bool>;
    /// See [`LockOperations::owned`].
    fn owned(&self, name: &str, token: &str) -> BackendFuture<'static, bool>;
}

impl<B: LockBackend + ?Sized> LockCalls for B {
    fn acquire(&self, name: &str, token: &str, lease: Duration) -> BackendFuture<'static, Option<FencingToken>> {
        let op = Key::parse(name)
            .and_then(|key| Ok(StoreOp::LockAcquire { key, token: Token::new(token)?, lease, details: None }));
        call(|op| self.execute(op), op, fence)
    }

    fn acquire_queued(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        wait: Duration,
    ) -> BackendFuture<'static, Option<FencingToken>> {
        let op = Key::parse(name).and_then(|key| {
            Ok(StoreOp::LockAcquireQueued { key, token: Token::new(token)?, lease, wait, details: None })
        });
        call(|op| self.execute(op), op, fence)
    }

    fn release(&self, name: &str, token: &str) -> BackendFuture<'static, bool> {
        let op = Key::parse(name).and_then(|key| Ok(StoreOp::LockRelease { key, token: Token::new(token)? }));
        call(|op| self.execute(op), op, flag)
    }

    fn locked(&self, name: &str) -> BackendFuture<'static, bool> {
        call(|op| self.execute(op), Key::parse(name).map(|key| StoreOp::LockLocked { key }), flag)
    }

    fn owned(&self, name: &str, token: &str) -> BackendFuture<'static, bool> {
        let op = Key::parse(name).and_then(|key| Ok(StoreOp::LockOwned { key, token: Token::new(token)? }));
        call(|op| self.execute(op), op, flag)
    }
}

/// grelmicro's three election calls on any [`LeaderElectionBackend`] (see [`LockCalls`]).
pub trait LeaderElectionCalls {
    /// See [`LeaderElectionOperations::acquire_or_renew`].
    fn acquire_or_renew(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        metadata: &Metadata,
    ) -> BackendFuture<'static, LeaderRecord>;
    /// See [`LeaderElectionOperations::release`].
    fn release(&self, name: &str, token: &str) -> BackendFuture<'static, bool>;
    /// See [`LeaderElectionOperations::get`].
    fn get(&self, name: &str) -> BackendFuture<'static, Option<LeaderRecord>>;
}

impl<B: LeaderElectionBackend + ?Sized> LeaderElectionCalls for B {
    fn acquire_or_renew(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        metadata: &Metadata,
    ) -> BackendFuture<'static, LeaderRecord> {
        let op = Key::parse(name).and_then(|key| {
            let metadata = std::sync::Arc::new(metadata.clone());
            Ok(StoreOp::LeaderAcquireOrRenew { key, token: Token::new(token)?, lease, metadata, details: None })
        });
        call(|op| self.execute(op), op, |reply| if let StoreReply::Leader(r) = reply { Some(r) } else { None })
    }

    fn release(&self, name: &str, token: &str) -> BackendFuture<'static, bool> {
        let op = Key::parse(name).and_then(|key| Ok(StoreOp::LeaderRelease { key, token: Token::new(token)? }));
        call(|op| self.execute(op), op, flag)
    }

    fn get(&self, name: &str) -> BackendFuture<'static, Option<LeaderRecord>> {
        let op = Key::parse(name).map(|key| StoreOp::LeaderGet { key });
        call(|op| self.execute(op), op, |reply| if let StoreReply::MaybeLeader(r) = reply { Some(r) } else { None })
    }
}

/// Runs `op` through `execute` and takes its answer in `shape`.
pub(super) fn call<T: Send + 'static>(
    execute: impl FnOnce(StoreOp) -> BackendFuture<'static, StoreReply>,
    op: Result<StoreOp, Error>,
    shape: fn(StoreReply) -> Option<T>,
) -> BackendFuture<'static, T> {
    let reply = match op {
        Ok(op) => execute(op),
        Err(e) => {
            return Box::pin(std::future::ready(Err(BackendError::new(BackendErrorKind::Rejected, e.to_string()))));
        }
    };
    Box::pin(async move {
        let reply = reply.await?;
        let what = reply.shape();
        shape(reply).ok_or_else(|| BackendError::new(BackendErrorKind::Protocol, format!("unexpected answer: {what}")))
    })
}

/// A store's answer to an acquire refused while `stored` holds the lock: [`StoreReply::Revoked`]
/// if `stored` is a revocation's placeholder, else [`StoreReply::Fence`]`(None)`.
pub fn refused(stored: Option<&str>) -> StoreReply {
    match stored.and_then(RevokeReason::of_placeholder) {
        Some((fence, reason)) => StoreReply::Revoked { fence, reason },
        None => StoreReply::Fence(None),
    }
}

/// The fence of an acquire's answer, for `acquire` written over `acquire_answer`: a refusal by a
/// placeholder is a refusal.
pub fn granted(reply: StoreReply) -> Result<Option<FencingToken>, BackendError> {
    match reply {
        StoreReply::Fence(fence) => Ok(fence),
        StoreReply::Revoked { .. } => Ok(None),
        other => Err(BackendError::new(BackendErrorKind::Protocol, format!("unexpected answer: {}", other.shape()))),
    }
}

#[allow(clippy::needless_pass_by_value)] // a `shape` of `call`, which hands the reply over
pub(super) fn flag(reply: StoreReply) -> Option<bool> {
    if let StoreReply::Flag(flag) = reply { Some(flag) } else { None }
}

/// The shape `call` takes for an acquire: a refusal by a revocation's placeholder is a refusal.
#[allow(clippy::needless_pass_by_value)] // the shape `call` takes, as `flag`
pub(super) fn fence(reply: StoreReply) -> Option<Option<FencingToken>> {
    match reply {
        StoreReply::Fence(fence) => Some(fence),
        StoreReply::Revoked { .. } => Some(None),
        _ => None,
    }
}

pub(super) fn unsupported(what: &str, op: &StoreOp) -> BackendError {
    BackendError::new(BackendErrorKind::Protocol, format!("{what} cannot run {}", op_name(op)))
}

fn op_name(op: &StoreOp) -> &'static str {
    match op {
        StoreOp::LockAcquire { .. } => "a lock acquire",
        StoreOp::LockAcquireQueued { .. } => "a queued lock acquire",
        StoreOp::LockRelease { .. } => "a lock release",
        StoreOp::LockLocked { .. } => "a locked check",
        StoreOp::LockOwned { .. } => "an owned check",
        StoreOp::LockRevoke { .. } => "a lock revocation",
        StoreOp::LeaderAcquireOrRenew { .. } => "a leader acquire_or_renew",
        StoreOp::LeaderRelease { .. } => "a leader release",
        StoreOp::LeaderGet { .. } => "a leader get",
        StoreOp::ScheduleClaim { .. } => "a schedule claim",
        StoreOp::ScheduleLastFired { .. } => "a schedule last_fired",
        StoreOp::RwAcquireRead { .. } => "a read acquire",
        StoreOp::RwAcquireWrite { .. } => "a write acquire",
        StoreOp::RwReleaseRead { .. } => "a read release",
        StoreOp::RwReleaseWrite { .. } => "a write release",
        StoreOp::RwCancelIntent { .. } => "a writer's intent withdrawal",
        StoreOp::RwDowngrade { .. } => "a downgrade",
        StoreOp::RwState { .. } => "a read-write lock state",
        StoreOp::RwOwnedRead { .. } => "a read owned check",
        StoreOp::RwOwnedWrite { .. } => "a write owned check",
        _ => "an unknown operation",
    }
}

/// [`LockBackend::lock_state`] of a store that lists its holders ([`Inspect`]).
pub fn state_of<I: Inspect + Clone>(store: &I, key: &str) -> Option<BackendFuture<'static, Option<LockState>>> {
    let (store, key) = (store.clone(), key.to_owned());
    Some(Box::pin(async move { Ok(store.lock_states(vec![key]).await?.into_iter().next()) }))
}
