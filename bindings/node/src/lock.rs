//! `Lock` and the `Guard` an acquire gives: one holder (its own ownership token) per acquire, so
//! concurrent acquires from one `Lock` contend as separate tasks do, and nothing is reentrant.

use std::time::Duration;

use napi::Env;
use napi::bindgen_prelude::BigInt;
use napi_derive::napi;
use tenure::LockGuard;
use tenure::binding::{self, LeaseSlot, Spelling, Unit};
use tenure_tokio::Tokio;

use crate::backend::Backend;
use crate::fail::{Fail, sync};
use crate::millis::optional;
use crate::promise::{Settled, promise};

/// A lock's settings, in milliseconds; what is not given comes from `GREL_*` variables or the
/// defaults, as grelmicro's `Lock(...)`.
#[napi(object)]
#[derive(Debug, Default)]
pub struct LockOptions {
    pub worker: Option<String>,
    pub lease_duration: Option<f64>,
    pub retry_interval: Option<f64>,
    pub retry_jitter: Option<f64>,
    pub backend_timeout: Option<f64>,
    pub env_prefix: Option<String>,
    pub env_load: Option<bool>,
    /// What the lock, the read-write lock or the semaphore is held for, shown with each holder
    /// (given when it is made).
    pub purpose: Option<String>,
}

/// A lock's resolved settings, in milliseconds.
#[napi(object)]
#[derive(Debug)]
pub struct LockSettings {
    pub worker: String,
    pub lease_duration: f64,
    pub retry_interval: f64,
    pub retry_jitter: f64,
    pub backend_timeout: f64,
}

/// The settings `o` gives (a `Lock`'s, a `ReadWriteLock`'s, a `Semaphore`'s), from milliseconds,
/// checked: a settings error names the JavaScript option. (Its purpose is the constructor's to
/// set.)
pub(crate) fn lock_options(o: &LockOptions) -> Result<binding::LockOptions, Fail> {
    let given = [o.lease_duration, o.retry_interval, o.backend_timeout];
    let given = binding::LockOptions::from_numbers(Unit::Millis, Spelling::Camel, given)?;
    let (worker, env_prefix) = (o.worker.clone(), o.env_prefix.clone());
    Ok(binding::LockOptions { worker, retry_jitter: o.retry_jitter, env_prefix, env_load: o.env_load, ..given })
}

/// The methods every primitive with a lock's configuration shares (`Lock`, `Semaphore`,
/// `ReadWriteLock`): its name, its resolved settings, and new settings from the next call on
/// (the worker stays).
macro_rules! configured {
    ($primitive:ident) => {
        #[napi_derive::napi]
        impl $primitive {
            /// The name.
            #[napi(getter)]
            pub fn name(&self) -> String {
                self.inner.name().as_str().to_owned()
            }

            /// The resolved settings.
            #[napi]
            pub fn settings(&self) -> $crate::lock::LockSettings {
                $crate::lock::settings_of(&self.inner.config())
            }

            /// Applies new settings from the next call on (the worker stays).
            #[napi]
            pub fn reconfigure(&self, options: $crate::lock::LockOptions) -> napi::Result<()> {
                let config = $crate::lock::reconfigured(&self.inner.config(), &options);
                $crate::fail::sync(config.and_then(|c| Ok(self.inner.reconfigure(c)?)))
            }
        }
    };
}
pub(crate) use configured;

/// The waiting calls of a primitive whose acquire gives one [`Guard`] (`Lock`, `Semaphore`):
/// `acquire` up to a timeout or a cancel, `tryAcquire`, and `locked`.
macro_rules! waited {
    ($primitive:ident) => {
        #[napi_derive::napi]
        impl $primitive {
            /// Acquires, waiting up to `timeout` ms (forever without one), unless `cancel` fires
            /// first.
            #[napi]
            pub fn acquire<'env>(
                &self,
                env: &'env napi::Env,
                timeout: Option<f64>,
                cancel: Option<&$crate::cancel::Cancel>,
            ) -> napi::Result<$crate::promise::Settled<'env, $crate::lock::Guard>> {
                let timeout = $crate::fail::sync($crate::millis::optional("timeout", timeout))?;
                let primitive = self.inner.clone();
                let call = async move {
                    let guard = match timeout {
                        Some(timeout) => primitive.acquire_timeout(timeout).await?,
                        None => primitive.acquire().await?,
                    };
                    Ok($crate::lock::Guard::new(guard))
                };
                $crate::promise::promise(env, $crate::cancel::unless(cancel, call))
            }

            /// One attempt: a `WOULD_BLOCK` failure if it is not free.
            #[napi]
            pub fn try_acquire<'env>(
                &self,
                env: &'env napi::Env,
            ) -> napi::Result<$crate::promise::Settled<'env, $crate::lock::Guard>> {
                let primitive = self.inner.clone();
                $crate::promise::promise(
                    env,
                    async move { Ok($crate::lock::Guard::new(primitive.acquire_nowait().await?)) },
                )
            }

            /// Whether it is taken (a lock: by anyone; a semaphore: every permit).
            #[napi]
            pub fn locked<'env>(&self, env: &'env napi::Env) -> napi::Result<$crate::promise::Settled<'env, bool>> {
                let primitive = self.inner.clone();
                $crate::promise::promise(env, async move { Ok(primitive.locked().await?) })
            }
        }
    };
}
pub(crate) use waited;

