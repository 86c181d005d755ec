//! `Lock`: one holder (its own ownership token) per acquire, proven by the [`LockGuard`] it
//! gives, so concurrent acquires from one `Lock` contend as separate coroutines or threads do.

use std::sync::Arc;

use tenure_tokio::Tokio;

use crate::guard::LockGuard;
use tenure::binding::{self, Spelling, Unit};

use crate::store::Store;
use crate::{TenureError, runtime};

/// A lock's settings; what is not given comes from `GREL_LOCK_*` variables (unless
/// `env_load` is false) or grelmicro's defaults. Durations in seconds.
#[derive(Debug, Clone, Default, uniffi::Record)]
pub struct LockOptions {
    /// This process's identity (a random one if not given).
    #[uniffi(default = None)]
    pub worker: Option<String>,
    /// How long a lease lasts unless renewed (default 60 s).
    #[uniffi(default = None)]
    pub lease_duration: Option<f64>,
    /// Time between attempts while waiting (default 0.1 s).
    #[uniffi(default = None)]
    pub retry_interval: Option<f64>,
    /// Spread of each retry, a factor in [0, 1) (default 0.1).
    #[uniffi(default = None)]
    pub retry_jitter: Option<f64>,
    /// Bound on each store call (default 5 s).
    #[uniffi(default = None)]
    pub backend_timeout: Option<f64>,
    /// Prefix of the environment variables read (default `GREL_LOCK_{NAME}_`).
    #[uniffi(default = None)]
    pub env_prefix: Option<String>,
    /// Whether to read environment variables (default: `GREL_ENV_LOAD`, else yes).
    #[uniffi(default = None)]
    pub env_load: Option<bool>,
    /// What the lock, read-write lock or semaphore is held for, shown with each holder by
    /// `tenure locks` (and a lock's by `state()`); 1 to 256 bytes, given when it is made.
    #[uniffi(default = None)]
    pub purpose: Option<String>,
}

/// Who holds a lock or task lock now (`state()`); never its ownership token.
#[derive(Debug, Clone, uniffi::Record)]
pub struct LockState {
    pub name: String,
    pub held: bool,
    /// The last fencing token issued for the name (kept after release, except on etcd).
    pub fencing_token: Option<u64>,
    pub worker: Option<String>,
    pub expires_at: Option<std::time::SystemTime>,
    /// What the holder told the store; `None` when free or when it told nothing (grelmicro).
    pub holder: Option<HolderInfo>,
    /// Who waits, first in line first; `None` where the store keeps no line.
    pub waiting: Option<Vec<Waiter>>,
}

/// One in a lock's waiting line (never its token).
#[derive(Debug, Clone, uniffi::Record)]
pub struct Waiter {
    pub worker: String,
    pub since: Option<std::time::SystemTime>,
    pub details: Option<HolderInfo>,
}

/// What a holder told the store when it took the lock.
#[derive(Debug, Clone, uniffi::Record)]
pub struct HolderInfo {
    pub host: String,
    pub pid: u32,
    pub program: String,
    pub purpose: Option<String>,
    pub acquired_at: std::time::SystemTime,
}

impl LockState {
    pub(crate) fn of(info: tenure::LockInfo) -> Self {
        let at = |t: tenure::core::WallTime| {
            let micros = u64::try_from(t.as_unix_micros()).unwrap_or(0);
            std::time::UNIX_EPOCH + std::time::Duration::from_micros(micros)
        };
        let held = info.held();
        let holder = |d: tenure::HolderInfo| HolderInfo {
            host: d.host,
            pid: d.pid,
            program: d.program,
            purpose: d.purpose,
            acquired_at: at(d.acquired_at),
        };
        let waiting = info.waiting.map(|line| {
            line.into_iter()
                .map(|w| Waiter { worker: w.worker, since: w.since.map(at), details: w.details.map(holder) })
                .collect()
        });
        Self {
            held,
            fencing_token: info.fencing_token.map(|f| f.get()),
            worker: info.worker,
            expires_at: info.expires_at.map(at),
            holder: info.details.map(holder),
            waiting,
            name: info.name,
        }
    }
}

/// A lock's resolved settings, in seconds.
#[derive(Debug, Clone, uniffi::Record)]
pub struct LockSettings {
    pub worker: String,
    pub lease_duration: f64,
    pub retry_interval: f64,
    pub retry_jitter: f64,
    pub backend_timeout: f64,
}

/// A lock configuration's settings, in seconds (a lock's, a read-write lock's, a semaphore's).
pub(crate) fn settings_of(c: &tenure::LockConfig) -> LockSettings {
    let (worker, [lease_duration, retry_interval, retry_jitter, backend_timeout]) =
        binding::lock_settings(c, Unit::Seconds);
    LockSettings { worker, lease_duration, retry_interval, retry_jitter, backend_timeout }
}

/// The settings `o` gives, from seconds, checked: a settings error names the Kotlin option. (Its
/// purpose is the constructor's to set.)
pub(crate) fn lock_options(o: &LockOptions) -> Result<binding::LockOptions, TenureError> {
    let given = [o.lease_duration, o.retry_interval, o.backend_timeout];
    let given = binding::LockOptions::from_numbers(Unit::Seconds, Spelling::Camel, given)?;
    let (worker, env_prefix) = (o.worker.clone(), o.env_prefix.clone());
    Ok(binding::LockOptions { worker, retry_jitter: o.retry_jitter, env_prefix, env_load: o.env_load, ..given })
}

