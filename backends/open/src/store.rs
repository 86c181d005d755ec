//! An open store of any kind: the provider of every primitive it serves.

use std::sync::Arc;

use tenure::backend::{LeaderElectionBackend, LockBackend, ReadWriteLockBackend, ScheduleBackend, SemaphoreBackend};
use tenure::{Inspect, MemoryBackend, Provider};
use tenure_core::BackendError;
use tenure_store::OpenStore;

use crate::StoreKind;

/// An open store. Clones share its connection (or file, or memory).
#[derive(Clone, Debug)]
pub struct Store {
    kind: StoreKind,
    store: Arc<dyn OpenStore>,
}

impl Store {
    /// `store`, of `kind`.
    pub fn new(kind: StoreKind, store: Arc<dyn OpenStore>) -> Self {
        Self { kind, store }
    }

    /// A new in-process store: its locks exclude within this process only.
    pub fn memory() -> Self {
        Self::new(StoreKind::Memory, Arc::new(MemoryBackend::new()))
    }

    /// The kind of store.
    pub fn kind(&self) -> StoreKind {
        self.kind
    }

    /// The store as something that lists what it holds (what `tenure status` shows); `None`
    /// for memory, which only this process sees.
    pub fn inspect(&self) -> Option<Arc<dyn Inspect>> {
        self.store.inspect()
    }

    /// Closes the store: later calls through any clone fail. SQLite first vacates expired
    /// leases (keeping fencing counters); the network stores close at once (leases end by
    /// their expiry); memory has nothing to close.
    pub async fn close(&self) -> Result<(), BackendError> {
        self.store.close().await
    }

    /// The store's lock backend (locks and task locks): every store serves them.
    pub fn locks(&self) -> Arc<dyn LockBackend> {
        self.store.locks()
    }

    /// The store's leader-election backend: every store serves elections.
    pub fn elections(&self) -> Arc<dyn LeaderElectionBackend> {
        self.store.elections()
    }
}

/// Every store serves locks, task locks, elections, schedule claims, read-write locks and
/// semaphores.
impl Provider for Store {
    fn lock_backend(&self) -> Option<Arc<dyn LockBackend>> {
        Some(self.locks())
    }

    fn leader_election_backend(&self) -> Option<Arc<dyn LeaderElectionBackend>> {
        Some(self.elections())
    }

    fn schedule_backend(&self) -> Option<Arc<dyn ScheduleBackend>> {
        self.store.schedule_backend()
    }

    fn read_write_lock_backend(&self) -> Option<Arc<dyn ReadWriteLockBackend>> {
        self.store.read_write_lock_backend()
    }

    fn semaphore_backend(&self) -> Option<Arc<dyn SemaphoreBackend>> {
        self.store.semaphore_backend()
    }
}
