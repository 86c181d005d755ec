//! `ReadWriteHolders`: one caller's two sides of a read-write lock, and the rule that binds them.

use std::sync::Arc;
use std::time::Duration;

use tenure_core::{Access, Error, LockPhase};

use super::{LockGuard, LockHolder, ReadWriteLock};
use crate::runtime::Runtime;

/// One caller's holders of both sides of a [`ReadWriteLock`] — an asyncio task's, a thread's, the
/// work of a binding's `using` block — and the rule that binds them, as grelmicro's: a caller that
/// reads and asks to write gets [`Error::Upgrade`] (it would wait for itself: its intent holds new
/// readers out while its own read keeps the writer out), one that asks again for a side while it
/// holds one [`Error::Reentrant`]. A writer that downgraded reads. A side counts as held from
/// its acquire until its release (as a holder's own re-entrancy check counts it: a lease that ran
/// out, or whose release failed, too); released, or never granted, the caller may ask again.
///
/// Clones share the pair (a guard it hands out shares one side's holder until released).
pub struct ReadWriteHolders<R: Runtime> {
    /// The read side's holder, then the write side's.
    sides: Arc<[LockHolder<R>; 2]>,
}

impl<R: Runtime> ReadWriteLock<R> {
    /// A caller's pair of holders, with an async task's identity.
    pub fn holders(&self) -> ReadWriteHolders<R> {
        ReadWriteHolders { sides: Arc::new([self.read().holder(), self.write().holder()]) }
    }

    /// A caller's pair of holders, with a thread's identity (see [`super::Lock::thread_holder`]).
    pub fn thread_holders(&self) -> ReadWriteHolders<R> {
        ReadWriteHolders { sides: Arc::new([self.read().thread_holder(), self.write().thread_holder()]) }
    }
}

impl<R: Runtime> ReadWriteHolders<R> {
    /// The holder of the write side (`write`) or of the read side.
    pub fn holder(&self, write: bool) -> &LockHolder<R> {
        &self.sides[usize::from(write)]
    }

    /// What the caller holds or is acquiring, until it releases it (a lease that ran out too,
    /// which it may still release): [`Access::Read`] for a read lease, a writer's downgraded one
    /// included, or [`Access::Write`].
    pub fn held(&self) -> Option<Access> {
        let holds =
            |h: &&LockHolder<R>| !matches!(h.phase(), LockPhase::Idle | LockPhase::Releasing | LockPhase::Cancelling);
        self.sides.iter().find(holds).map(LockHolder::access)
    }

    /// Refuses to ask for a side (`write`) while holding one: [`Error::Upgrade`] for a reader
    /// asking to write, [`Error::Reentrant`] otherwise.
    pub fn check(&self, write: bool) -> Result<(), Error> {
        let name = || self.sides[0].lock().name().as_str().to_owned();
        match self.held() {
            None => Ok(()),
            Some(Access::Read) if write => Err(Error::Upgrade { name: name() }),
            Some(_) => Err(Error::Reentrant { name: name() }),
        }
    }

    /// Acquires a side after [`Self::check`], waiting up to `timeout` (`None`: forever): a guard
    /// on this pair's holder. Until that guard is released or dropped, the side is the guard's:
    /// asking for it again is [`Error::Reentrant`] even once its lease is lost (the guard's
    /// release would end a new lease of the same holder).
    pub async fn acquire(&self, write: bool, timeout: Option<Duration>) -> Result<LockGuard<R>, Error> {
        let holder = self.unguarded(write)?;
        Ok(LockGuard::new(holder.clone(), holder.acquire(timeout).await?))
    }

    /// One attempt at a side, as [`Self::acquire`] ([`Error::WouldBlock`] if refused).
    pub async fn acquire_nowait(&self, write: bool) -> Result<LockGuard<R>, Error> {
        let holder = self.unguarded(write)?;
        Ok(LockGuard::new(holder.clone(), holder.acquire_nowait().await?))
    }

    /// The side's holder after [`Self::check`], if no guard of it is alive.
    fn unguarded(&self, write: bool) -> Result<&LockHolder<R>, Error> {
        self.check(write)?;
        let holder = self.holder(write);
        if holder.is_shared() {
            return Err(Error::Reentrant { name: holder.lock().name().as_str().to_owned() });
        }
        Ok(holder)
    }
}

impl<R: Runtime> Clone for ReadWriteHolders<R> {
    fn clone(&self) -> Self {
        Self { sides: self.sides.clone() }
    }
}

impl<R: Runtime> std::fmt::Debug for ReadWriteHolders<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadWriteHolders")
            .field("name", self.sides[0].lock().name())
            .field("held", &self.held())
            .finish()
    }
}
