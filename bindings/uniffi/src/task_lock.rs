//! `TaskLock`: at most one run of a job per `min_hold_duration` window across every worker (a
//! scheduled job on every replica, ShedLock's `lockAtLeastFor` / `lockAtMostFor`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tenure::binding::{self, Spelling, Unit};
use tenure_tokio::Tokio;

use crate::guard::fence;
use crate::seconds::secs;
use crate::store::Store;
use crate::{TenureError, block, runtime};

/// A task lock's settings; what is not given comes from `GREL_TASKLOCK_*` variables (unless
/// `env_load` is false) or grelmicro's defaults. Durations in seconds.
#[derive(Debug, Clone, Default, uniffi::Record)]
pub struct TaskLockOptions {
    /// This process's identity (a random one if not given).
    #[uniffi(default = None)]
    pub worker: Option<String>,
    /// How long the lock stays taken after a run starts, even if it ends sooner (default 1 s).
    #[uniffi(default = None)]
    pub min_hold_duration: Option<f64>,
    /// The most a run may hold it unless extended (default 60 s).
    #[uniffi(default = None)]
    pub lease_duration: Option<f64>,
    /// Bound on each store call (default 5 s).
    #[uniffi(default = None)]
    pub backend_timeout: Option<f64>,
    /// Prefix of the environment variables read (default `GREL_TASKLOCK_{NAME}_`).
    #[uniffi(default = None)]
    pub env_prefix: Option<String>,
    /// Whether to read environment variables (default: `GREL_ENV_LOAD`, else yes).
    #[uniffi(default = None)]
    pub env_load: Option<bool>,
    /// What the task is, shown with each run's holder (1 to 256 bytes).
    #[uniffi(default = None)]
    pub purpose: Option<String>,
}

/// A task lock's resolved settings, in seconds.
#[derive(Debug, Clone, uniffi::Record)]
pub struct TaskLockSettings {
    pub worker: String,
    pub min_hold_duration: f64,
    pub lease_duration: f64,
    pub backend_timeout: f64,
}

/// The settings `o` gives, from seconds, checked.
fn task_lock_options(o: &TaskLockOptions) -> Result<binding::TaskLockOptions, TenureError> {
    let given = [o.min_hold_duration, o.lease_duration, o.backend_timeout];
    let given = binding::TaskLockOptions::from_numbers(Unit::Seconds, Spelling::Camel, given)?;
    Ok(binding::TaskLockOptions {
        worker: o.worker.clone(),
        env_prefix: o.env_prefix.clone(),
        env_load: o.env_load,
        ..given
    })
}

/// A task lock on a store.
#[derive(uniffi::Object)]
pub struct TaskLock {
    inner: tenure::TaskLock<Tokio>,
}

#[uniffi::export]
impl TaskLock {
    /// The task lock `name` on `store`.
    #[uniffi::constructor(default(options = None))]
    pub fn new(name: String, store: Arc<Store>, options: Option<TaskLockOptions>) -> Result<Arc<Self>, TenureError> {
        let builder = tenure::TaskLock::builder(&name, runtime()).shared_backend(store.inner.slots().lock()?);
        let options = options.unwrap_or_default();
        let inner = task_lock_options(&options)?.apply(builder)?.build()?;
        inner.set_purpose(options.purpose.as_deref())?;
        Ok(Arc::new(Self { inner }))
    }

    /// Who runs the task: as `Lock.state`.
    pub async fn state(&self) -> Result<crate::lock::LockState, TenureError> {
        Ok(crate::lock::LockState::of(self.inner.state().await?))
    }

    /// [`TaskLock::state`], blocking the calling thread.
    pub fn state_blocking(&self) -> Result<crate::lock::LockState, TenureError> {
        block("TaskLock.stateBlocking", self.state())
    }

    /// The task lock name.
    pub fn name(&self) -> String {
        self.inner.name().as_str().to_owned()
    }

