//! An open store of any kind: the provider of every primitive it serves.

use std::sync::Arc;

use tenure::backend::{
    LeaderElectionBackend, LockBackend, ReadWriteLockBackend, ScheduleBackend, SemaphoreBackend, StoreKind,
};
use tenure::{Inspect, MemoryBackend, Provider};
use tenure_core::BackendError;

/// `$body` with `$store` bound to the backend inside `$this`, whatever its kind.
macro_rules! each_store {
    ($this:expr, $store:ident => $body:expr) => {
        match $this {
            Store::Memory($store) => $body,
            #[cfg(feature = "backend-sqlite")]
            Store::Sqlite($store) => $body,
            #[cfg(feature = "backend-redis")]
            Store::Redis($store) => $body,
            #[cfg(feature = "backend-postgres")]
            Store::Postgres($store) => $body,
            #[cfg(feature = "backend-etcd")]
            Store::Etcd($store) => $body,
        }
    };
}

/// An open store. Clones share its connection (or file, or memory).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Store {
    /// The in-process store.
    Memory(MemoryBackend),
    /// A SQLite file.
    #[cfg(feature = "backend-sqlite")]
    Sqlite(tenure_sqlite::SqliteBackend),
    /// A Redis or Valkey server or cluster.
    #[cfg(feature = "backend-redis")]
    Redis(tenure_redis::RedisBackend),
    /// A PostgreSQL database.
    #[cfg(feature = "backend-postgres")]
    Postgres(tenure_postgres::PostgresBackend),
    /// An etcd cluster.
    #[cfg(feature = "backend-etcd")]
    Etcd(tenure_etcd::EtcdBackend),
}

impl Store {
    /// The kind of store.
    pub fn kind(&self) -> StoreKind {
        match self {
            Self::Memory(_) => StoreKind::Memory,
            #[cfg(feature = "backend-sqlite")]
            Self::Sqlite(_) => StoreKind::Sqlite,
            #[cfg(feature = "backend-redis")]
            Self::Redis(_) => StoreKind::Redis,
            #[cfg(feature = "backend-postgres")]
            Self::Postgres(_) => StoreKind::Postgres,
            #[cfg(feature = "backend-etcd")]
            Self::Etcd(_) => StoreKind::Etcd,
        }
    }

    /// The store as something that lists what it holds (what `tenure status` shows); `None`
    /// for memory, which only this process sees.
    pub fn inspect(&self) -> Option<Arc<dyn Inspect>> {
        match self {
            Self::Memory(_) => None,
            #[cfg(feature = "backend-sqlite")]
            Self::Sqlite(s) => Some(Arc::new(s.clone())),
            #[cfg(feature = "backend-redis")]
            Self::Redis(r) => Some(Arc::new(r.clone())),
            #[cfg(feature = "backend-postgres")]
            Self::Postgres(p) => Some(Arc::new(p.clone())),
            #[cfg(feature = "backend-etcd")]
            Self::Etcd(e) => Some(Arc::new(e.clone())),
        }
    }

    /// Closes the store: later calls through any clone fail. SQLite first vacates expired
    /// leases (keeping fencing counters); the network stores close at once (leases end by
    /// their expiry); memory has nothing to close.
    pub async fn close(&self) -> Result<(), BackendError> {
        match self {
            Self::Memory(_) => Ok(()),
            #[cfg(feature = "backend-sqlite")]
            Self::Sqlite(s) => s.close().await,
            #[cfg(feature = "backend-redis")]
            Self::Redis(r) => {
                r.close();
                Ok(())
            }
            #[cfg(feature = "backend-postgres")]
            Self::Postgres(p) => {
                p.close();
                Ok(())
            }
            #[cfg(feature = "backend-etcd")]
            Self::Etcd(e) => {
                e.close();
                Ok(())
            }
        }
    }

    /// The store's lock backend (locks and task locks): every store serves them.
    pub fn locks(&self) -> Arc<dyn LockBackend> {
        each_store!(self, store => Arc::new(store.clone()))
    }

    /// The store's leader-election backend: every store serves elections.
    pub fn elections(&self) -> Arc<dyn LeaderElectionBackend> {
        each_store!(self, store => Arc::new(store.clone()))
    }

    /// The store as the provider of its schedule claims.
    fn provider(&self) -> &dyn Provider {
        each_store!(self, store => store)
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
        self.provider().schedule_backend()
    }

    fn read_write_lock_backend(&self) -> Option<Arc<dyn ReadWriteLockBackend>> {
        self.provider().read_write_lock_backend()
    }

    fn semaphore_backend(&self) -> Option<Arc<dyn SemaphoreBackend>> {
        self.provider().semaphore_backend()
    }
}