/// `current` with the durations and jitter of `options` (the worker stays), checked; a purpose is
/// refused (it is given when the primitive is made).
pub(crate) fn reconfigured(
    current: &tenure::LockConfig,
    options: &LockOptions,
) -> Result<tenure::LockConfig, TenureError> {
    binding::refuse_purpose(options.purpose.as_deref())?;
    Ok(lock_options(options)?.reconfigure(current)?)
}

/// The acquires of a primitive whose acquire gives one [`LockGuard`] (`Lock`, `Semaphore`):
/// waiting as long as it takes or up to a timeout (a plain number rather than an optional one:
/// an optional argument costs the JVM an allocated buffer per call), one attempt, `locked`; each
/// with a blocking twin. Cancelling a waiting call never leaves it taken.
macro_rules! acquires {
    ($primitive:ident, $label:literal) => {
        #[uniffi::export]
        impl $primitive {
            /// Acquires, waiting as long as it takes.
            pub async fn acquire(&self) -> Result<Arc<LockGuard>, TenureError> {
                Ok(LockGuard::new(self.inner.acquire().await?))
            }

            /// `acquire`, blocking the calling thread.
            pub fn acquire_blocking(&self) -> Result<Arc<LockGuard>, TenureError> {
                $crate::block(concat!($label, ".acquireBlocking"), self.acquire())
            }

            /// Acquires, waiting up to `timeout` seconds: `LockTimeout` if it does not come.
            pub async fn acquire_timeout(&self, timeout: f64) -> Result<Arc<LockGuard>, TenureError> {
                let timeout = $crate::seconds::seconds("timeout", timeout)?;
                Ok(LockGuard::new(self.inner.acquire_timeout(timeout).await?))
            }

            /// `acquire_timeout`, blocking the calling thread.
            pub fn acquire_timeout_blocking(&self, timeout: f64) -> Result<Arc<LockGuard>, TenureError> {
                $crate::block(concat!($label, ".acquireBlocking"), self.acquire_timeout(timeout))
            }

            /// One attempt: `WouldBlock` if it is taken.
            pub async fn try_acquire(&self) -> Result<Arc<LockGuard>, TenureError> {
                Ok(LockGuard::new(self.inner.acquire_nowait().await?))
            }

            /// `try_acquire`, blocking the calling thread.
            pub fn try_acquire_blocking(&self) -> Result<Arc<LockGuard>, TenureError> {
                $crate::block(concat!($label, ".tryAcquireBlocking"), self.try_acquire())
            }

            /// Whether it is taken (a lock: by anyone; a semaphore: every permit).
            pub async fn locked(&self) -> Result<bool, TenureError> {
                Ok(self.inner.locked().await?)
            }

            /// `locked`, blocking the calling thread.
            pub fn locked_blocking(&self) -> Result<bool, TenureError> {
                $crate::block(concat!($label, ".lockedBlocking"), self.locked())
            }
        }
    };
}
pub(crate) use acquires;

/// The methods every primitive with a lock's configuration shares (`Lock`, `ReadWriteLock`,
/// `Semaphore`): its name, its resolved settings, and new settings from the next call on (the
/// worker stays; the rest of the options is ignored).
macro_rules! configured {
    ($primitive:ident) => {
        #[uniffi::export]
        impl $primitive {
            /// The name.
            pub fn name(&self) -> String {
                self.inner.name().as_str().to_owned()
            }

            /// The resolved settings.
            pub fn settings(&self) -> $crate::lock::LockSettings {
                $crate::lock::settings_of(&self.inner.config())
            }

            /// Applies the durations and jitter of `options` from the next call on.
            pub fn reconfigure(&self, options: $crate::lock::LockOptions) -> Result<(), TenureError> {
                Ok(self.inner.reconfigure($crate::lock::reconfigured(&self.inner.config(), &options)?)?)
            }
        }
    };
}
pub(crate) use configured;

/// A lock on a store.
#[derive(uniffi::Object)]
pub struct Lock {
    inner: tenure::Lock<Tokio>,
}

#[uniffi::export]
impl Lock {
    /// The lock `name` on `store`.
    #[uniffi::constructor(default(options = None))]
    pub fn new(name: String, store: Arc<Store>, options: Option<LockOptions>) -> Result<Arc<Self>, TenureError> {
        let o = options.unwrap_or_default();
        let builder = tenure::Lock::builder(&name, runtime()).shared_backend(store.inner.slots().lock()?);
        let inner = lock_options(&o)?.apply(builder)?.build()?;
        inner.set_purpose(o.purpose.as_deref())?;
        Ok(Arc::new(Self { inner }))
    }

    /// Who holds the lock: worker, fencing token, lease end and what the holder told the store.
    pub async fn state(&self) -> Result<LockState, TenureError> {
        Ok(LockState::of(self.inner.state().await?))
    }

    /// [`Lock::state`], blocking the calling thread.
    pub fn state_blocking(&self) -> Result<LockState, TenureError> {
        crate::block("Lock.stateBlocking", self.state())
    }
}

configured!(Lock);
acquires!(Lock, "Lock");