/// A lock's configuration as JavaScript reads it.
pub(crate) fn settings_of(c: &tenure::LockConfig) -> LockSettings {
    let (worker, [lease_duration, retry_interval, retry_jitter, backend_timeout]) =
        binding::lock_settings(c, Unit::Millis);
    LockSettings { worker, lease_duration, retry_interval, retry_jitter, backend_timeout }
}

/// `current` with the settings `options` gives changed (the worker stays), checked; a purpose is
/// refused (it is given when the primitive is made).
pub(crate) fn reconfigured(current: &tenure::LockConfig, options: &LockOptions) -> Result<tenure::LockConfig, Fail> {
    binding::refuse_purpose(options.purpose.as_deref())?;
    Ok(lock_options(options)?.reconfigure(current)?)
}

/// A lock on a store.
#[napi]
pub struct Lock {
    inner: tenure::Lock<Tokio>,
}

#[napi]
impl Lock {
    #[napi(constructor)]
    pub fn new(name: String, backend: &Backend, options: Option<LockOptions>) -> napi::Result<Self> {
        sync(Self::build(&name, backend, options.unwrap_or_default()))
    }

    fn build(name: &str, backend: &Backend, o: LockOptions) -> Result<Self, Fail> {
        let builder = tenure::Lock::builder(name, crate::runtime()).shared_backend(backend.0.slots().lock()?);
        let inner = lock_options(&o)?.apply(builder)?.build()?;
        inner.set_purpose(o.purpose.as_deref())?;
        Ok(Self { inner })
    }

    /// Who holds the lock: worker, fencing token, lease end (ms since the epoch) and what the
    /// holder told the store; never its token.
    #[napi]
    pub fn state<'env>(&self, env: &'env Env) -> napi::Result<Settled<'env, LockState>> {
        let lock = self.inner.clone();
        promise(env, async move { Ok(LockState::of(lock.state().await?)) })
    }
}

/// Who holds a lock or task lock (`state()`), times in ms since the epoch.
#[napi(object)]
pub struct LockState {
    pub name: String,
    pub held: bool,
    pub fencing_token: Option<BigInt>,
    pub worker: Option<String>,
    pub expires_at: Option<f64>,
    pub holder: Option<HolderInfo>,
    /// Who waits, first in line first; `None` where the store keeps no line.
    pub waiting: Option<Vec<Waiter>>,
}

/// One in a lock's waiting line.
#[napi(object)]
pub struct Waiter {
    pub worker: String,
    pub since: Option<f64>,
    pub details: Option<HolderInfo>,
}

/// What a holder told the store when it took the lock.
#[napi(object)]
pub struct HolderInfo {
    pub host: String,
    pub pid: u32,
    pub program: String,
    pub purpose: Option<String>,
    pub acquired_at: f64,
}

impl LockState {
    pub(crate) fn of(info: tenure::LockInfo) -> Self {
        #[allow(clippy::cast_precision_loss)] // (ms since the epoch: exact below 2^53)
        let ms = |t: tenure::core::WallTime| t.as_unix_micros() as f64 / 1000.0;
        let held = info.held();
        let holder = |d: tenure::HolderInfo| HolderInfo {
            host: d.host,
            pid: d.pid,
            program: d.program,
            purpose: d.purpose,
            acquired_at: ms(d.acquired_at),
        };
        let waiting = info.waiting.map(|line| {
            line.into_iter()
                .map(|w| Waiter { worker: w.worker, since: w.since.map(ms), details: w.details.map(holder) })
                .collect()
        });
        LockState {
            held,
            fencing_token: info.fencing_token.map(|f| BigInt::from(f.get())),
            worker: info.worker,
            expires_at: info.expires_at.map(ms),
            holder: info.details.map(holder),
            waiting,
            name: info.name,
        }
    }
}

configured!(Lock);
waited!(Lock);

