//! `Lock` and the `Guard` an acquire gives: one holder (its own ownership token) per acquire, so
//! concurrent acquires from one `Lock` contend as separate tasks do, and nothing is reentrant.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use napi::Env;
use napi::bindgen_prelude::BigInt;
use napi_derive::napi;
use tenure::{KeepAlive, LockGuard, LockHolder};
use tenure_tokio::Tokio;

use crate::backend::Backend;
use crate::cancel::Flag;
use crate::fail::{Fail, sync};
use crate::millis::{optional, with_millis};
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

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A lock builder (a `Lock`'s, a `ReadWriteLock`'s, a `Semaphore`'s) with `options` applied;
/// `?` on a bad worker or duration.
macro_rules! with_lock_options {
    ($builder:expr, $o:expr) => {{
        let o = &$o;
        let mut b = $builder;
        if let Some(worker) = &o.worker {
            b = b.worker(tenure::WorkerId::new(worker)?);
        }
        b = crate::millis::with_millis!(b, o, lease_duration: "leaseDuration", retry_interval: "retryInterval", backend_timeout: "backendTimeout");
        if let Some(j) = o.retry_jitter {
            b = b.retry_jitter(j);
        }
        if let Some(prefix) = &o.env_prefix {
            b = b.env_prefix(prefix);
        }
        if let Some(load) = o.env_load {
            b = b.env_load(load);
        }
        b
    }};
}
pub(crate) use with_lock_options;

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
    LockSettings {
        worker: c.worker().as_str().to_owned(),
        lease_duration: ms(c.lease_duration()),
        retry_interval: ms(c.retry_interval()),
        retry_jitter: c.retry_jitter(),
        backend_timeout: ms(c.backend_timeout()),
    }
}

/// `current` with the settings `options` gives changed (the worker stays), checked.
pub(crate) fn reconfigured(current: &tenure::LockConfig, options: &LockOptions) -> Result<tenure::LockConfig, Fail> {
    let mut b = with_millis!(current.to_builder(), options, lease_duration: "leaseDuration", retry_interval: "retryInterval", backend_timeout: "backendTimeout");
    if let Some(j) = options.retry_jitter {
        b = b.retry_jitter(j);
    }
    Ok(b.build(&mut rand::rng())?)
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
        let builder = tenure::Lock::builder(name, crate::runtime()).shared_backend(backend.lock.clone());
        Ok(Self { inner: with_lock_options!(builder, o).build()? })
    }
}

configured!(Lock);
waited!(Lock);

/// What a guard holds.
enum Held {
    Guard(LockGuard<Tokio>),
    Kept(KeepAlive<LockGuard<Tokio>>),
    /// A downgrade is under way (the guard comes back when it ends).
    Busy,
    Released,
}

type Lost = Pin<Box<dyn Future<Output = ()> + Send>>;

/// One acquisition of a lock. Dropped by the garbage collector while held, it releases in the
/// background; release it to see the outcome.
#[napi]
pub struct Guard {
    name: String,
    fence: u64,
    held: Arc<Mutex<Held>>,
    released: Arc<Flag>,
}

impl Guard {
    pub(crate) fn new(guard: LockGuard<Tokio>) -> Self {
        Self {
            name: guard.name().as_str().to_owned(),
            fence: guard.fencing_token().get(),
            held: Arc::new(Mutex::new(Held::Guard(guard))),
            released: Arc::new(Flag::default()),
        }
    }

    /// The holder while the lock is held (released, it goes back to the lock's pool).
    fn holder(&self) -> Option<LockHolder<Tokio>> {
        match &*self.held.lock().unwrap_or_else(PoisonError::into_inner) {
            Held::Guard(g) => Some(g.holder().clone()),
            Held::Kept(k) => Some(k.guard().holder().clone()),
            Held::Busy | Held::Released => None,
        }
    }

    fn busy(&self, operation: &'static str) -> Fail {
        Fail::Core(tenure::Error::Busy { name: self.name.clone(), operation })
    }

    fn not_owned(&self) -> Fail {
        Fail::Core(tenure::Error::NotOwned { name: self.name.clone() })
    }

    /// What the guard holds, leaving it released; refused while a downgrade is under way.
    fn take(&self) -> Result<Held, Fail> {
        let mut slot = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        if matches!(*slot, Held::Busy) {
            return Err(self.busy("downgrade"));
        }
        Ok(std::mem::replace(&mut *slot, Held::Released))
    }
}

#[napi]
impl Guard {
    /// The lock name.
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// The fencing token of this acquisition, as a `bigint` (a fence never loses precision).
    #[napi(getter)]
    pub fn fencing_token(&self) -> BigInt {
        let fence = self.holder().and_then(|h| h.handle()).map_or(self.fence, |h| h.fencing_token.get());
        BigInt::from(fence)
    }

    /// On the write side of a read-write lock: whether the writer before this one let its lease
    /// run out without releasing, or this lease lapsed and was granted again by an extend.
    #[napi(getter)]
    pub fn poisoned(&self) -> bool {
        self.holder().is_some_and(|h| h.poisoned())
    }

