//! `Lock`: a distributed lock with fencing tokens (spec §1.3).

mod builder;
mod guard;
mod holder;
mod rw;
mod rw_holders;
mod sem;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

pub use builder::LockBuilder;
pub use guard::LockGuard;
pub use holder::LockHolder;
pub(crate) use holder::{ask, ask_answer, stopped};
pub use rw::{ReadGuard, ReadSide, ReadWriteLock, ReadWriteLockBuilder, WriteGuard, WriteSide};
pub use rw_holders::ReadWriteHolders;
pub use sem::{Semaphore, SemaphoreBuilder, SemaphoreGuard};

/// A store serving another primitive's operations (`$backend`), as the backend of lock holders
/// taking its leases: its operations, its wake-ups, no queue.
macro_rules! holders_backend {
    ($(#[$doc:meta])* $adapter:ident($backend:ident)) => {
        $(#[$doc])*
        struct $adapter(std::sync::Arc<dyn $backend>);

        impl crate::backend::LockBackend for $adapter {
            fn execute(&self, op: tenure_core::StoreOp) -> crate::backend::BackendFuture<'static, tenure_core::StoreReply> {
                self.0.execute(op)
            }

            fn wakeup(&self, name: &str) -> Option<crate::backend::Wakeup> {
                self.0.wakeup(name)
            }

            fn answer_now(
                &self,
                op: &tenure_core::StoreOp,
            ) -> Option<Result<tenure_core::StoreReply, tenure_core::BackendError>> {
                self.0.answer_now(op)
            }
        }
    };
}

use holders_backend;
use tenure_core::config::ensure_same_worker;
use tenure_core::{Access, Error, FencingToken, HolderKind, Key, LockConfig, LockMachine, Name, StoreOp};

use crate::backend::LockBackend;
use crate::drive::{Cell, Execute, Reply};
use crate::runtime::Runtime;

/// The cause a binding's `LockLostError` gives for a machine's [`tenure_core::LossReason`].
pub(crate) fn loss_cause(reason: tenure_core::LossReason) -> tenure_core::LossCause {
    match reason {
        tenure_core::LossReason::NotOwned => tenure_core::LossCause::Lost,
        tenure_core::LossReason::Revoked(why) => tenure_core::LossCause::Revoked(why),
        // (Expired, and a reason this driver does not know)
        _ => tenure_core::LossCause::Expired,
    }
}

/// A distributed lock: one holder at a time per name across every process sharing the backend,
/// each acquisition carrying a fencing token that only grows.
///
/// `Lock` is a cheap handle (clone it freely); each acquisition is its own holder with its own
/// ownership token and yields a [`LockGuard`]. Two acquisitions never nest: a second `acquire`
/// on the same `Lock` — from the same task or another — is another contender and waits for the
/// first guard, like `tokio::sync::Mutex`. Code that needs grelmicro's per-task re-entrancy
/// check (the Python binding) keeps one [`LockHolder`] per task: a holder refuses a nested
/// acquire with [`Error::Reentrant`].
///
/// ```
/// # use tenure::{Lock, MemoryBackend};
/// # async fn example<R: tenure::Runtime>(runtime: R) -> Result<(), tenure::Error> {
/// let lock = Lock::builder("orders", runtime).backend(MemoryBackend::new()).build()?;
/// let guard = lock.acquire().await?;
/// println!("fencing token {}", guard.fencing_token()); // send it with every write
/// guard.release().await?;
/// # Ok(()) }
/// ```
pub struct Lock<R: Runtime> {
    pub(crate) shared: Arc<LockShared<R>>,
}

pub(crate) struct LockShared<R> {
    pub(crate) key: Key,
    /// The lease its holders take: a lock's, or one side of a read-write lock.
    pub(crate) access: Access,
    /// The key's name (sharing its text).
    name: Name,
    /// Shared by the two sides of a read-write lock.
    config: Arc<Mutex<Arc<LockConfig>>>,
    pub(crate) backend: Arc<dyn LockBackend>,
    pub(crate) runtime: R,
    /// Holders whose acquisition ended cleanly, kept to serve the next acquisition without
    /// making a new machine (each acquisition still gets a fresh token). A few at most, so that
    /// idle locks stay small.
    pub(crate) idle: Mutex<Vec<Arc<Cell<LockMachine>>>>,
    /// The highest fencing token any of its holders saw: each command starts from it, so a
    /// store answering lower (a failover that lost its last grants) is refused as
    /// `FenceRegression` whichever holder asks.
    seen_fence: Mutex<Option<FencingToken>>,
    /// Who holds, sent with acquires (a lock's; a side of a read-write lock sends none yet).
    pub(crate) details: crate::details::Details,
}

/// How many idle holders a lock keeps.
pub(crate) const IDLE_HOLDERS: usize = 2;

impl<R: Runtime> LockShared<R> {
    pub(crate) fn config(&self) -> Arc<LockConfig> {
        self.config.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The highest fencing token a holder of this lock saw.
    pub(crate) fn seen_fence(&self) -> Option<FencingToken> {
        *self.seen_fence.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Notes what a holder saw.
    pub(crate) fn saw_fence(&self, fence: Option<FencingToken>) {
        let mut seen = self.seen_fence.lock().unwrap_or_else(PoisonError::into_inner);
        *seen = (*seen).max(fence);
    }

    pub(crate) fn exec(&self) -> LockExec {
        LockExec(self.backend.clone())
    }
}

/// Runs lock operations on a lock backend.
#[derive(Clone)]
pub(crate) struct LockExec(pub(crate) Arc<dyn LockBackend>);

impl Execute for LockExec {
    fn answer_now(&self, op: &StoreOp) -> Option<Result<tenure_core::StoreReply, tenure_core::BackendError>> {
        crate::telemetry::answered_now(op, || self.0.answer_now(op))
    }

    fn execute(&self, op: StoreOp) -> Reply {
        let operation = op.name();
        crate::telemetry::timed(operation, self.0.execute(op))
    }
}

impl<R: Runtime> Lock<R> {
    /// Starts building the lock `name` on `runtime`. Unset settings come from `GREL_LOCK_*`
    /// environment variables, then grelmicro's defaults.
    pub fn builder(name: &str, runtime: R) -> LockBuilder<R> {
        LockBuilder::new(name, runtime)
    }

    /// The lock `name` with exactly `config` (no environment), on `backend`.
    pub fn from_config(
        name: &str,
        config: LockConfig,
        backend: Arc<dyn LockBackend>,
        runtime: R,
    ) -> Result<Self, Error> {
        let name = Name::new(name)?;
        Ok(Self::assemble(&name, config, backend, runtime))
    }

    pub(crate) fn assemble(name: &Name, config: LockConfig, backend: Arc<dyn LockBackend>, runtime: R) -> Self {
        let config = Arc::new(Mutex::new(Arc::new(config)));
        Self::assemble_as(name, Access::Exclusive, config, backend, runtime)
    }

    /// The lock `name` whose holders take `access` (a side of the read-write lock `name`, on
    /// its `rwlock:` key, unless exclusive).
    pub(crate) fn assemble_as(
        name: &Name,
        access: Access,
        config: Arc<Mutex<Arc<LockConfig>>>,
        backend: Arc<dyn LockBackend>,
        runtime: R,
    ) -> Self {
        let kind = match access {
            Access::Exclusive => tenure_core::KeyKind::Lock,
            Access::Read | Access::Write => tenure_core::KeyKind::ReadWriteLock,
            Access::Permit(_) => tenure_core::KeyKind::Semaphore,
        };
        let key = Key::new(kind, name);
        let name = key.name();
        let idle = Mutex::new(Vec::new());
        let seen_fence = Mutex::new(None);
        let details = crate::details::Details::default();
        Self { shared: Arc::new(LockShared { key, access, name, config, backend, runtime, idle, seen_fence, details }) }
    }

    /// Says what the lock is held for ("nightly export"): shown with the holder's host, pid and
    /// program by `tenure locks` and [`Lock::state`], from the next acquisition on. 1 to 256
    /// bytes, no control characters; `None` says nothing.
    pub fn set_purpose(&self, purpose: Option<&str>) -> Result<(), Error> {
        self.shared.details.set_purpose(purpose)
    }

    /// The purpose given ([`Lock::set_purpose`]).
    pub fn purpose(&self) -> Option<String> {
        self.shared.details.purpose().map(|p| p.to_string())
    }

    /// Who holds the lock now, for people: the holder's worker, fencing token and lease end,
    /// and what it told the store (host, pid, program, purpose, since when) — never its token.
    /// [`Error::LockedCheck`] if the store fails, does not answer within `backend_timeout`, or
    /// cannot tell (a user-written store). On a side of a read-write lock: not held (its state
    /// is the read-write lock's).
    pub async fn state(&self) -> Result<crate::LockInfo, Error> {
        let shared = &self.shared;
        crate::details::lock_info(&shared.runtime, &*shared.backend, &shared.key, self.backend_timeout()).await
    }

    /// The lock name.
    pub fn name(&self) -> &Name {
        &self.shared.name
    }

    /// The configuration in use.
    pub fn config(&self) -> LockConfig {
        (*self.shared.config()).clone()
    }

    /// Swaps the configuration: operations started from now on use it; those in flight keep
    /// theirs. The worker cannot change ([`Error::Settings`]); an equal configuration is a no-op.
    pub fn reconfigure(&self, config: LockConfig) -> Result<(), Error> {
        let mut current = self.shared.config.lock().unwrap_or_else(PoisonError::into_inner);
        if **current != config {
            ensure_same_worker(current.worker(), config.worker())?;
            *current = Arc::new(config);
        }
        Ok(())
    }

    /// A new holder (an async task's identity: `{worker}:task:{n}.{hex}`).
    pub fn holder(&self) -> LockHolder<R> {
        LockHolder::new(self.clone(), HolderKind::Task)
    }

    /// A new holder with a thread's identity (`{worker}:thread:{n}.{hex}`), for a binding that
    /// serves a thread both blocking and from an event loop (grelmicro's `do_thread_*`).
    pub fn thread_holder(&self) -> LockHolder<R> {
        LockHolder::new(self.clone(), HolderKind::Thread)
    }

    /// Waits until the lock is acquired, retrying every jittered `retry_interval` (and at once
    /// when the backend pushes a release).
    pub async fn acquire(&self) -> Result<LockGuard<R>, Error> {
        self.pooled_holder().acquire_guard(None).await
    }

    /// Like [`Lock::acquire`], giving up with [`Error::Timeout`] after `timeout` (the last
    /// attempt is made at the deadline). `Duration::ZERO` makes exactly one attempt.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<LockGuard<R>, Error> {
        self.pooled_holder().acquire_guard(Some(timeout)).await
    }

    /// One attempt: [`Error::WouldBlock`] if another holder has the lock.
    pub async fn acquire_nowait(&self) -> Result<LockGuard<R>, Error> {
        self.pooled_holder().acquire_nowait_guard().await
    }

    /// An idle holder left by an earlier acquisition, or a new one.
    fn pooled_holder(&self) -> LockHolder<R> {
        let idle = self.shared.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
        match idle {
            Some(cell) => LockHolder::from_cell(self.clone(), cell),
            None => self.holder(),
        }
    }

    /// Whether any holder has the lock ([`Error::LockedCheck`] if the store fails). On a side
    /// of a read-write lock: whether a writer or any reader holds it.
    pub async fn locked(&self) -> Result<bool, Error> {
        let (shared, now, timeout) = (&self.shared, self.now(), self.backend_timeout());
        if shared.access != Access::Exclusive {
            let (query, request) = tenure_core::Query::state(&shared.key, now, timeout);
            let answer = holder::ask_answer(&shared.runtime, &shared.exec(), query, request).await?;
            let state = tenure_core::Query::state_of(&answer).unwrap_or_default();
            return Ok(state.writing || state.readers > 0);
        }
        let (query, request) = tenure_core::Query::locked(&shared.key, now, timeout);
        holder::ask(&shared.runtime, &shared.exec(), query, request).await
    }

    pub(crate) fn now(&self) -> tenure_core::Timestamp {
        self.shared.runtime.now()
    }

    pub(crate) fn backend_timeout(&self) -> Duration {
        self.shared.config().backend_timeout()
    }
}

impl<R: Runtime> Clone for Lock<R> {
    fn clone(&self) -> Self {
        Self { shared: self.shared.clone() }
    }
}

impl<R: Runtime> std::fmt::Debug for Lock<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock").field("name", self.name()).finish_non_exhaustive()
    }
}
