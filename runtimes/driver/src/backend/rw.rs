//! Read-write locks (spec §5.4): what a store must do for the driver's `ReadWriteLock`, a store
//! written as grelmicro 0.44's nine calls ([`ReadWriteOperations`]), and those calls made on any
//! backend ([`ReadWriteCalls`]).

use std::future::Future;
use std::time::Duration;

use tenure_core::{BackendError, FencingToken, HolderDetails, Key, RwState, StoreOp, StoreReply, WriteGrant};

use super::contract::{call, fence, flag, unsupported};
use super::sem::with_token;
use super::{BackendFuture, Wakeup};

/// Read-write locks (spec §5.4), as the driver uses them (`ReadWriteLock`).
pub trait ReadWriteLockBackend: Send + Sync + 'static {
    /// Runs one read-write lock operation: [`StoreOp::RwAcquireRead`] and
    /// [`StoreOp::RwDowngrade`] (answer [`StoreReply::Fence`] with the generation),
    /// [`StoreOp::RwAcquireWrite`] ([`StoreReply::Write`]), [`StoreOp::RwState`]
    /// ([`StoreReply::Rw`]) and the releases, the intent's withdrawal and the ownership checks
    /// ([`StoreReply::Flag`]), with the semantics of [`tenure_core::StoreModel`].
    fn execute(&self, op: StoreOp) -> BackendFuture<'static, StoreReply>;

    /// A wake-up for the next release on `name` (a reader, a writer, or a writer's intent
    /// going), if the store can push one; without one, waiters poll at `retry_interval`.
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

/// A read-write lock store written as grelmicro 0.44's calls, with plain async methods; names
/// arrive with their kind prefix (`rwlock:doc`). Every `ReadWriteOperations` is a
/// [`ReadWriteLockBackend`]. [`tenure_core::StoreModel`]'s `rw_*` methods are the reference.
pub trait ReadWriteOperations: Clone + Send + Sync + 'static {
    /// A read lease for `token`, answering the generation it reads; `None` while a writer holds
    /// the lock or waits with a live intent (a token that reads already renews regardless).
    fn acquire_read(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
    ) -> impl Future<Output = Result<Option<FencingToken>, BackendError>> + Send;

    /// The write lease for `token` (renewed if it writes already); `None` while another writer
    /// or any reader holds a lease, keeping an intent for `lease` iff `intent`.
    fn acquire_write(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        intent: bool,
    ) -> impl Future<Output = Result<Option<WriteGrant>, BackendError>> + Send;

    /// `acquire_read`, keeping the reader's `details` beside a grant ([`HolderDetails`]; `None`
    /// on a renewal). The default, for a store that keeps no details: `acquire_read`.
    fn acquire_read_with_details(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        details: Option<&HolderDetails>,
    ) -> impl Future<Output = Result<Option<FencingToken>, BackendError>> + Send {
        let _ = details;
        self.acquire_read(name, token, lease)
    }

    /// `acquire_write`, keeping the writer's `details` beside a grant (see
    /// [`ReadWriteOperations::acquire_read_with_details`]). The default: `acquire_write`.
    fn acquire_write_with_details(
        &self,
        name: &str,
        token: &str,
        (lease, intent): (Duration, bool),
        details: Option<&HolderDetails>,
    ) -> impl Future<Output = Result<Option<WriteGrant>, BackendError>> + Send {
        let _ = details;
        self.acquire_write(name, token, lease, intent)
    }

    /// Drops `token`'s live read lease; true iff it held one.
    fn release_read(&self, name: &str, token: &str) -> impl Future<Output = Result<bool, BackendError>> + Send;

    /// Drops `token`'s live write lease, leaving the lock clean; true iff it held it.
    fn release_write(&self, name: &str, token: &str) -> impl Future<Output = Result<bool, BackendError>> + Send;

    /// Withdraws `token`'s live intent; true iff it had one.
    fn cancel_intent(&self, name: &str, token: &str) -> impl Future<Output = Result<bool, BackendError>> + Send;

    /// Turns `token`'s live write lease into a read lease of `lease` in one step, answering the
    /// generation; `None` if it holds no write lease.
    fn downgrade(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
    ) -> impl Future<Output = Result<Option<FencingToken>, BackendError>> + Send;

    /// The lock's state (an untouched name: generation 0, free).
    fn state(&self, name: &str) -> impl Future<Output = Result<RwState, BackendError>> + Send;

    /// Whether `token` holds a live read lease.
    fn owned_read(&self, name: &str, token: &str) -> impl Future<Output = Result<bool, BackendError>> + Send;

    /// Whether `token` holds the live write lease.
    fn owned_write(&self, name: &str, token: &str) -> impl Future<Output = Result<bool, BackendError>> + Send;

    /// A wake-up for the next release on `name`, if the store can push one.
    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        let _ = name;
        None
    }
}

