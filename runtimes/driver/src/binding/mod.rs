//! What every front end (the Python, Node and JVM packages) shares below its binding, so that a
//! binding converts units and wires its language's cancellation, and decides nothing:
//! [`LeaseSlot`], the acquisition a guard object holds; and [`LockOptions`], a lock's settings as
//! a front end gives them, in its [`Unit`]. The error table every binding raises its classes from
//! is the core's (`tenure_core::error::table`); the backends of a binding's store object are a
//! [`Slots`](crate::Slots), whose getters name a missing one (the store opener keeps them with
//! where they came from); a host with an event loop of its own runs on `crate::host`, and a
//! user's backend on `crate::backend::user`.

mod options;
mod slot;

pub use options::{
    ElectionOptions, ElectionOptionsTarget, LockOptions, LockOptionsTarget, Spelling, TaskLockOptions,
    TaskLockOptionsTarget, Unit, lock_settings,
};
pub use slot::LeaseSlot;

/// A purpose given to a primitive that keeps no holder details (a read-write lock, a semaphore):
/// a settings error naming `purpose`; `Ok` when none was given. (A lock's and a task lock's
/// purpose is set with `set_purpose`, which checks it.)
pub fn refuse_purpose(purpose: Option<&str>) -> Result<(), tenure_core::Error> {
    match purpose {
        None => Ok(()),
        Some(_) => Err(tenure_core::Error::settings(
            "purpose",
            "purpose is a Lock's or a TaskLock's (set when it is made): read-write locks and semaphores keep no holder details yet",
        )),
    }
}
