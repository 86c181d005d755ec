//! `TaskLock`: at most one run of a scheduled task per min-hold window (spec §1.5, §3.4).

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tenure_core::config::ensure_same_worker;
use tenure_core::{
    Error, FencingToken, HolderKind, Key, KeyKind, Name, TaskLockConfig, TaskLockConfigBuilder, TaskLockEvent,
    TaskLockMachine, Timestamp, WorkerId,
};

use crate::backend::LockBackend;
use crate::builder::{Common, common_setters, config_setters};
use crate::drive::{Cell, Purpose, command, finish_in_background, watch};
use crate::identity::task_lock_token;
use crate::keep_alive::{KeepAlive, Keepable, Renew, Sealed, Step};
use crate::lock::LockExec;
use crate::lock::stopped;
use crate::runtime::Runtime;

/// A lock for scheduled jobs: [`TaskLock::enter`] takes it without waiting (or fails with
/// [`Error::WouldBlock`]), and the exit keeps it until `min_hold_duration` after the start, so no
/// other worker runs the job again within that window. There is no background renewal: the
/// lease taken at enter (`lease_duration`) bounds the run unless [`TaskLockGuard::extend`]ed.
///
/// Re-entrancy is per instance: entering while this instance is entered is
/// [`Error::Reentrant`]. Clones share the instance.
pub struct TaskLock<R: Runtime> {
    shared: Arc<TaskShared<R>>,
}

struct TaskShared<R> {
    key: Key,
    name: Name,
    cell: Arc<Cell<TaskLockMachine>>,
    config: Mutex<TaskLockConfig>,
    backend: Arc<dyn LockBackend>,
    runtime: R,
    /// Who runs the task, sent with enters.
    details: crate::details::Details,
}

impl<R: Runtime> TaskLock<R> {
    /// Starts building the task lock `name` (settings from `GREL_TASKLOCK_*` when unset).
    pub fn builder(name: &str, runtime: R) -> TaskLockBuilder<R> {
        TaskLockBuilder { common: Common::new(name, runtime), config: TaskLockConfig::builder(), purpose: None }
    }

    /// The task lock `name` with exactly `config`, on `backend`.
    pub fn from_config(
        name: &str,
        config: TaskLockConfig,
        backend: Arc<dyn LockBackend>,
        runtime: R,
    ) -> Result<Self, Error> {
        Ok(Self::assemble(&Name::new(name)?, config, backend, runtime))
    }

    fn assemble(name: &Name, config: TaskLockConfig, backend: Arc<dyn LockBackend>, runtime: R) -> Self {
        let key = Key::new(KeyKind::TaskLock, name);
        let cell = Arc::new(Cell::new(TaskLockMachine::new(key.clone(), &config)));
        let name = key.name();
        let (config, details) = (Mutex::new(config), crate::details::Details::default());
        Self { shared: Arc::new(TaskShared { key, name, cell, config, backend, runtime, details }) }
    }

    /// The task lock name.
    pub fn name(&self) -> &Name {
        &self.shared.name
    }

