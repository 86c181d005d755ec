//! `ReadWriteLock`: many readers or one writer, each acquire a [`Guard`] of one side (the same
//! guard a lock's acquire gives; a writer's also downgrades and tells `poisoned`), taken through
//! a caller's pair of holders.

use napi::Env;
use napi::bindgen_prelude::BigInt;
use napi_derive::napi;
use tenure_tokio::Tokio;

use crate::backend::Backend;
use crate::cancel::{Cancel, unless};
use crate::fail::{Fail, sync};
use crate::lock::{Guard, LockOptions, lock_options};
use crate::millis::optional;
use crate::promise::{Settled, promise};

/// A read-write lock's state: the generation (the last write's fencing token), whether a writer
/// writes, how many read, how many writers wait.
#[napi(object)]
pub struct ReadWriteLockState {
    pub generation: BigInt,
    pub writing: bool,
    pub readers: u32,
    pub waiting_writers: u32,
}

/// A read-write lock on a store, as grelmicro 0.44's `ReadWriteLock(...)`.
#[napi]
pub struct ReadWriteLock {
    inner: tenure::ReadWriteLock<Tokio>,
}

#[napi]
impl ReadWriteLock {
    #[napi(constructor)]
    pub fn new(name: String, backend: &Backend, options: Option<LockOptions>) -> napi::Result<Self> {
        sync(Self::build(&name, backend, options.unwrap_or_default()))
    }

    fn build(name: &str, backend: &Backend, o: LockOptions) -> Result<Self, Fail> {
        let builder =
            tenure::ReadWriteLock::builder(name, crate::runtime()).shared_backend(backend.0.slots().read_write()?);
        let inner = lock_options(&o)?.apply(builder)?.build()?;
        inner.set_purpose(o.purpose.as_deref())?;
        Ok(Self { inner })
    }

    /// A new caller's pair of holders, one per side (what `using` runs its work as).
    #[napi]
    pub fn holders(&self) -> ReadWriteHolders {
        ReadWriteHolders(self.inner.holders())
    }

    /// What holds the lock now.
    #[napi]
    pub fn state<'env>(&self, env: &'env Env) -> napi::Result<Settled<'env, ReadWriteLockState>> {
        let lock = self.inner.clone();
        promise(env, async move {
            let s = lock.state().await?;
            let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
            Ok(ReadWriteLockState {
                generation: BigInt::from(s.generation),
                writing: s.writing,
                readers: count(s.readers),
                waiting_writers: count(s.waiting_writers),
            })
        })
    }
}

crate::lock::configured!(ReadWriteLock);

/// One caller's holders of both sides, which refuse an upgrade (`LockUpgradeError`) and a
/// second lease (`LockReentrantError`): the driver's rule.
#[napi]
pub struct ReadWriteHolders(tenure::ReadWriteHolders<Tokio>);

#[napi]
impl ReadWriteHolders {
    /// Takes the write side (`write`) or a read side, waiting up to `timeout` ms (forever without
    /// one), unless `cancel` fires first (a writer then withdraws its intent).
    #[napi]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        write: bool,
        timeout: Option<f64>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Settled<'env, Guard>> {
        let timeout = sync(optional("timeout", timeout))?;
        let holders = self.0.clone();
        promise(env, unless(cancel, async move { Ok(Guard::new(holders.acquire(write, timeout).await?)) }))
    }

    /// One attempt at the write side (`write`) or a read side: a `WOULD_BLOCK` failure if the
    /// other side (or another writer) holds it; a writer's keeps no intent.
    #[napi]
    pub fn try_acquire<'env>(&self, env: &'env Env, write: bool) -> napi::Result<Settled<'env, Guard>> {
        let holders = self.0.clone();
        promise(env, async move { Ok(Guard::new(holders.acquire_nowait(write).await?)) })
    }
}
