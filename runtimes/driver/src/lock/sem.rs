//! `Semaphore`: at most N holders of one name at once, each a [`Lock`]'s holder on one of its
//! permits (one `semaphore:` key), with its own lease and fencing token.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use tenure_core::{Access, Error, LockConfig, LockConfigBuilder, Name, Query, SemState, SettingsError, WorkerId};

use super::builder::lock_config_setters;
use super::{Lock, LockGuard, LockHolder};
use crate::backend::{LockBackend, SemaphoreBackend};
use crate::builder::{Common, ResolveConfig, common_setters, config_setters};
use crate::runtime::Runtime;

/// A held permit of a [`Semaphore`]: the same guard as a lock's, with a fencing token of its
/// own (strictly greater than every permit granted before it on the name), `extend`, `release`,
/// `keep_alive` and `lost`.
pub type SemaphoreGuard<R> = LockGuard<R>;

/// A distributed counting semaphore with leases and fencing tokens: at most `permits` holders
/// of a name at once across every process sharing the backend. Each holder has its own lease
/// (kept alive like a lock's) and a fencing token that strictly increases per name across all
/// permits, so a resource that remembers the tokens it has seen can still turn away a holder
/// whose lease ran out. Waiters keep a place in the store's line and are served in arrival
/// order. The permit count is stored with the name: a contender asking for another count while
/// anyone holds or waits gets an error, not a second semaphore.
///
/// ```
/// # use tenure::{MemoryBackend, Semaphore};
/// # async fn example<R: tenure::Runtime>(runtime: R) -> Result<(), tenure::Error> {
/// let pool = Semaphore::builder("exports", 4, runtime).backend(MemoryBackend::new()).build()?;
/// let permit = pool.acquire().await?;
/// println!("one of 4 exports, fencing token {}", permit.fencing_token());
/// permit.release().await?;
/// # Ok(()) }
/// ```
pub struct Semaphore<R: Runtime> {
    lock: Lock<R>,
    permits: NonZeroU32,
}

impl<R: Runtime> Semaphore<R> {
    /// Starts building the semaphore `name` of `permits` permits on `runtime`. Unset settings
    /// come from `GREL_SEMAPHORE_*` environment variables, then a lock's defaults.
    pub fn builder(name: &str, permits: u32, runtime: R) -> SemaphoreBuilder<R> {
        SemaphoreBuilder { common: Common::new(name, runtime), config: LockConfig::builder(), permits, purpose: None }
    }

    /// The semaphore `name` of `permits` permits with exactly `config` (no environment), on
    /// `backend`.
    pub fn from_config(
        name: &str,
        permits: u32,
        config: LockConfig,
        backend: Arc<dyn SemaphoreBackend>,
        runtime: R,
    ) -> Result<Self, Error> {
        Ok(Self::assemble(&Name::new(name)?, permit_count(permits)?, config, backend, runtime))
    }

    fn assemble(
        name: &Name,
        permits: NonZeroU32,
        config: LockConfig,
        backend: Arc<dyn SemaphoreBackend>,
        runtime: R,
    ) -> Self {
        let backend: Arc<dyn LockBackend> = Arc::new(Permits(backend));
        let config = Arc::new(std::sync::Mutex::new(Arc::new(config)));
        let lock = Lock::assemble_as(name, Access::Permit(permits), config, backend, runtime);
        Self { lock, permits }
    }

    /// The semaphore's name.
    pub fn name(&self) -> &Name {
        self.lock.name()
    }

    /// How many holders it admits at once.
    pub fn permits(&self) -> u32 {
        self.permits.get()
    }

    /// The configuration in use.
    pub fn config(&self) -> LockConfig {
        self.lock.config()
    }

    /// Swaps the configuration (see [`Lock::reconfigure`]); the permit count stays.
    pub fn reconfigure(&self, config: LockConfig) -> Result<(), Error> {
        self.lock.reconfigure(config)
    }

    /// Says what the permits are held for ("export"): shown with each holder's host, pid and
    /// program by `tenure locks`, from the next acquisition on (see [`Lock::set_purpose`]).
    pub fn set_purpose(&self, purpose: Option<&str>) -> Result<(), Error> {
        self.lock.set_purpose(purpose)
    }

    /// The purpose given ([`Semaphore::set_purpose`]).
    pub fn purpose(&self) -> Option<String> {
        self.lock.purpose()
    }

    /// Waits until a permit is free for this holder, keeping a place in the store's line (and
    /// retrying every jittered `retry_interval`, or at once when the store pushes a release).
    pub async fn acquire(&self) -> Result<SemaphoreGuard<R>, Error> {
        self.lock.acquire().await
    }

    /// Like [`Self::acquire`], giving up with [`Error::Timeout`] after `timeout` (the place in
    /// line is given up with it).
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<SemaphoreGuard<R>, Error> {
        self.lock.acquire_timeout(timeout).await
    }

