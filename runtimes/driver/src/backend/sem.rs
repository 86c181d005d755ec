//! Fenced semaphores: what a store must do for the driver's `Semaphore`, a store written as four
//! plain calls ([`SemaphoreOperations`]), and those calls made on any backend
//! ([`SemaphoreCalls`]).

use std::future::Future;
use std::time::Duration;

use tenure_core::{BackendError, HolderDetails, Key, PermitAnswer, SemState, StoreOp, StoreReply, Token};

use super::contract::{call, flag, unsupported};
use super::{BackendFuture, Wakeup};

/// Fenced semaphores, as the driver uses them (`Semaphore`).
pub trait SemaphoreBackend: Send + Sync + 'static {
    /// Runs one semaphore operation: [`StoreOp::SemAcquire`] (answers [`StoreReply::Permit`]),
    /// [`StoreOp::SemRelease`] and [`StoreOp::SemOwned`] ([`StoreReply::Flag`]) and
    /// [`StoreOp::SemState`] ([`StoreReply::Sem`]), with the semantics of
    /// [`tenure_core::StoreModel`]'s `sem_*` methods.
    fn execute(&self, op: StoreOp) -> BackendFuture<'static, StoreReply>;

    /// A wake-up for the next release of a permit of `name`, if the store can push one; without
    /// one, waiters poll at `retry_interval`.
    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        let _ = name;
        None
    }

    /// The answer to `op` if the backend can give it without waiting (see
    /// [`super::LockBackend::answer_now`]).
    fn answer_now(&self, op: &StoreOp) -> Option<Result<StoreReply, BackendError>> {
        let _ = op;
        None
    }
}

/// A semaphore store written as four plain async calls; names arrive with their kind prefix
/// (`semaphore:pool`). Every `SemaphoreOperations` is a [`SemaphoreBackend`].
/// [`tenure_core::StoreModel`]'s `sem_*` methods are the reference.
pub trait SemaphoreOperations: Clone + Send + Sync + 'static {
    /// A permit of `name` for `token`, for `lease`: renewed (same fencing token) if it holds
    /// one; granted with the next fencing token if a permit is free for it (fewer holders than
    /// `permits`, and the waiters ahead of it leave one); else refused, keeping `token`'s place
    /// in line for `wait` if given. Refused with the stored count if the name is held or waited
    /// for under another one.
    fn acquire(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        permits: u32,
        wait: Option<Duration>,
    ) -> impl Future<Output = Result<PermitAnswer, BackendError>> + Send;

    /// `acquire`, keeping the holder's `details` beside a grant ([`HolderDetails`]; `None` on a
    /// renewal). The default, for a store that keeps no details: `acquire`.
    fn acquire_with_details(
        &self,
        name: &str,
        token: &str,
        (lease, permits, wait): (Duration, u32, Option<Duration>),
        details: Option<&HolderDetails>,
    ) -> impl Future<Output = Result<PermitAnswer, BackendError>> + Send {
        let _ = details;
        self.acquire(name, token, lease, permits, wait)
    }

    /// Drops `token`'s permit and its place in line; true iff it held a live permit.
    fn release(&self, name: &str, token: &str) -> impl Future<Output = Result<bool, BackendError>> + Send;

    /// Whether `token` holds a live permit.
    fn owned(&self, name: &str, token: &str) -> impl Future<Output = Result<bool, BackendError>> + Send;

    /// The semaphore's state (nobody holding or waiting: no count, 0).
    fn state(&self, name: &str) -> impl Future<Output = Result<SemState, BackendError>> + Send;

    /// A wake-up for the next release of a permit of `name`, if the store can push one.
    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        let _ = name;
        None
    }
}

impl<T: SemaphoreOperations> SemaphoreBackend for T {
    fn execute(&self, op: StoreOp) -> BackendFuture<'static, StoreReply> {
        let store = self.clone();
        Box::pin(async move {
            match op {
                StoreOp::SemAcquire { key, token, lease, permits, wait, details } => store
                    .acquire_with_details(key.as_str(), token.as_str(), (lease, permits, wait), details.as_ref())
                    .await
                    .map(StoreReply::Permit),
                StoreOp::SemRelease { key, token } => {
                    store.release(key.as_str(), token.as_str()).await.map(StoreReply::Flag)
                }
                StoreOp::SemOwned { key, token } => {
                    store.owned(key.as_str(), token.as_str()).await.map(StoreReply::Flag)
                }
                StoreOp::SemState { key } => store.state(key.as_str()).await.map(StoreReply::Sem),
                other => Err(unsupported("a semaphore backend", &other)),
            }
        })
    }

    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        SemaphoreOperations::wakeup(self, name)
    }
}

/// The semaphore calls on any [`SemaphoreBackend`], each one [`SemaphoreBackend::execute`] (see
/// [`super::LockCalls`]).
pub trait SemaphoreCalls {
    /// See [`SemaphoreOperations::acquire`].
    fn acquire(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        permits: u32,
        wait: Option<Duration>,
    ) -> BackendFuture<'static, PermitAnswer>;
    /// See [`SemaphoreOperations::release`].
    fn release(&self, name: &str, token: &str) -> BackendFuture<'static, bool>;
    /// See [`SemaphoreOperations::owned`].
    fn owned(&self, name: &str, token: &str) -> BackendFuture<'static, bool>;
    /// See [`SemaphoreOperations::state`].
    fn state(&self, name: &str) -> BackendFuture<'static, SemState>;
}

impl<B: SemaphoreBackend + ?Sized> SemaphoreCalls for B {
    fn acquire(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        permits: u32,
        wait: Option<Duration>,
    ) -> BackendFuture<'static, PermitAnswer> {
        let op = with_token(name, token, |key, token| StoreOp::SemAcquire {
            key,
            token,
            lease,
            permits,
            wait,
            details: None,
        });
        call(|op| self.execute(op), op, |reply| if let StoreReply::Permit(p) = reply { Some(p) } else { None })
    }

    fn release(&self, name: &str, token: &str) -> BackendFuture<'static, bool> {
        let op = with_token(name, token, |key, token| StoreOp::SemRelease { key, token });
        call(|op| self.execute(op), op, flag)
    }

    fn owned(&self, name: &str, token: &str) -> BackendFuture<'static, bool> {
        let op = with_token(name, token, |key, token| StoreOp::SemOwned { key, token });
        call(|op| self.execute(op), op, flag)
    }

    fn state(&self, name: &str) -> BackendFuture<'static, SemState> {
        let op = Key::parse(name).map(|key| StoreOp::SemState { key });
        call(|op| self.execute(op), op, |reply| if let StoreReply::Sem(s) = reply { Some(s) } else { None })
    }
}

/// `op` made from a name and a token, either refused as invalid.
pub(super) fn with_token(
    name: &str,
    token: &str,
    op: impl FnOnce(Key, Token) -> StoreOp,
) -> Result<StoreOp, tenure_core::Error> {
    Ok(op(Key::parse(name)?, Token::new(token)?))
}
