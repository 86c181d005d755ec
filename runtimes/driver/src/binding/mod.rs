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

/// A purpose given to `reconfigure`: a settings error naming `purpose` (a primitive's purpose is
/// given when it is made, and set with its `set_purpose`, which checks it); `Ok` when none was
/// given.
pub fn refuse_purpose(purpose: Option<&str>) -> Result<(), tenure_core::Error> {
    match purpose {
        None => Ok(()),
        Some(_) => Err(tenure_core::Error::settings(
            "purpose",
            "purpose is given when the lock, read-write lock or semaphore is made, not to reconfigure",
        )),
    }
}