impl<T: ReadWriteOperations> ReadWriteLockBackend for T {
    fn execute(&self, op: StoreOp) -> BackendFuture<'static, StoreReply> {
        let store = self.clone();
        Box::pin(async move {
            match op {
                StoreOp::RwAcquireRead { key, token, lease, details } => store
                    .acquire_read_with_details(key.as_str(), token.as_str(), lease, details.as_ref())
                    .await
                    .map(StoreReply::Fence),
                StoreOp::RwAcquireWrite { key, token, lease, intent, details } => store
                    .acquire_write_with_details(key.as_str(), token.as_str(), (lease, intent), details.as_ref())
                    .await
                    .map(StoreReply::Write),
                StoreOp::RwReleaseRead { key, token } => {
                    store.release_read(key.as_str(), token.as_str()).await.map(StoreReply::Flag)
                }
                StoreOp::RwReleaseWrite { key, token } => {
                    store.release_write(key.as_str(), token.as_str()).await.map(StoreReply::Flag)
                }
                StoreOp::RwCancelIntent { key, token } => {
                    store.cancel_intent(key.as_str(), token.as_str()).await.map(StoreReply::Flag)
                }
                StoreOp::RwDowngrade { key, token, lease } => {
                    store.downgrade(key.as_str(), token.as_str(), lease).await.map(StoreReply::Fence)
                }
                StoreOp::RwState { key } => store.state(key.as_str()).await.map(StoreReply::Rw),
                StoreOp::RwOwnedRead { key, token } => {
                    store.owned_read(key.as_str(), token.as_str()).await.map(StoreReply::Flag)
                }
                StoreOp::RwOwnedWrite { key, token } => {
                    store.owned_write(key.as_str(), token.as_str()).await.map(StoreReply::Flag)
                }
                other => Err(unsupported("a read-write lock backend", &other)),
            }
        })
    }

    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        ReadWriteOperations::wakeup(self, name)
    }
}

/// grelmicro 0.44's read-write lock calls on any [`ReadWriteLockBackend`], each one
/// [`ReadWriteLockBackend::execute`] (see [`super::LockCalls`]).
pub trait ReadWriteCalls {
    /// See [`ReadWriteOperations::acquire_read`].
    fn acquire_read(&self, name: &str, token: &str, lease: Duration) -> BackendFuture<'static, Option<FencingToken>>;
    /// See [`ReadWriteOperations::acquire_write`].
    fn acquire_write(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        intent: bool,
    ) -> BackendFuture<'static, Option<WriteGrant>>;
    /// See [`ReadWriteOperations::release_read`].
    fn release_read(&self, name: &str, token: &str) -> BackendFuture<'static, bool>;
    /// See [`ReadWriteOperations::release_write`].
    fn release_write(&self, name: &str, token: &str) -> BackendFuture<'static, bool>;
    /// See [`ReadWriteOperations::cancel_intent`].
    fn cancel_intent(&self, name: &str, token: &str) -> BackendFuture<'static, bool>;
    /// See [`ReadWriteOperations::downgrade`].
    fn downgrade(&self, name: &str, token: &str, lease: Duration) -> BackendFuture<'static, Option<FencingToken>>;
    /// See [`ReadWriteOperations::state`].
    fn state(&self, name: &str) -> BackendFuture<'static, RwState>;
    /// See [`ReadWriteOperations::owned_read`].
    fn owned_read(&self, name: &str, token: &str) -> BackendFuture<'static, bool>;
    /// See [`ReadWriteOperations::owned_write`].
    fn owned_write(&self, name: &str, token: &str) -> BackendFuture<'static, bool>;
}

impl<B: ReadWriteLockBackend + ?Sized> ReadWriteCalls for B {
    fn acquire_read(&self, name: &str, token: &str, lease: Duration) -> BackendFuture<'static, Option<FencingToken>> {
        let op = with_token(name, token, |key, token| StoreOp::RwAcquireRead { key, token, lease, details: None });
        call(|op| self.execute(op), op, fence)
    }

    fn acquire_write(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        intent: bool,
    ) -> BackendFuture<'static, Option<WriteGrant>> {
        let op =
            with_token(name, token, |key, token| StoreOp::RwAcquireWrite { key, token, lease, intent, details: None });
        call(|op| self.execute(op), op, |reply| if let StoreReply::Write(w) = reply { Some(w) } else { None })
    }

    fn release_read(&self, name: &str, token: &str) -> BackendFuture<'static, bool> {
        let op = with_token(name, token, |key, token| StoreOp::RwReleaseRead { key, token });
        call(|op| self.execute(op), op, flag)
    }

    fn release_write(&self, name: &str, token: &str) -> BackendFuture<'static, bool> {
        let op = with_token(name, token, |key, token| StoreOp::RwReleaseWrite { key, token });
        call(|op| self.execute(op), op, flag)
    }

    fn cancel_intent(&self, name: &str, token: &str) -> BackendFuture<'static, bool> {
        let op = with_token(name, token, |key, token| StoreOp::RwCancelIntent { key, token });
        call(|op| self.execute(op), op, flag)
    }

    fn downgrade(&self, name: &str, token: &str, lease: Duration) -> BackendFuture<'static, Option<FencingToken>> {
        let op = with_token(name, token, |key, token| StoreOp::RwDowngrade { key, token, lease });
        call(|op| self.execute(op), op, fence)
    }

    fn state(&self, name: &str) -> BackendFuture<'static, RwState> {
        let op = Key::parse(name).map(|key| StoreOp::RwState { key });
        call(|op| self.execute(op), op, |reply| if let StoreReply::Rw(s) = reply { Some(s) } else { None })
    }

    fn owned_read(&self, name: &str, token: &str) -> BackendFuture<'static, bool> {
        let op = with_token(name, token, |key, token| StoreOp::RwOwnedRead { key, token });
        call(|op| self.execute(op), op, flag)
    }

    fn owned_write(&self, name: &str, token: &str) -> BackendFuture<'static, bool> {
        let op = with_token(name, token, |key, token| StoreOp::RwOwnedWrite { key, token });
        call(|op| self.execute(op), op, flag)
    }
}