    /// The configuration in use.
    pub fn config(&self) -> TaskLockConfig {
        self.shared.config.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Swaps the configuration for the next enter, extend or exit; the worker cannot change.
    pub fn reconfigure(&self, config: TaskLockConfig) -> Result<(), Error> {
        let mut current = self.shared.config.lock().unwrap_or_else(PoisonError::into_inner);
        if *current != config {
            ensure_same_worker(current.worker(), config.worker())?;
            *current = config;
        }
        Ok(())
    }

    /// Takes the lock for `lease_duration`, or fails at once: [`Error::WouldBlock`] if another
    /// worker (or this instance's own min hold) has it, [`Error::Reentrant`] if this instance is
    /// entered, [`Error::Acquire`] if the store fails.
    pub async fn enter(&self) -> Result<TaskLockGuard<R>, Error> {
        self.enter_as(HolderKind::Task).await
    }

    /// [`TaskLock::enter`] with a thread's identity (`{worker}:thread:{n}.{hex}`), for a binding
    /// that serves a thread from an event loop (grelmicro's `do_thread_enter`).
    pub async fn enter_thread(&self) -> Result<TaskLockGuard<R>, Error> {
        self.enter_as(HolderKind::Thread).await
    }

    pub(crate) async fn enter_as(&self, kind: HolderKind) -> Result<TaskLockGuard<R>, Error> {
        let config = self.config();
        let token = task_lock_token(config.worker(), kind);
        let details = self.shared.details.get();
        let enter = |m: &mut TaskLockMachine, now| {
            m.set_details(details);
            m.enter(now, token)
        };
        match self.command(enter, &config, "enter").await? {
            TaskLockEvent::Entered { fence, .. } => Ok(TaskLockGuard { lock: self.clone(), fence, done: false }),
            _ => Err(stopped(self.name(), "enter")),
        }
    }

    /// Runs `job` if the lock can be taken, then exits (keeping the min hold); `Ok(None)` when
    /// another worker has it. An exit that finds the lease lost (the job outlived its lease) is
    /// [`Error::NotOwned`].
    pub async fn run<F: Future>(&self, job: F) -> Result<Option<F::Output>, Error> {
        let guard = match self.enter().await {
            Ok(guard) => guard,
            Err(e) if e.is_would_block() => return Ok(None),
            Err(e) => return Err(e),
        };
        let output = job.await;
        guard.exit().await?;
        Ok(Some(output))
    }

    /// Whether anyone holds the task lock ([`Error::LockedCheck`]).
    pub async fn locked(&self) -> Result<bool, Error> {
        let config = self.config();
        let (query, request) = tenure_core::Query::locked(&self.shared.key, self.now(), config.backend_timeout());
        crate::lock::ask(&self.shared.runtime, &self.exec(), query, request).await
    }

    /// Who runs the task now, for people ([`crate::Lock::state`]).
    pub async fn state(&self) -> Result<crate::LockInfo, Error> {
        let (shared, timeout) = (&self.shared, self.config().backend_timeout());
        crate::details::lock_info(&shared.runtime, &*shared.backend, &shared.key, timeout).await
    }

    /// Says what the task is ("nightly export"): shown with each run's host, pid and program by
    /// `tenure locks`, from the next enter on. 1 to 256 bytes, no control characters.
    pub fn set_purpose(&self, purpose: Option<&str>) -> Result<(), Error> {
        self.shared.details.set_purpose(purpose)
    }

    /// Whether the current run may still count on its lease.
    pub fn is_held(&self) -> bool {
        self.shared.cell.lock().is_held(self.now())
    }

    fn now(&self) -> Timestamp {
        self.shared.runtime.now()
    }

    /// The end of validity of the run with fencing token `fence`, while it counts on its lease.
    fn valid_until(&self, fence: FencingToken) -> Option<Timestamp> {
        let machine = self.shared.cell.lock();
        machine.valid_until().filter(|_| machine.fence() == Some(fence))
    }

    /// Why the run `fence` lost its lease, once the machine has said so.
    fn loss(&self, fence: FencingToken) -> Option<tenure_core::LossCause> {
        let (_, reason) = self.shared.cell.lock().loss().filter(|(lost, _)| *lost == fence)?;
        Some(crate::lock::loss_cause(reason))
    }

    pub(crate) fn runtime(&self) -> &R {
        &self.shared.runtime
    }

    fn exec(&self) -> LockExec {
        LockExec(self.shared.backend.clone())
    }

    async fn command(
        &self,
        start: impl FnOnce(&mut TaskLockMachine, Timestamp) -> Result<(), Error>,
        config: &TaskLockConfig,
        operation: &'static str,
    ) -> Result<TaskLockEvent, Error> {
        let start = |machine: &mut TaskLockMachine, now| {
            machine.set_config(config);
            start(machine, now)
        };
        let cell = &self.shared.cell;
        let fence = || cell.lock().fence().map(|fence| fence.get());
        let metered = cell.meter.command("task_lock", self.name().as_str(), operation, fence);
        let ended = match command(&self.shared.runtime, cell, &self.exec(), Command, None, start).await {
            Ok(Some(outcome)) => outcome,
            Ok(None) => Err(stopped(self.name(), operation)),
            Err(refused) => Err(refused),
        };
        if let Some(metered) = metered {
            metered.finish(ended.as_ref());
        }
        ended
    }
}

impl<R: Runtime> Clone for TaskLock<R> {
    fn clone(&self) -> Self {
        Self { shared: self.shared.clone() }
    }
}

impl<R: Runtime> std::fmt::Debug for TaskLock<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskLock").field("name", self.name()).finish_non_exhaustive()
    }
}

