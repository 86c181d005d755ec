//! `Coordination`: the backends of an application, and the primitives bound to them (spec §1.8,
//! grelmicro 0.44 names).

use std::collections::BTreeMap;
use std::sync::Arc;

use tenure_core::Error;

use crate::backend::{
    LeaderElectionBackend, LockBackend, MemoryBackend, ReadWriteLockBackend, ScheduleBackend, SemaphoreBackend,
};
use crate::election::LeaderElectionBuilder;
use crate::lock::{LockBuilder, ReadWriteLockBuilder, SemaphoreBuilder};
use crate::runtime::Runtime;
use crate::slots::Slots;
use crate::task_lock::TaskLockBuilder;
use crate::{LeaderElection, Lock, ReadWriteLock, Semaphore, TaskLock};

/// A source of backends (grelmicro's provider): one connection serving whichever primitives its
/// store can. A slot it cannot serve stays empty until used.
pub trait Provider {
    /// The lock backend, if this store serves locks.
    fn lock_backend(&self) -> Option<Arc<dyn LockBackend>> {
        None
    }

    /// The leader-election backend, if this store serves elections.
    fn leader_election_backend(&self) -> Option<Arc<dyn LeaderElectionBackend>> {
        None
    }

    /// The schedule backend, if this store serves cron claims.
    fn schedule_backend(&self) -> Option<Arc<dyn ScheduleBackend>> {
        None
    }

    /// The read-write lock backend, if this store serves read-write locks.
    fn read_write_lock_backend(&self) -> Option<Arc<dyn ReadWriteLockBackend>> {
        None
    }

    /// The semaphore backend, if this store serves semaphores.
    fn semaphore_backend(&self) -> Option<Arc<dyn SemaphoreBackend>> {
        None
    }
}

/// A store that serves all three kinds (every store Tenure ships, the memory backend too) is its own
/// provider: each slot gets a clone (clones share the store).
impl<T> Provider for T
where
    T: LockBackend + LeaderElectionBackend + ScheduleBackend + Clone,
{
    fn lock_backend(&self) -> Option<Arc<dyn LockBackend>> {
        Some(Arc::new(self.clone()))
    }

    fn leader_election_backend(&self) -> Option<Arc<dyn LeaderElectionBackend>> {
        Some(Arc::new(self.clone()))
    }

    fn schedule_backend(&self) -> Option<Arc<dyn ScheduleBackend>> {
        Some(Arc::new(self.clone()))
    }

    fn read_write_lock_backend(&self) -> Option<Arc<dyn ReadWriteLockBackend>> {
        LockBackend::read_write(self)
    }

    fn semaphore_backend(&self) -> Option<Arc<dyn SemaphoreBackend>> {
        LockBackend::semaphore(self)
    }
}

/// The coordination backends of an application, one slot per primitive (locks and elections
/// may live on different stores), and factories for primitives bound to them.
///
/// ```
/// # use tenure::{Coordination, MemoryBackend};
/// # fn example<R: tenure::Runtime>(runtime: R) -> Result<(), tenure::Error> {
/// let coordination = Coordination::new(runtime).source(&MemoryBackend::new());
/// let lock = coordination.lock("cart")?.build()?;
/// let election = coordination.leader_election("scheduler")?.build()?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Coordination<R: Runtime> {
    name: String,
    runtime: R,
    slots: Slots,
}

impl<R: Runtime> Coordination<R> {
    /// A component named `default` with no backends.
    pub fn new(runtime: R) -> Self {
        Self { name: "default".into(), runtime, slots: Slots::default() }
    }

    /// A component with one in-process [`MemoryBackend`] in every slot.
    pub fn memory(runtime: R) -> Self {
        Self::new(runtime).source(&MemoryBackend::new())
    }

    /// Renames the component (several can coexist in a [`Registry`]).
    #[must_use]
    pub fn named(mut self, name: &str) -> Self {
        name.clone_into(&mut self.name);
        self
    }

    /// Fills every slot `provider` serves (replacing what was there).
    #[must_use]
    pub fn source(mut self, provider: &dyn Provider) -> Self {
        self.slots = Slots::of(provider).or(self.slots);
        self
    }

    /// Sets the lock slot.
    #[must_use]
    pub fn with_lock_backend(mut self, backend: Arc<dyn LockBackend>) -> Self {
        self.slots.lock = Some(backend);
        self
    }

    /// Sets the leader-election slot.
    #[must_use]
    pub fn with_leader_election_backend(mut self, backend: Arc<dyn LeaderElectionBackend>) -> Self {
        self.slots.election = Some(backend);
        self
    }

    /// Sets the schedule slot.
    #[must_use]
    pub fn with_schedule_backend(mut self, backend: Arc<dyn ScheduleBackend>) -> Self {
        self.slots.schedule = Some(backend);
        self
    }

    /// Sets the read-write lock slot.
    #[must_use]
    pub fn with_read_write_lock_backend(mut self, backend: Arc<dyn ReadWriteLockBackend>) -> Self {
        self.slots.read_write = Some(backend);
        self
    }

