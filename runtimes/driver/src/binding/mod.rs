//! What every front end (the Python, Node and JVM packages) shares below its binding, so that a
//! binding converts units and wires its language's cancellation, and decides nothing:
//! [`LeaseSlot`], the acquisition a guard object holds; [`LockOptions`], a lock's settings as a
//! front end gives them, in its [`Unit`]; and the backends of a provider with the errors naming
//! a missing one. The error table every binding raises its classes from is the
//! core's (`tenure_core::error::table`).

mod options;
mod slot;

use std::sync::Arc;

use tenure_core::{BackendSlot, Error};

use crate::Provider;
use crate::backend::{ReadWriteLockBackend, SemaphoreBackend};

pub use options::{
    ElectionOptions, ElectionOptionsTarget, LockOptions, LockOptionsTarget, Spelling, TaskLockOptions,
    TaskLockOptionsTarget, Unit, lock_settings,
};
pub use slot::LeaseSlot;

/// `provider`'s read-write lock backend, or the error naming the missing slot.
pub fn read_write_backend(provider: &dyn Provider) -> Result<Arc<dyn ReadWriteLockBackend>, Error> {
    provider.read_write_lock_backend().ok_or(Error::BackendMissing { slot: BackendSlot::ReadWriteLock })
}

/// `provider`'s semaphore backend, or the error naming the missing slot.
pub fn semaphore_backend(provider: &dyn Provider) -> Result<Arc<dyn SemaphoreBackend>, Error> {
    provider.semaphore_backend().ok_or(Error::BackendMissing { slot: BackendSlot::Semaphore })
}