struct Command;

impl Purpose<TaskLockMachine> for Command {
    type Output = Result<TaskLockEvent, Error>;

    fn event(&mut self, event: TaskLockEvent) -> Option<Self::Output> {
        match event {
            TaskLockEvent::Failed(e) => Some(Err(e)),
            TaskLockEvent::Lost { .. } => None,
            done => Some(Ok(done)),
        }
    }
}

/// A run of the job under a [`TaskLock`]. Exit it with [`TaskLockGuard::exit`]; dropping it hands
/// the exit to the runtime in the background.
#[must_use = "dropping the guard exits the task lock"]
pub struct TaskLockGuard<R: Runtime> {
    lock: TaskLock<R>,
    fence: FencingToken,
    done: bool,
}

impl<R: Runtime> TaskLockGuard<R> {
    /// The fencing token of this run.
    pub fn fencing_token(&self) -> FencingToken {
        self.fence
    }

    /// Whether the run may still count on its lease.
    pub fn is_valid(&self) -> bool {
        self.lock.is_held()
    }

    /// Until when the run may count on its lease, on the runtime's clock (see
    /// [`LockGuard::valid_until`](crate::LockGuard::valid_until)); `None` once it is lost or
    /// the run exited.
    pub fn valid_until(&self) -> Option<Timestamp> {
        self.lock.valid_until(self.fence)
    }

    /// Keeps the run's lease alive in the background: renewed every third of the lease, retried
    /// while still valid, and the run exited after `max_hold` (`Duration::MAX`: never). See
    /// [`KeepAlive`].
    pub fn keep_alive(self, max_hold: Duration) -> KeepAlive<Self> {
        KeepAlive::new(self, max_hold)
    }

    /// Renews the lease for another `lease_duration` (the reference's `refresh`); the min hold
    /// still counts from the start. [`Error::NotOwned`] if the lease was lost.
    pub async fn extend(&mut self) -> Result<(), Error> {
        let config = self.lock.config();
        if let TaskLockEvent::Extended { fence, .. } =
            self.lock.command(|m, now| m.extend(now), &config, "extend").await?
        {
            self.fence = fence;
        }
        Ok(())
    }

    /// Ends the run: released if `min_hold_duration` has passed since the start, else held until
    /// then. [`Error::NotOwned`] if the lease was lost (the job outlived it).
    pub async fn exit(mut self) -> Result<(), Error> {
        self.done = true;
        let config = self.lock.config();
        self.lock.command(|m, now| m.exit(now), &config, "release").await.map(drop)
    }

    /// Completes when the run's lease is lost (ran out, or found taken) or the run exited.
    pub fn lost(&self) -> impl Future<Output = ()> + Send + 'static + use<R> {
        let (cell, runtime) = (self.lock.shared.cell.clone(), self.lock.shared.runtime.clone());
        // This run: the instance's next run is another one.
        let fence = Some(self.fence);
        async move {
            let held = |m: &TaskLockMachine, now| m.valid_until().filter(|_| m.is_held(now) && m.fence() == fence);
            watch(&cell, &runtime, held).await;
        }
    }
}

impl<R: Runtime> Sealed for TaskLockGuard<R> {
    fn lease_of(&self) -> Arc<dyn Renew> {
        Arc::new(KeptRun { lock: self.lock.clone(), fence: self.fence })
    }
}