    /// One attempt, keeping no place: [`Error::WouldBlock`] if every permit is taken (or the
    /// waiters in line take the free ones).
    pub async fn acquire_nowait(&self) -> Result<SemaphoreGuard<R>, Error> {
        self.lock.acquire_nowait().await
    }

    /// A new holder (an async task's identity), for code that keeps one per task.
    pub fn holder(&self) -> LockHolder<R> {
        self.lock.holder()
    }

    /// A new holder with a thread's identity (see [`Lock::thread_holder`]).
    pub fn thread_holder(&self) -> LockHolder<R> {
        self.lock.thread_holder()
    }

    /// How many hold and wait now, the stored permit count and the last fencing token
    /// ([`Error::OwnedCheck`] if the store fails).
    pub async fn state(&self) -> Result<SemState, Error> {
        let shared = &self.lock.shared;
        let (query, request) = Query::state(&shared.key, self.lock.now(), self.lock.backend_timeout());
        let answer = super::ask_answer(&shared.runtime, &shared.exec(), query, request).await?;
        // (The query checked the shape of the answer: a semaphore's key asks a semaphore's state.)
        Ok(Query::sem_state_of(&answer).unwrap_or_default())
    }

    /// Whether no permit is free now: every one is held, or the waiters in line take the free
    /// ones (asyncio's `Semaphore.locked`; [`Error::LockedCheck`] if the store fails).
    pub async fn locked(&self) -> Result<bool, Error> {
        let state = self.state().await.map_err(|e| match e {
            Error::OwnedCheck { name, cause } => Error::LockedCheck { name, cause },
            other => other,
        })?;
        let taken = state.holders.saturating_add(state.waiting);
        Ok(state.permits > 0 && taken >= usize::try_from(state.permits).unwrap_or(usize::MAX))
    }
}

impl<R: Runtime> Clone for Semaphore<R> {
    fn clone(&self) -> Self {
        Self { lock: self.lock.clone(), permits: self.permits }
    }
}

impl<R: Runtime> std::fmt::Debug for Semaphore<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semaphore").field("name", self.name()).field("permits", &self.permits).finish_non_exhaustive()
    }
}

/// `permits` as a count, refusing zero.
fn permit_count(permits: u32) -> Result<NonZeroU32, Error> {
    NonZeroU32::new(permits)
        .ok_or_else(|| Error::Settings(SettingsError::field("permits", "a semaphore needs at least 1 permit, got 0")))
}

super::holders_backend!(
    /// The semaphore store as the lock holders' backend: its operations, its wake-ups, no queue.
    Permits(SemaphoreBackend)
);

/// Builds a [`Semaphore`]. Settings left unset come from the environment
/// (`GREL_SEMAPHORE_{NAME}_*`, then `GREL_SEMAPHORE_*`, gated by `GREL_ENV_LOAD`), then from a
/// lock's defaults.
#[must_use]
pub struct SemaphoreBuilder<R: Runtime> {
    common: Common<dyn SemaphoreBackend, R>,
    config: LockConfigBuilder,
    permits: u32,
    purpose: Option<String>,
}

impl<R: Runtime> SemaphoreBuilder<R> {
    common_setters!(SemaphoreBackend);

    lock_config_setters!();

    /// What the permits are held for, shown with their holders ([`Semaphore::set_purpose`]).
    pub fn purpose(mut self, purpose: &str) -> Self {
        self.purpose = Some(purpose.to_owned());
        self
    }

    /// Validates the name, the permit count (at least 1) and every setting and builds the
    /// semaphore.
    pub fn build(self) -> Result<Semaphore<R>, Error> {
        let permits = permit_count(self.permits)?;
        let built = self.common.build("Semaphore", SemaphoreConfig(self.config))?;
        let semaphore = Semaphore::assemble(&built.name, permits, built.config, built.backend, built.runtime);
        semaphore.set_purpose(self.purpose.as_deref())?;
        Ok(semaphore)
    }
}

impl<R: Runtime> std::fmt::Debug for SemaphoreBuilder<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SemaphoreBuilder")
            .field("name", &self.common.name)
            .field("permits", &self.permits)
            .finish_non_exhaustive()
    }
}

/// A lock's configuration, read from the semaphore's variables.
struct SemaphoreConfig(LockConfigBuilder);

impl ResolveConfig for SemaphoreConfig {
    type Config = LockConfig;

    fn resolve(
        self,
        name: &str,
        env: &tenure_core::EnvVars,
        options: &tenure_core::EnvOptions,
    ) -> Result<tenure_core::Resolved<LockConfig>, Error> {
        self.0.resolve_kind(LockConfig::SEMAPHORE_ENV_KIND, name, env, options, &mut rand::rng())
    }
}
