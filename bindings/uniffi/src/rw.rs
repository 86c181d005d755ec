//! `ReadWriteLock` and `Semaphore`: their acquires give the same [`LockGuard`] a lock's does
//! (the driver's lease slot): its own fencing token, extend, release, keep-alive; a writer's
//! also tells `poisoned` and downgrades.

use std::sync::Arc;
use std::time::Duration;

use tenure_tokio::Tokio;

use crate::guard::LockGuard;
use crate::lock::{LockOptions, lock_options};
use crate::seconds::seconds;
use crate::store::Store;
use crate::{TenureError, block, runtime};

/// A read-write lock's state: the generation (the last write's fencing token), whether a writer
/// writes, how many read, how many writers wait.
#[derive(Debug, Clone, uniffi::Record)]
pub struct ReadWriteLockState {
    pub generation: i64,
    pub writing: bool,
    pub readers: u32,
    pub waiting_writers: u32,
}

/// A semaphore's state: the stored permit count (0 while nobody holds or waits), the holders,
/// the waiters in line, and the last fencing token issued.
#[derive(Debug, Clone, uniffi::Record)]
pub struct SemaphoreState {
    pub permits: u32,
    pub holders: u32,
    pub waiting: u32,
    pub fence: i64,
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn long(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A read-write lock on a store, as grelmicro 0.44's `ReadWriteLock(...)`.
#[derive(uniffi::Object)]
pub struct ReadWriteLock {
    inner: tenure::ReadWriteLock<Tokio>,
}

#[uniffi::export]
impl ReadWriteLock {
    /// The read-write lock `name` on `store`.
    #[uniffi::constructor(default(options = None))]
    pub fn new(name: String, store: Arc<Store>, options: Option<LockOptions>) -> Result<Arc<Self>, TenureError> {
        let o = options.unwrap_or_default();
        let backend = store.inner.slots().read_write()?;
        let builder = tenure::ReadWriteLock::builder(&name, runtime()).shared_backend(backend);
        let inner = lock_options(&o)?.apply(builder)?.build()?;
        inner.set_purpose(o.purpose.as_deref())?;
        Ok(Arc::new(Self { inner }))
    }

    /// A new caller's pair of holders, one per side (what a side's `withLock` runs its work as).
    pub fn holders(&self) -> Arc<ReadWriteHolders> {
        Arc::new(ReadWriteHolders(self.inner.holders()))
    }

    /// What holds the lock now.
    pub async fn state(&self) -> Result<ReadWriteLockState, TenureError> {
        let s = self.inner.state().await?;
        Ok(ReadWriteLockState {
            generation: long(s.generation),
            writing: s.writing,
            readers: count(s.readers),
            waiting_writers: count(s.waiting_writers),
        })
    }

    /// [`ReadWriteLock::state`], blocking the calling thread.
    pub fn state_blocking(&self) -> Result<ReadWriteLockState, TenureError> {
        block("ReadWriteLock.stateBlocking", self.state())
    }
}

/// One caller's holders of both sides, which refuse an upgrade (`LockUpgrade`) and a second
/// lease (`LockReentrant`): the driver's rule.
#[derive(uniffi::Object)]
pub struct ReadWriteHolders(tenure::ReadWriteHolders<Tokio>);

impl ReadWriteHolders {
    async fn take(&self, write: bool, timeout: Option<Duration>) -> Result<Arc<LockGuard>, TenureError> {
        Ok(LockGuard::new(self.0.acquire(write, timeout).await?))
    }
}

#[uniffi::export]
impl ReadWriteHolders {
    /// Takes the write side (`write`) or a read side, waiting as long as it takes. Cancelling
    /// the call withdraws a writer's intent.
    pub async fn acquire(&self, write: bool) -> Result<Arc<LockGuard>, TenureError> {
        self.take(write, None).await
    }

    /// [`ReadWriteHolders::acquire`], blocking the calling thread.
    pub fn acquire_blocking(&self, write: bool) -> Result<Arc<LockGuard>, TenureError> {
        block("ReadWriteLock.acquireBlocking", self.acquire(write))
    }

    /// [`ReadWriteHolders::acquire`] up to `timeout` seconds: `LockTimeout` if it does not come.
    pub async fn acquire_timeout(&self, write: bool, timeout: f64) -> Result<Arc<LockGuard>, TenureError> {
        self.take(write, Some(seconds("timeout", timeout)?)).await
    }

    /// [`ReadWriteHolders::acquire_timeout`], blocking the calling thread.
    pub fn acquire_timeout_blocking(&self, write: bool, timeout: f64) -> Result<Arc<LockGuard>, TenureError> {
        block("ReadWriteLock.acquireBlocking", self.acquire_timeout(write, timeout))
    }

    /// One attempt at the write side (`write`) or a read side: `WouldBlock` if the other side
    /// (or another writer) holds it; a writer's keeps no intent.
    pub async fn try_acquire(&self, write: bool) -> Result<Arc<LockGuard>, TenureError> {
        Ok(LockGuard::new(self.0.acquire_nowait(write).await?))
    }

    /// [`ReadWriteHolders::try_acquire`], blocking the calling thread.
    pub fn try_acquire_blocking(&self, write: bool) -> Result<Arc<LockGuard>, TenureError> {
        block("ReadWriteLock.tryAcquireBlocking", self.try_acquire(write))
    }
}

/// A fenced semaphore on a store: at most `permits` holders of the name at once; its acquires
/// wait in line with the other waiters (a cancelled one gives up its place).
#[derive(uniffi::Object)]
pub struct Semaphore {
    inner: tenure::Semaphore<Tokio>,
}

#[uniffi::export]
impl Semaphore {
    /// The semaphore `name` of `permits` permits on `store`.
    #[uniffi::constructor(default(options = None))]
    pub fn new(
        name: String,
        permits: u32,
        store: Arc<Store>,
        options: Option<LockOptions>,
    ) -> Result<Arc<Self>, TenureError> {
        let o = options.unwrap_or_default();
        let backend = store.inner.slots().semaphore()?;
        let builder = tenure::Semaphore::builder(&name, permits, runtime()).shared_backend(backend);
        let inner = lock_options(&o)?.apply(builder)?.build()?;
        inner.set_purpose(o.purpose.as_deref())?;
        Ok(Arc::new(Self { inner }))
    }

    /// How many holders it admits at once.
    pub fn permits(&self) -> u32 {
        self.inner.permits()
    }

    /// The stored count, the holders, the waiters and the last fencing token.
    pub async fn state(&self) -> Result<SemaphoreState, TenureError> {
        let s = self.inner.state().await?;
        Ok(SemaphoreState {
            permits: s.permits,
            holders: count(s.holders),
            waiting: count(s.waiting),
            fence: long(s.fence),
        })
    }

    /// [`Semaphore::state`], blocking the calling thread.
    pub fn state_blocking(&self) -> Result<SemaphoreState, TenureError> {
        block("Semaphore.stateBlocking", self.state())
    }
}

crate::lock::configured!(ReadWriteLock);
crate::lock::configured!(Semaphore);
crate::lock::acquires!(Semaphore, "Semaphore");
