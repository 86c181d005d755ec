//! `TaskLock`: at most one run of a job per `minHoldDuration` window across every worker.

use std::sync::Arc;

use napi::Env;
use napi::bindgen_prelude::BigInt;
use napi_derive::napi;
use tenure::binding::{self, Spelling, Unit};
use tenure_tokio::Tokio;

use crate::backend::Backend;
use crate::fail::{Fail, sync};
use crate::promise::{Settled, promise};

/// A task lock's settings, in milliseconds; what is not given comes from `GREL_*` variables or
/// the defaults, as grelmicro's `TaskLock(...)`.
#[napi(object)]
#[derive(Debug, Default)]
pub struct TaskLockOptions {
    pub worker: Option<String>,
    pub min_hold_duration: Option<f64>,
    pub lease_duration: Option<f64>,
    pub backend_timeout: Option<f64>,
    pub env_prefix: Option<String>,
    pub env_load: Option<bool>,
    /// What the task is, shown with each run's holder.
    pub purpose: Option<String>,
}

/// The settings `o` gives, from milliseconds, checked: a settings error names the JavaScript
/// option.
fn task_lock_options(o: &TaskLockOptions) -> Result<binding::TaskLockOptions, Fail> {
    let given = [o.min_hold_duration, o.lease_duration, o.backend_timeout];
    let given = binding::TaskLockOptions::from_numbers(Unit::Millis, Spelling::Camel, given)?;
    Ok(binding::TaskLockOptions {
        worker: o.worker.clone(),
        env_prefix: o.env_prefix.clone(),
        env_load: o.env_load,
        ..given
    })
}

/// A task lock on a store.
#[napi]
pub struct TaskLock {
    inner: tenure::TaskLock<Tokio>,
}

#[napi]
impl TaskLock {
    #[napi(constructor)]
    pub fn new(name: String, backend: &Backend, options: Option<TaskLockOptions>) -> napi::Result<Self> {
        sync((|| {
            let b = tenure::TaskLock::builder(&name, crate::runtime()).shared_backend(backend.0.slots().lock()?);
            let options = options.unwrap_or_default();
            let inner = task_lock_options(&options)?.apply(b)?.build()?;
            inner.set_purpose(options.purpose.as_deref())?;
            Ok(Self { inner })
        })())
    }

    /// Who runs the task: as `Lock.state()`.
    #[napi]
    pub fn state<'env>(
        &self,
        env: &'env napi::Env,
    ) -> napi::Result<crate::promise::Settled<'env, crate::lock::LockState>> {
        let lock = self.inner.clone();
        crate::promise::promise(env, async move { Ok(crate::lock::LockState::of(lock.state().await?)) })
    }

    /// The resolved settings, in ms.
    #[napi]
    pub fn settings(&self) -> std::collections::HashMap<String, f64> {
        let c = self.inner.config();
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
        std::collections::HashMap::from([
            ("minHoldDuration".to_owned(), ms(c.min_hold_duration())),
            ("leaseDuration".to_owned(), ms(c.lease_duration())),
            ("backendTimeout".to_owned(), ms(c.backend_timeout())),
        ])
    }

    /// Applies new settings from the next enter on (the worker stays).
    #[napi]
    pub fn reconfigure(&self, options: TaskLockOptions) -> napi::Result<()> {
        sync((|| Ok(self.inner.reconfigure(task_lock_options(&options)?.reconfigure(&self.inner.config())?)?))())
    }

    /// Starts a run, or fails at once with `WOULD_BLOCK` (another worker's run, or this
    /// window's minimum hold).
    #[napi]
    pub fn enter<'env>(&self, env: &'env Env) -> napi::Result<Settled<'env, TaskRun>> {
        let lock = self.inner.clone();
        promise(env, async move {
            let entered = lock.enter().await?;
            Ok(TaskRun {
                fence: entered.fencing_token().get(),
                name: lock.name().as_str().to_owned(),
                guard: Arc::new(tokio::sync::Mutex::new(Some(entered))),
            })
        })
    }

    /// Whether anyone holds the task lock.
    #[napi]
    pub fn locked<'env>(&self, env: &'env Env) -> napi::Result<Settled<'env, bool>> {
        let lock = self.inner.clone();
        promise(env, async move { Ok(lock.locked().await?) })
    }
}

type SharedGuard = Arc<tokio::sync::Mutex<Option<tenure::TaskLockGuard<Tokio>>>>;

/// One run under a task lock.
#[napi]
pub struct TaskRun {
    fence: u64,
    name: String,
    guard: SharedGuard,
}

#[napi]
impl TaskRun {
    /// The fencing token of this run.
    #[napi(getter)]
    pub fn fencing_token(&self) -> BigInt {
        BigInt::from(self.fence)
    }

    /// Renews the lease for another lease duration.
    #[napi]
    pub fn extend<'env>(&self, env: &'env Env) -> napi::Result<Settled<'env, ()>> {
        let (guard, name) = (self.guard.clone(), self.name.clone());
        promise(env, async move {
            match guard.lock().await.as_mut() {
                Some(guard) => Ok(guard.extend().await?),
                None => Err(Fail::Core(tenure::Error::NotOwned { name })),
            }
        })
    }

    /// Ends the run; the lock stays taken until the minimum hold has passed.
    #[napi]
    pub fn exit<'env>(&self, env: &'env Env) -> napi::Result<Settled<'env, ()>> {
        let (guard, name) = (self.guard.clone(), self.name.clone());
        promise(env, async move {
            match guard.lock().await.take() {
                Some(guard) => Ok(guard.exit().await?),
                None => Err(Fail::Core(tenure::Error::NotOwned { name })),
            }
        })
    }
}