impl<R: Runtime> Keepable for TaskLockGuard<R> {
    type Runtime = R;

    fn runtime(&self) -> &R {
        self.lock.runtime()
    }

    fn lost(&self) -> impl Future<Output = ()> + Send + 'static + use<R> {
        TaskLockGuard::lost(self)
    }
}

/// A run's lease as its renewal task sees it.
struct KeptRun<R: Runtime> {
    lock: TaskLock<R>,
    fence: FencingToken,
}

impl<R: Runtime> Renew for KeptRun<R> {
    fn name(&self) -> &str {
        self.lock.name().as_str()
    }

    fn lease(&self) -> Duration {
        self.lock.config().lease_duration()
    }

    fn valid_until(&self) -> Option<Timestamp> {
        self.lock.valid_until(self.fence)
    }

    fn renew(&self) -> Step<'_> {
        Box::pin(async {
            let config = self.lock.config();
            self.lock.command(|m, now| m.extend(now), &config, "extend").await.map(drop)
        })
    }

    fn end(&self) -> Step<'_> {
        Box::pin(async {
            let config = self.lock.config();
            self.lock.command(|m, now| m.exit(now), &config, "release").await.map(drop)
        })
    }

    fn fence(&self) -> FencingToken {
        self.fence
    }

    fn loss(&self) -> Option<tenure_core::LossCause> {
        self.lock.loss(self.fence)
    }

    fn validity_low(&self, left: Duration) {
        self.lock.shared.cell.meter.validity_low(self.fence.get(), left);
    }

    fn lost(&self, cause: &'static str) {
        self.lock.shared.cell.meter.lost(self.fence.get(), cause);
    }
}

impl<R: Runtime> Drop for TaskLockGuard<R> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        // Exit now (the instance is free for the next enter, which first finishes this exit),
        // and drive the store call in the background; never blocks.
        let shared = &self.lock.shared;
        let config = self.lock.config();
        {
            let mut machine = shared.cell.lock();
            let now = shared.runtime.now();
            machine.set_config(&config);
            // Refused only when the run is already over, which leaves nothing to exit.
            let _ = machine.exit(now);
        }
        finish_in_background(&shared.runtime, &shared.cell, &self.lock.exec());
    }
}

impl<R: Runtime> std::fmt::Debug for TaskLockGuard<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskLockGuard").field("fencing_token", &self.fence).field("valid", &self.is_valid()).finish()
    }
}

/// Builds a [`TaskLock`]. Settings left unset come from `GREL_TASKLOCK_*`.
#[must_use]
pub struct TaskLockBuilder<R: Runtime> {
    common: Common<dyn LockBackend, R>,
    config: TaskLockConfigBuilder,
    purpose: Option<String>,
}

impl<R: Runtime> TaskLockBuilder<R> {
    common_setters!(LockBackend);

    config_setters! {
        /// The worker identity.
        worker: WorkerId,
        /// The minimum hold after the start (default 1 s; at most the lease).
        min_hold_duration: Duration,
        /// The lease taken at enter (default 60 s).
        lease_duration: Duration,
        /// The bound on one store call (default 5 s).
        backend_timeout: Duration,
    }

    /// What the task is, shown with its run's holder ([`TaskLock::set_purpose`]).
    pub fn purpose(mut self, purpose: &str) -> Self {
        self.purpose = Some(purpose.to_owned());
        self
    }

    /// Validates and builds.
    pub fn build(self) -> Result<TaskLock<R>, Error> {
        let built = self.common.build("TaskLock", self.config)?;
        let lock = TaskLock::assemble(&built.name, built.config, built.backend, built.runtime);
        lock.set_purpose(self.purpose.as_deref())?;
        Ok(lock)
    }
}

impl<R: Runtime> std::fmt::Debug for TaskLockBuilder<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskLockBuilder").field("name", &self.common.name).finish_non_exhaustive()
    }
}