    /// The resolved settings.
    pub fn settings(&self) -> TaskLockSettings {
        let c = self.inner.config();
        TaskLockSettings {
            worker: c.worker().as_str().to_owned(),
            min_hold_duration: secs(c.min_hold_duration()),
            lease_duration: secs(c.lease_duration()),
            backend_timeout: secs(c.backend_timeout()),
        }
    }

    /// Applies the durations of `options` from the next run on (the worker stays).
    pub fn reconfigure(&self, options: TaskLockOptions) -> Result<(), TenureError> {
        Ok(self.inner.reconfigure(task_lock_options(&options)?.reconfigure(&self.inner.config())?)?)
    }

    /// Starts a run, or fails at once with `WouldBlock` (another worker's run, or this window's
    /// minimum hold); `LockReentrant` while this instance runs.
    pub async fn enter(&self) -> Result<Arc<TaskRun>, TenureError> {
        let entered = self.inner.enter().await?;
        Ok(Arc::new(TaskRun {
            name: self.name(),
            fence: fence(entered.fencing_token()),
            lock: self.inner.clone(),
            exited: AtomicBool::new(false),
            guard: tokio::sync::Mutex::new(Some(entered)),
        }))
    }

    /// [`TaskLock::enter`], blocking the calling thread.
    pub fn enter_blocking(&self) -> Result<Arc<TaskRun>, TenureError> {
        block("TaskLock.enterBlocking", self.enter())
    }

    /// Whether anyone holds the task lock.
    pub async fn locked(&self) -> Result<bool, TenureError> {
        Ok(self.inner.locked().await?)
    }

    /// [`TaskLock::locked`], blocking the calling thread.
    pub fn locked_blocking(&self) -> Result<bool, TenureError> {
        block("TaskLock.lockedBlocking", self.locked())
    }
}

/// One run under a task lock. Freed before its exit, it exits in the background.
#[derive(uniffi::Object)]
pub struct TaskRun {
    name: String,
    fence: i64,
    lock: tenure::TaskLock<Tokio>,
    /// Set once `exit` took the guard (the instance's next run is another one).
    exited: AtomicBool,
    guard: tokio::sync::Mutex<Option<tenure::TaskLockGuard<Tokio>>>,
}

impl TaskRun {
    fn not_owned(&self) -> TenureError {
        tenure::Error::NotOwned { name: self.name.clone() }.into()
    }
}

#[uniffi::export]
impl TaskRun {
    /// The fencing token of this run.
    pub fn fencing_token(&self) -> i64 {
        self.fence
    }

    /// Whether the run may still count on its lease.
    pub fn is_valid(&self) -> bool {
        !self.exited.load(Ordering::SeqCst) && self.lock.is_held()
    }

    /// Renews the lease for another lease duration (grelmicro's `refresh`); `LockNotOwned` if
    /// it was lost or the run exited.
    pub async fn extend(&self) -> Result<(), TenureError> {
        match self.guard.lock().await.as_mut() {
            Some(guard) => Ok(guard.extend().await?),
            None => Err(self.not_owned()),
        }
    }

    /// [`TaskRun::extend`], blocking the calling thread.
    pub fn extend_blocking(&self) -> Result<(), TenureError> {
        block("TaskRun.extendBlocking", self.extend())
    }

    /// Ends the run: the lock stays taken until the minimum hold has passed since the start.
    /// `LockNotOwned` if the lease was lost (the job outlived it) or the run exited already.
    pub async fn exit(&self) -> Result<(), TenureError> {
        let guard = self.guard.lock().await.take();
        self.exited.store(true, Ordering::SeqCst);
        match guard {
            Some(guard) => Ok(guard.exit().await?),
            None => Err(self.not_owned()),
        }
    }

    /// [`TaskRun::exit`], blocking the calling thread.
    pub fn exit_blocking(&self) -> Result<(), TenureError> {
        block("TaskRun.exitBlocking", self.exit())
    }
}