/// One acquisition of a lock. Dropped by the garbage collector while held, it releases in the
/// background; release it to see the outcome. The driver's [`LeaseSlot`] keeps the rules.
#[napi]
pub struct Guard {
    slot: LeaseSlot<Tokio>,
}

impl Guard {
    pub(crate) fn new(guard: LockGuard<Tokio>) -> Self {
        Self { slot: LeaseSlot::new(guard) }
    }
}

#[napi]
impl Guard {
    /// The lock name.
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.slot.name().to_owned()
    }

    /// The fencing token of this acquisition, as a `bigint` (a fence never loses precision).
    #[napi(getter)]
    pub fn fencing_token(&self) -> BigInt {
        BigInt::from(self.slot.fencing_token().get())
    }

    /// On the write side of a read-write lock: whether the writer before this one let its lease
    /// run out without releasing, or this lease lapsed and was granted again by an extend.
    #[napi(getter)]
    pub fn poisoned(&self) -> bool {
        self.slot.poisoned()
    }

    /// On the write side of a read-write lock: turns the write lease into a read lease in one
    /// step; the generation read. Not while a keep-alive renews it (stop it first).
    #[napi]
    pub fn downgrade<'env>(&self, env: &'env Env) -> napi::Result<Settled<'env, BigInt>> {
        let downgraded = self.slot.downgrade();
        promise(env, async move { Ok(BigInt::from(downgraded.await?.get())) })
    }

    /// Whether the lease may be counted on now.
    #[napi]
    pub fn is_valid(&self) -> bool {
        self.slot.is_valid()
    }

    /// Whether a keep-alive is renewing the lease (kept, not ended, still valid).
    #[napi]
    pub fn keeping(&self) -> bool {
        self.slot.keeping()
    }

    /// Renews the lease for another lease duration; the fencing token as it stands.
    #[napi]
    pub fn extend<'env>(&self, env: &'env Env) -> napi::Result<Settled<'env, BigInt>> {
        let extended = self.slot.extend();
        promise(env, async move { Ok(BigInt::from(extended.await?.fencing_token.get())) })
    }

    /// Whether this acquisition still holds a live lease on the store.
    #[napi]
    pub fn owned<'env>(&self, env: &'env Env) -> napi::Result<Settled<'env, bool>> {
        let owned = self.slot.owned();
        promise(env, async move { Ok(owned.await?) })
    }

    /// Releases; a `LOCK_NOT_OWNED` failure if it was released or lost.
    #[napi]
    pub fn release<'env>(&self, env: &'env Env) -> napi::Result<Settled<'env, ()>> {
        let released = self.slot.release();
        promise(env, async move { Ok(released.await?) })
    }

    /// Keeps the lease alive in the background for at most `maxHold` ms (no bound without it),
    /// warning below `warnBelow` ms of validity left (a third of the lease without).
    #[napi]
    pub fn keep_alive(&self, max_hold: Option<f64>, warn_below: Option<f64>) -> napi::Result<()> {
        let max_hold = sync(optional("maxHold", max_hold))?.unwrap_or(Duration::MAX);
        let warn_below = sync(optional("warnBelow", warn_below))?;
        sync(self.slot.keep_alive(max_hold, warn_below).map_err(Fail::from))
    }

    /// Settles at the keep-alive's next warning with the ms of validity left, or with `null` once
    /// the lease is released or lost (or was never kept alive).
    #[napi]
    pub fn warning<'env>(&self, env: &'env Env) -> napi::Result<Settled<'env, Option<f64>>> {
        let warning = self.slot.warning();
        promise(env, async move { Ok(warning.await.map(|left| left.as_secs_f64() * 1000.0)) })
    }

    /// [`Guard::warning`] for `using()`'s own loop: the next one it was not told of.
    #[napi]
    pub fn next_warning<'env>(&self, env: &'env Env) -> napi::Result<Settled<'env, Option<f64>>> {
        let warning = self.slot.next_warning();
        promise(env, async move { Ok(warning.await.map(|left| left.as_secs_f64() * 1000.0)) })
    }

    /// Throws the core's `LOCK_LOST` error for this lease, by why its keep-alive ended.
    #[napi]
    pub fn lost_error(&self) -> napi::Result<()> {
        sync(Err(Fail::Core(self.slot.lost_error())))
    }

    /// Settles with `true` the moment the lease is lost (or a keep-alive ended at its maximum
    /// hold), with `false` once it is released.
    #[napi]
    pub fn lost<'env>(&self, env: &'env Env) -> napi::Result<Settled<'env, bool>> {
        let lost = sync(self.slot.lost().map_err(Fail::from))?;
        promise(env, async move { Ok(lost.await) })
    }
}
