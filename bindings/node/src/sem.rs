//! `Semaphore`: at most N holders of a name at once, each acquire a [`Guard`] of one permit (the
//! same guard a lock's acquire gives: its own fencing token, extend, release, keep-alive).

use napi::Env;
use napi::bindgen_prelude::BigInt;
use napi_derive::napi;
use tenure_tokio::Tokio;

use crate::backend::Backend;
use crate::fail::{Fail, sync};
use crate::lock::{LockOptions, lock_options};
use crate::promise::{Settled, promise};

/// A semaphore's state: the stored permit count (0 while nobody holds or waits), the holders,
/// the waiters in line, and the last fencing token issued.
#[napi(object)]
pub struct SemaphoreState {
    pub permits: u32,
    pub holders: u32,
    pub waiting: u32,
    pub fence: BigInt,
}

/// `permits` as a count: a whole number from 0 (refused by the builder) to `u32::MAX`, else a
/// settings error that never echoes the value.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // checked whole and in range first
fn permit_count(permits: f64) -> Result<u32, Fail> {
    if permits.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&permits) {
        return Ok(permits as u32);
    }
    Err(Fail::Core(tenure::Error::settings("permits", "permits must be a whole number from 1 to 4294967295")))
}

/// A semaphore on a store.
#[napi]
pub struct Semaphore {
    inner: tenure::Semaphore<Tokio>,
}

#[napi]
impl Semaphore {
    #[napi(constructor)]
    pub fn new(name: String, permits: f64, backend: &Backend, options: Option<LockOptions>) -> napi::Result<Self> {
        sync(Self::build(&name, permits, backend, options.unwrap_or_default()))
    }

    fn build(name: &str, permits: f64, backend: &Backend, o: LockOptions) -> Result<Self, Fail> {
        let builder = tenure::Semaphore::builder(name, permit_count(permits)?, crate::runtime())
            .shared_backend(backend.0.slots().semaphore()?);
        let inner = lock_options(&o)?.apply(builder)?.build()?;
        inner.set_purpose(o.purpose.as_deref())?;
        Ok(Self { inner })
    }

    /// How many holders it admits at once.
    #[napi(getter)]
    pub fn permits(&self) -> u32 {
        self.inner.permits()
    }

    /// The stored count, the holders, the waiters and the last fencing token.
    #[napi]
    pub fn state<'env>(&self, env: &'env Env) -> napi::Result<Settled<'env, SemaphoreState>> {
        let semaphore = self.inner.clone();
        promise(env, async move {
            let s = semaphore.state().await?;
            let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
            Ok(SemaphoreState {
                permits: s.permits,
                holders: count(s.holders),
                waiting: count(s.waiting),
                fence: BigInt::from(s.fence),
            })
        })
    }
}

crate::lock::configured!(Semaphore);
crate::lock::waited!(Semaphore);
