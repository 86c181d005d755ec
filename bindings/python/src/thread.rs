//! `from_thread`: the driver's blocking adapters (`BlockingLock`, `BlockingTaskLock`) for plain
//! Python threads — `:thread:` tokens, one hold of a lock per thread (a nested acquire on one
//! thread is `LockReentrantError`), each call blocking its thread without the interpreter lock.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use pyo3::prelude::*;
use tenure::{BlockingLockGuard, BlockingTaskLockGuard};
use tenure_tokio::Tokio;

use crate::lock::{HandleTuple, handle};
use crate::{py_error, seconds};

/// Runs a blocking call of the driver with the interpreter lock released.
pub(crate) fn detached<T: Send>(py: Python<'_>, call: impl FnOnce() -> Result<T, tenure::Error> + Send) -> PyResult<T> {
    py.detach(call).map_err(|e| py_error(py, &e))
}

/// A lock held by one thread.
#[pyclass(frozen, module = "tenure._tenure")]
pub(crate) struct ThreadGuard {
    guard: Mutex<Option<BlockingLockGuard<Tokio>>>,
    name: String,
}

impl ThreadGuard {
    /// Acquires `lock` for the calling thread.
    pub(crate) fn acquire(
        py: Python<'_>,
        lock: &tenure::Lock<Tokio>,
        timeout: Option<f64>,
        nowait: bool,
    ) -> PyResult<(Self, HandleTuple)> {
        let timeout: Option<Duration> = timeout.map(|t| seconds(py, "timeout", t)).transpose()?;
        let blocking = lock.blocking();
        let guard = detached(py, || if nowait { blocking.acquire_nowait() } else { blocking.acquire(timeout) })?;
        let handle = handle(guard.handle());
        Ok((Self { guard: Mutex::new(Some(guard)), name: lock.name().as_str().to_owned() }, handle))
    }

    fn not_owned(&self) -> tenure::Error {
        tenure::Error::NotOwned { name: self.name.clone() }
    }
}

#[pymethods]
impl ThreadGuard {
    /// Renews the lease.
    fn extend(&self, py: Python<'_>) -> PyResult<HandleTuple> {
        detached(py, || match self.guard.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
            Some(guard) => guard.extend().map(|h| handle(&h)),
            None => Err(self.not_owned()),
        })
    }

    /// Releases (once); the thread may acquire again afterwards, whatever the outcome.
    fn release(&self, py: Python<'_>) -> PyResult<()> {
        // The guard's lock is taken without the interpreter lock, as every wait here.
        detached(py, || {
            let guard = self.guard.lock().unwrap_or_else(PoisonError::into_inner).take();
            guard.map_or_else(|| Err(self.not_owned()), BlockingLockGuard::release)
        })
    }

    /// Whether the store still has this thread's token as the holder.
    fn owned(&self, py: Python<'_>) -> PyResult<bool> {
        detached(py, || match self.guard.lock().unwrap_or_else(PoisonError::into_inner).as_ref() {
            Some(guard) => guard.owned(),
            None => Ok(false),
        })
    }
}

/// A task-lock run entered by one thread.
#[pyclass(frozen, module = "tenure._tenure")]
pub(crate) struct ThreadTaskGuard {
    guard: Mutex<Option<BlockingTaskLockGuard<Tokio>>>,
    name: String,
}

impl ThreadTaskGuard {
    /// Enters `lock` for the calling thread.
    pub(crate) fn enter(py: Python<'_>, lock: &tenure::TaskLock<Tokio>) -> PyResult<Self> {
        let blocking = lock.blocking();
        let guard = detached(py, || blocking.enter())?;
        Ok(Self { guard: Mutex::new(Some(guard)), name: lock.name().as_str().to_owned() })
    }
}

#[pymethods]
impl ThreadTaskGuard {
    /// Ends the run (once), keeping the lock until the minimum hold has passed.
    fn exit(&self, py: Python<'_>) -> PyResult<()> {
        detached(py, || {
            let guard = self.guard.lock().unwrap_or_else(PoisonError::into_inner).take();
            let not_owned = || tenure::Error::NotOwned { name: self.name.clone() };
            guard.map_or_else(|| Err(not_owned()), BlockingTaskLockGuard::exit)
        })
    }
}
