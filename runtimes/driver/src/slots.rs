//! The backend of each kind of primitive, each if a store serves it: what a [`Coordination`]
//! wires and what a binding's store object holds, with the error naming a missing one.
//!
//! [`Coordination`]: crate::Coordination

use std::sync::Arc;

use tenure_core::{BackendSlot, Error};

use crate::Provider;
use crate::backend::{LeaderElectionBackend, LockBackend, ReadWriteLockBackend, ScheduleBackend, SemaphoreBackend};

/// One backend per kind of primitive, each if served.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct Slots {
    /// Locks and task locks.
    pub lock: Option<Arc<dyn LockBackend>>,
    /// Leader elections.
    pub election: Option<Arc<dyn LeaderElectionBackend>>,
    /// Cron schedule claims.
    pub schedule: Option<Arc<dyn ScheduleBackend>>,
    /// Read-write locks.
    pub read_write: Option<Arc<dyn ReadWriteLockBackend>>,
    /// Semaphores.
    pub semaphore: Option<Arc<dyn SemaphoreBackend>>,
}

impl Slots {
    /// Every slot `provider` serves.
    pub fn of(provider: &dyn Provider) -> Self {
        Self {
            lock: provider.lock_backend(),
            election: provider.leader_election_backend(),
            schedule: provider.schedule_backend(),
            read_write: provider.read_write_lock_backend(),
            semaphore: provider.semaphore_backend(),
        }
    }

    /// `store` in every slot but the schedule's: a user's object, called for whatever a primitive
    /// asks (a call it lacks fails when made, naming the method).
    pub fn all<S>(store: S) -> Self
    where
        S: LockBackend + LeaderElectionBackend + ReadWriteLockBackend + SemaphoreBackend + Clone,
    {
        Self {
            lock: Some(Arc::new(store.clone())),
            election: Some(Arc::new(store.clone())),
            schedule: None,
            read_write: Some(Arc::new(store.clone())),
            semaphore: Some(Arc::new(store)),
        }
    }

    /// These slots, the empty ones filled from `fallback`.
    #[must_use]
    pub fn or(self, fallback: Slots) -> Self {
        Self {
            lock: self.lock.or(fallback.lock),
            election: self.election.or(fallback.election),
            schedule: self.schedule.or(fallback.schedule),
            read_write: self.read_write.or(fallback.read_write),
            semaphore: self.semaphore.or(fallback.semaphore),
        }
    }

    /// The lock backend, or [`Error::BackendMissing`].
    pub fn lock(&self) -> Result<Arc<dyn LockBackend>, Error> {
        self.lock.clone().ok_or(Error::BackendMissing { slot: BackendSlot::Lock })
    }

    /// The leader-election backend, or [`Error::BackendMissing`].
    pub fn election(&self) -> Result<Arc<dyn LeaderElectionBackend>, Error> {
        self.election.clone().ok_or(Error::BackendMissing { slot: BackendSlot::LeaderElection })
    }

    /// The schedule backend, or [`Error::BackendMissing`].
    pub fn schedule(&self) -> Result<Arc<dyn ScheduleBackend>, Error> {
        self.schedule.clone().ok_or(Error::BackendMissing { slot: BackendSlot::Schedule })
    }

    /// The read-write lock backend, or [`Error::BackendMissing`].
    pub fn read_write(&self) -> Result<Arc<dyn ReadWriteLockBackend>, Error> {
        self.read_write.clone().ok_or(Error::BackendMissing { slot: BackendSlot::ReadWriteLock })
    }

    /// The semaphore backend, or [`Error::BackendMissing`].
    pub fn semaphore(&self) -> Result<Arc<dyn SemaphoreBackend>, Error> {
        self.semaphore.clone().ok_or(Error::BackendMissing { slot: BackendSlot::Semaphore })
    }
}

impl std::fmt::Debug for Slots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slots")
            .field("lock", &self.lock.is_some())
            .field("leader_election", &self.election.is_some())
            .field("schedule", &self.schedule.is_some())
            .field("read_write_lock", &self.read_write.is_some())
            .field("semaphore", &self.semaphore.is_some())
            .finish()
    }
}
