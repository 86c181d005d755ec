//! Blocking adapters for synchronous code (grelmicro's `from_thread`): the same operations,
//! waited for on the calling thread.
//!
//! Call them from plain threads (or `spawn_blocking`). A call from a thread that runs the
//! runtime would stall the tasks it waits for, so it is refused with [`Error::Deadlock`]
//! wherever the runtime can tell (tokio and async-std can; smol cannot).

use std::future::Future;
use std::time::Duration;

use tenure_core::{Error, FencingToken, HolderKind, LockHandle};

use crate::lock::{Lock, LockGuard, LockHolder};
use crate::runtime::Runtime;
use crate::task_lock::{TaskLock, TaskLockGuard};

fn block<R: Runtime, T>(runtime: &R, what: &str, work: impl Future<Output = Result<T, Error>>) -> Result<T, Error> {
    if runtime.blocks_runtime() {
        return Err(Error::Deadlock { what: what.to_owned() });
    }
    futures_lite::future::block_on(work)
}

impl<R: Runtime> Lock<R> {
    /// The blocking adapter of this lock.
    pub fn blocking(&self) -> BlockingLock<R> {
        BlockingLock { lock: self.clone() }
    }
}

/// [`Lock`] for synchronous code. Holders are threads (`{worker}:thread:{n}.{hex}`).
#[derive(Debug, Clone)]
pub struct BlockingLock<R: Runtime> {
    lock: Lock<R>,
}

impl<R: Runtime> BlockingLock<R> {
    fn runtime(&self) -> &R {
        &self.lock.shared.runtime
    }

    /// A new thread holder.
    pub fn holder(&self) -> BlockingLockHolder<R> {
        BlockingLockHolder { holder: LockHolder::new(self.lock.clone(), HolderKind::Thread) }
    }

    /// Blocks until acquired, or until `timeout` ([`Error::Timeout`]).
    pub fn acquire(&self, timeout: Option<Duration>) -> Result<BlockingLockGuard<R>, Error> {
        let holder = LockHolder::new(self.lock.clone(), HolderKind::Thread);
        let guard = block(self.runtime(), "Lock.blocking().acquire", holder.acquire_guard(timeout))?;
        Ok(BlockingLockGuard { guard })
    }

    /// One attempt ([`Error::WouldBlock`] if held).
    pub fn acquire_nowait(&self) -> Result<BlockingLockGuard<R>, Error> {
        let holder = LockHolder::new(self.lock.clone(), HolderKind::Thread);
        let guard = block(self.runtime(), "Lock.blocking().acquire_nowait", holder.acquire_nowait_guard())?;
        Ok(BlockingLockGuard { guard })
    }

    /// Whether anyone holds the lock.
    pub fn locked(&self) -> Result<bool, Error> {
        block(self.runtime(), "Lock.blocking().locked", self.lock.locked())
    }
}

/// A held lock in synchronous code; dropping it releases in the background.
#[derive(Debug)]
#[must_use = "dropping the guard releases the lock"]
pub struct BlockingLockGuard<R: Runtime> {
    guard: LockGuard<R>,
}

impl<R: Runtime> BlockingLockGuard<R> {
    fn runtime(&self) -> R {
        self.guard.holder().lock().shared.runtime.clone()
    }

    /// The handle.
    pub fn handle(&self) -> &LockHandle {
        self.guard.handle()
    }

    /// The fencing token.
    pub fn fencing_token(&self) -> FencingToken {
        self.guard.fencing_token()
    }

    /// Whether the lease may still be counted on.
    pub fn is_valid(&self) -> bool {
        self.guard.is_valid()
    }

    /// Renews the lease (see [`LockGuard::extend`]).
    pub fn extend(&mut self) -> Result<LockHandle, Error> {
        let runtime = self.runtime();
        block(&runtime, "LockGuard.extend", async { self.guard.extend().await.cloned() })
    }