    /// On the write side of a read-write lock: turns the write lease into a read lease in one
    /// step; the generation read. Not while a keep-alive renews it (stop it first).
    #[napi]
    pub fn downgrade<'env>(&self, env: &'env Env) -> napi::Result<Settled<'env, BigInt>> {
        let taken = {
            let mut slot = self.held.lock().unwrap_or_else(PoisonError::into_inner);
            match std::mem::replace(&mut *slot, Held::Busy) {
                Held::Guard(guard) => Ok(guard),
                kept @ Held::Kept(_) => {
                    *slot = kept;
                    Err(self.busy("keep-alive"))
                }
                Held::Busy => Err(self.busy("downgrade")),
                Held::Released => {
                    *slot = Held::Released;
                    Err(self.not_owned())
                }
            }
        };
        let held = self.held.clone();
        promise(env, async move {
            let mut guard = taken?;
            let downgraded = guard.downgrade().await.map(|h| h.fencing_token.get());
            *held.lock().unwrap_or_else(PoisonError::into_inner) = Held::Guard(guard);
            Ok(BigInt::from(downgraded?))
        })
    }

    /// Whether the lease may be counted on now.
    #[napi]
    pub fn is_valid(&self) -> bool {
        match &*self.held.lock().unwrap_or_else(PoisonError::into_inner) {
            Held::Guard(g) => g.is_valid(),
            Held::Kept(k) => k.is_valid(),
            Held::Busy | Held::Released => false,
        }
    }

    /// Whether a keep-alive is renewing the lease (kept, not ended, still valid).
    #[napi]
    pub fn keeping(&self) -> bool {
        match &*self.held.lock().unwrap_or_else(PoisonError::into_inner) {
            Held::Kept(k) => k.ended().is_none() && k.is_valid(),
            _ => false,
        }
    }

    /// Renews the lease for another lease duration; the fencing token as it stands.
    #[napi]
    pub fn extend<'env>(&self, env: &'env Env) -> napi::Result<Settled<'env, BigInt>> {
        let (holder, not_owned) = (self.holder(), self.not_owned());
        promise(env, async move {
            let holder = holder.ok_or(not_owned)?;
            Ok(BigInt::from(holder.extend().await?.fencing_token.get()))
        })
    }

    /// Whether this acquisition still holds a live lease on the store.
    #[napi]
    pub fn owned<'env>(&self, env: &'env Env) -> napi::Result<Settled<'env, bool>> {
        let holder = self.holder();
        promise(env, async move {
            match holder {
                Some(holder) => Ok(holder.owned().await?),
                None => Ok(false),
            }
        })
    }

    /// Releases; a `LOCK_NOT_OWNED` failure if it was released or lost.
    #[napi]
    pub fn release<'env>(&self, env: &'env Env) -> napi::Result<Settled<'env, ()>> {
        let (held, not_owned, released) = (self.take(), self.not_owned(), self.released.clone());
        promise(env, async move {
            let held = held?;
            // Before stopping a keep-alive, whose end would otherwise read as a loss.
            released.raise();
            Ok(match held {
                Held::Guard(guard) => guard.release().await,
                Held::Kept(kept) => kept.stop().release().await,
                Held::Busy | Held::Released => return Err(not_owned),
            }?)
        })
    }

    /// Keeps the lease alive in the background for at most `maxHold` ms (no bound without it).
    #[napi]
    pub fn keep_alive(&self, max_hold: Option<f64>) -> napi::Result<()> {
        let max_hold = sync(optional("maxHold", max_hold))?.unwrap_or(Duration::MAX);
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        *held = match std::mem::replace(&mut *held, Held::Released) {
            Held::Guard(guard) => Held::Kept(guard.keep_alive(max_hold)),
            Held::Kept(kept) => Held::Kept(kept),
            Held::Busy => {
                *held = Held::Busy;
                return sync(Err(self.busy("downgrade")));
            }
            Held::Released => return sync(Err(self.not_owned())),
        };
        Ok(())
    }

    /// Settles with `true` the moment the lease is lost (or a keep-alive ended at its maximum
    /// hold), with `false` once it is released.
    #[napi]
    pub fn lost<'env>(&self, env: &'env Env) -> napi::Result<Settled<'env, bool>> {
        let lost: Option<Lost> = match &*self.held.lock().unwrap_or_else(PoisonError::into_inner) {
            Held::Guard(g) => Some(Box::pin(g.lost())),
            Held::Kept(k) => Some(Box::pin(k.lost())),
            Held::Busy => return sync(Err(self.busy("downgrade"))),
            Held::Released => None,
        };
        let released = self.released.clone();
        promise(env, async move {
            let Some(lost) = lost else { return Ok(false) };
            // A release wins over the loss its own stop would show.
            let released = async move {
                released.raised().await;
                false
            };
            Ok(futures_lite::future::or(released, async move {
                lost.await;
                true
            })
            .await)
        })
    }
}
