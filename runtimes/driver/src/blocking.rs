//! Blocking adapters for synchronous code (grelmicro's `from_thread`): the same operations,
//! waited for on the calling thread.
//!
//! Call them from plain threads (or `spawn_blocking`). On tokio's multi-thread runtime they also
//! work from async code (through `block_in_place`). A call that would stall the runtime it waits
//! for — from the thread of tokio's current-thread runtime, or from an async-std task — is
//! refused with [`Error::Deadlock`]; smol cannot tell its threads apart, so call them from
//! plain threads there.

use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::ThreadId;
use std::time::Duration;

use tenure_core::{Error, FencingToken, LockHandle};

use crate::lock::{Lock, LockGuard, LockHolder};
use crate::runtime::Runtime;
use crate::task_lock::{TaskLock, TaskLockGuard};

fn block<R: Runtime, T>(runtime: &R, what: &str, work: impl Future<Output = Result<T, Error>>) -> Result<T, Error> {
    runtime.block_on(what, work)?
}

impl<R: Runtime> Lock<R> {
    /// The blocking adapter of this lock.
    pub fn blocking(&self) -> BlockingLock<R> {
        BlockingLock { lock: self.clone() }
    }
}

/// The locks each thread holds through a blocking guard, keyed by the lock's shared state:
/// grelmicro's per-thread re-entrancy check.
static THREAD_HOLDS: Mutex<Option<HashSet<(ThreadId, usize)>>> = Mutex::new(None);

/// A thread's hold on a lock, registered while a blocking guard lives.
#[derive(Debug)]
struct ThreadHold {
    key: (ThreadId, usize),
}

impl ThreadHold {
    /// Registers the calling thread's hold on `lock`, or [`Error::Reentrant`] if it has one.
    fn take<R: Runtime>(lock: &Lock<R>) -> Result<Self, Error> {
        let key = (std::thread::current().id(), Arc::as_ptr(&lock.shared).cast::<()>() as usize);
        let mut holds = THREAD_HOLDS.lock().unwrap_or_else(PoisonError::into_inner);
        if !holds.get_or_insert_with(HashSet::new).insert(key) {
            return Err(Error::Reentrant { name: lock.name().as_str().to_owned() });
        }
        Ok(Self { key })
    }
}

impl Drop for ThreadHold {
    fn drop(&mut self) {
        let mut holds = THREAD_HOLDS.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(holds) = holds.as_mut() {
            holds.remove(&self.key);
        }
    }
}

/// [`Lock`] for synchronous code. Holders are threads (`{worker}:thread:{n}.{hex}`): a thread
/// that holds the lock through a [`BlockingLockGuard`] and acquires it again gets
/// [`Error::Reentrant`], as with grelmicro's `from_thread`.
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
        BlockingLockHolder { holder: self.lock.thread_holder() }
    }

    /// Blocks until acquired, or until `timeout` ([`Error::Timeout`]).
    pub fn acquire(&self, timeout: Option<Duration>) -> Result<BlockingLockGuard<R>, Error> {
        let hold = ThreadHold::take(&self.lock)?;
        let holder = self.lock.thread_holder();
        let guard = block(self.runtime(), "Lock.blocking().acquire", holder.acquire_guard(timeout))?;
        Ok(BlockingLockGuard { guard, _hold: hold })
    }

    /// One attempt ([`Error::WouldBlock`] if held).
    pub fn acquire_nowait(&self) -> Result<BlockingLockGuard<R>, Error> {
        let hold = ThreadHold::take(&self.lock)?;
        let holder = self.lock.thread_holder();
        let guard = block(self.runtime(), "Lock.blocking().acquire_nowait", holder.acquire_nowait_guard())?;
        Ok(BlockingLockGuard { guard, _hold: hold })
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
    /// Unregistered when the guard goes (after its release has started).
    _hold: ThreadHold,
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
        let guard = block(self.lock.runtime(), "TaskLock.blocking().enter", self.lock.enter_thread())?;
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