    /// Sets the semaphore slot.
    #[must_use]
    pub fn with_semaphore_backend(mut self, backend: Arc<dyn SemaphoreBackend>) -> Self {
        self.slots.semaphore = Some(backend);
        self
    }

    /// The component's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The runtime primitives run on.
    pub fn runtime(&self) -> &R {
        &self.runtime
    }

    /// The backend of each slot.
    pub fn slots(&self) -> &Slots {
        &self.slots
    }

    /// The lock backend, or [`Error::BackendMissing`].
    pub fn lock_backend(&self) -> Result<Arc<dyn LockBackend>, Error> {
        self.slots.lock()
    }

    /// The leader-election backend, or [`Error::BackendMissing`].
    pub fn leader_election_backend(&self) -> Result<Arc<dyn LeaderElectionBackend>, Error> {
        self.slots.election()
    }

    /// The schedule backend, or [`Error::BackendMissing`].
    pub fn schedule_backend(&self) -> Result<Arc<dyn ScheduleBackend>, Error> {
        self.slots.schedule()
    }

    /// The read-write lock backend, or [`Error::BackendMissing`].
    pub fn read_write_lock_backend(&self) -> Result<Arc<dyn ReadWriteLockBackend>, Error> {
        self.slots.read_write()
    }

    /// The semaphore backend, or [`Error::BackendMissing`].
    pub fn semaphore_backend(&self) -> Result<Arc<dyn SemaphoreBackend>, Error> {
        self.slots.semaphore()
    }

    /// A [`Semaphore`] builder of `permits` permits bound to the semaphore backend.
    pub fn semaphore(&self, name: &str, permits: u32) -> Result<SemaphoreBuilder<R>, Error> {
        Ok(Semaphore::builder(name, permits, self.runtime.clone()).shared_backend(self.semaphore_backend()?))
    }

    /// A [`Lock`] builder bound to the lock backend.
    pub fn lock(&self, name: &str) -> Result<LockBuilder<R>, Error> {
        Ok(Lock::builder(name, self.runtime.clone()).shared_backend(self.lock_backend()?))
    }

    /// A [`ReadWriteLock`] builder bound to the read-write lock backend.
    pub fn read_write_lock(&self, name: &str) -> Result<ReadWriteLockBuilder<R>, Error> {
        Ok(ReadWriteLock::builder(name, self.runtime.clone()).shared_backend(self.read_write_lock_backend()?))
    }

    /// A [`TaskLock`] builder bound to the lock backend.
    pub fn task_lock(&self, name: &str) -> Result<TaskLockBuilder<R>, Error> {
        Ok(TaskLock::builder(name, self.runtime.clone()).shared_backend(self.lock_backend()?))
    }

    /// A [`LeaderElection`] builder bound to the leader-election backend.
    pub fn leader_election(&self, name: &str) -> Result<LeaderElectionBuilder<R>, Error> {
        Ok(LeaderElection::builder(name, self.runtime.clone()).shared_backend(self.leader_election_backend()?))
    }
}

impl<R: Runtime> std::fmt::Debug for Coordination<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coordination").field("name", &self.name).field("slots", &self.slots).finish()
    }
}

/// Named [`Coordination`] components of an application (grelmicro's registered components).
#[derive(Debug)]
pub struct Registry<R: Runtime> {
    components: BTreeMap<String, Coordination<R>>,
}

impl<R: Runtime> Registry<R> {
    /// No components.
    pub fn new() -> Self {
        Self { components: BTreeMap::new() }
    }

    /// Registers `component` under its name; a second one with that name is refused.
    pub fn register(&mut self, component: Coordination<R>) -> Result<(), Error> {
        if self.components.contains_key(component.name()) {
            return Err(Error::settings(
                "name",
                format!(
                    "a Coordination named '{}' is already registered; give the second one another name",
                    component.name()
                ),
            ));
        }
        self.components.insert(component.name().to_owned(), component);
        Ok(())
    }

    /// The component named `name`; for `"default"`, the sole component whatever its name.
    /// [`Error::OutOfContext`] when there is none (or, for `"default"`, several and none named so).
    pub fn get(&self, name: &str) -> Result<&Coordination<R>, Error> {
        if let Some(component) = self.components.get(name) {
            return Ok(component);
        }
        if name == "default"
            && self.components.len() == 1
            && let Some(sole) = self.components.values().next()
        {
            return Ok(sole);
        }
        let known: Vec<&str> = self.components.keys().map(String::as_str).collect();
        Err(Error::OutOfContext {
            message: format!(
                "no Coordination named '{name}' is registered (registered: {}). Register one, or name it.",
                if known.is_empty() { "none".to_owned() } else { known.join(", ") }
            ),
        })
    }

    /// The default component (see [`Registry::get`]).
    pub fn default_component(&self) -> Result<&Coordination<R>, Error> {
        self.get("default")
    }
}

impl<R: Runtime> Default for Registry<R> {
    fn default() -> Self {
        Self::new()
    }
}