    /// Releases the lock.
    pub fn release(self) -> Result<(), Error> {
        let runtime = self.runtime();
        block(&runtime, "LockGuard.release", self.guard.release())
    }

    /// Whether the store still has this guard's token as the holder.
    pub fn owned(&self) -> Result<bool, Error> {
        block(&self.runtime(), "LockGuard.owned", self.guard.owned())
    }
}

/// A thread holder, with grelmicro's per-thread semantics: nested acquires are
/// [`Error::Reentrant`], and release asks the store even when nothing is held locally.
#[derive(Debug, Clone)]
pub struct BlockingLockHolder<R: Runtime> {
    holder: LockHolder<R>,
}

impl<R: Runtime> BlockingLockHolder<R> {
    fn runtime(&self) -> R {
        self.holder.lock().shared.runtime.clone()
    }

    /// Acquires (see [`LockHolder::acquire`]).
    pub fn acquire(&self, timeout: Option<Duration>) -> Result<LockHandle, Error> {
        block(&self.runtime(), "LockHolder.acquire", self.holder.acquire(timeout))
    }

    /// One attempt.
    pub fn acquire_nowait(&self) -> Result<LockHandle, Error> {
        block(&self.runtime(), "LockHolder.acquire_nowait", self.holder.acquire_nowait())
    }

    /// Renews the lease.
    pub fn extend(&self) -> Result<LockHandle, Error> {
        block(&self.runtime(), "LockHolder.extend", self.holder.extend())
    }

    /// Releases the lease.
    pub fn release(&self) -> Result<(), Error> {
        block(&self.runtime(), "LockHolder.release", self.holder.release())
    }

    /// Whether this holder's token holds the lock in the store.
    pub fn owned(&self) -> Result<bool, Error> {
        block(&self.runtime(), "LockHolder.owned", self.holder.owned())
    }

    /// Whether this holder may act as the owner now.
    pub fn is_held(&self) -> bool {
        self.holder.is_held()
    }
}

impl<R: Runtime> TaskLock<R> {
    /// The blocking adapter of this task lock.
    pub fn blocking(&self) -> BlockingTaskLock<R> {
        BlockingTaskLock { lock: self.clone() }
    }
}

/// [`TaskLock`] for synchronous code.
#[derive(Debug, Clone)]
pub struct BlockingTaskLock<R: Runtime> {
    lock: TaskLock<R>,
}

impl<R: Runtime> BlockingTaskLock<R> {
    /// Takes the task lock or fails at once (see [`TaskLock::enter`]).
    pub fn enter(&self) -> Result<BlockingTaskLockGuard<R>, Error> {
        let guard = block(self.lock.runtime(), "TaskLock.blocking().enter", self.lock.enter_as(HolderKind::Thread))?;
        Ok(BlockingTaskLockGuard { guard, runtime: self.lock.runtime().clone() })
    }

    /// Whether anyone holds the task lock.
    pub fn locked(&self) -> Result<bool, Error> {
        block(self.lock.runtime(), "TaskLock.blocking().locked", self.lock.locked())
    }
}

/// A run under a task lock in synchronous code; dropping it exits in the background.
#[derive(Debug)]
#[must_use = "dropping the guard exits the task lock"]
pub struct BlockingTaskLockGuard<R: Runtime> {
    guard: TaskLockGuard<R>,
    runtime: R,
}

impl<R: Runtime> BlockingTaskLockGuard<R> {
    /// The fencing token of this run.
    pub fn fencing_token(&self) -> FencingToken {
        self.guard.fencing_token()
    }

    /// Renews the lease.
    pub fn extend(&mut self) -> Result<(), Error> {
        let runtime = self.runtime.clone();
        block(&runtime, "TaskLockGuard.extend", self.guard.extend())
    }

    /// Ends the run, keeping the min hold.
    pub fn exit(self) -> Result<(), Error> {
        block(&self.runtime, "TaskLockGuard.exit", self.guard.exit())
    }
}
