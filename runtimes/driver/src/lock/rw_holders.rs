//! `ReadWriteHolders`: one caller's two sides of a read-write lock, and the rule that binds them.

use std::time::Duration;

use tenure_core::{Access, Error};

use super::{LockGuard, LockHolder, ReadWriteLock};
use crate::runtime::Runtime;

/// One caller's holders of both sides of a [`ReadWriteLock`] — an asyncio task's, a thread's, the
/// work of a binding's `using` block — and the rule that binds them, as grelmicro's: a caller that
/// reads and asks to write gets [`Error::Upgrade`] (it would wait for itself: its intent holds new
/// readers out while its own read keeps the writer out), one that asks again for a side while it
/// holds one [`Error::Reentrant`]. A writer that downgraded reads. Released (or never granted),
/// the caller may ask again.
pub struct ReadWriteHolders<R: Runtime> {
    read: LockHolder<R>,
    write: LockHolder<R>,
}

impl<R: Runtime> ReadWriteLock<R> {
    /// A caller's pair of holders, with an async task's identity.
    pub fn holders(&self) -> ReadWriteHolders<R> {
        ReadWriteHolders { read: self.read().holder(), write: self.write().holder() }
    }

    /// A caller's pair of holders, with a thread's identity (see [`super::Lock::thread_holder`]).
    pub fn thread_holders(&self) -> ReadWriteHolders<R> {
        ReadWriteHolders { read: self.read().thread_holder(), write: self.write().thread_holder() }
    }
}

impl<R: Runtime> ReadWriteHolders<R> {
    /// The holder of the write side (`write`) or of the read side.
    pub fn holder(&self, write: bool) -> &LockHolder<R> {
        if write { &self.write } else { &self.read }
    }

    /// What the caller holds, until it releases it (a lease that ran out too, which it may still
    /// release): [`Access::Read`] for a read lease, a writer's downgraded one included, or
    /// [`Access::Write`].
    pub fn held(&self) -> Option<Access> {
        [&self.read, &self.write].into_iter().find(|h| h.handle().is_some()).map(LockHolder::access)
    }

    /// Refuses to ask for a side (`write`) while holding one: [`Error::Upgrade`] for a reader
    /// asking to write, [`Error::Reentrant`] otherwise.
    pub fn check(&self, write: bool) -> Result<(), Error> {
        let name = || self.read.lock().name().as_str().to_owned();
        match self.held() {
            None => Ok(()),
            Some(Access::Read) if write => Err(Error::Upgrade { name: name() }),
            Some(_) => Err(Error::Reentrant { name: name() }),
        }
    }

    /// Acquires a side after [`Self::check`], waiting up to `timeout` (`None`: forever): a guard
    /// on this pair's holder, which the pair sees held until the guard is released.
    pub async fn acquire(&self, write: bool, timeout: Option<Duration>) -> Result<LockGuard<R>, Error> {
        self.check(write)?;
        let holder = self.holder(write);
        Ok(LockGuard::new(holder.clone(), holder.acquire(timeout).await?))
    }

    /// One attempt at a side after [`Self::check`] ([`Error::WouldBlock`] if refused).
    pub async fn acquire_nowait(&self, write: bool) -> Result<LockGuard<R>, Error> {
        self.check(write)?;
        let holder = self.holder(write);
        Ok(LockGuard::new(holder.clone(), holder.acquire_nowait().await?))
    }
}

impl<R: Runtime> Clone for ReadWriteHolders<R> {
    fn clone(&self) -> Self {
        Self { read: self.read.clone(), write: self.write.clone() }
    }
}

impl<R: Runtime> std::fmt::Debug for ReadWriteHolders<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadWriteHolders").field("name", self.read.lock().name()).field("held", &self.held()).finish()
    }
}
