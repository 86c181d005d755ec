//! A lease the driver keeps alive (`KeepAlive`), for `Lock.hold()`: the body is cancelled when
//! `lost()` completes.

use std::sync::{Arc, Mutex, PoisonError};

use pyo3::prelude::*;
use tenure::{KeepAlive, KeepAliveEnd, LockGuard};
use tenure_tokio::Tokio;

use crate::bridge::{Fail, awaitable};

/// A held lease renewed in the background until released, lost or at its maximum hold.
#[pyclass(frozen, module = "tenure._tenure")]
pub(crate) struct Kept {
    inner: Arc<Mutex<Option<KeepAlive<LockGuard<Tokio>>>>>,
    name: String,
}

impl Kept {
    pub(crate) fn new(kept: KeepAlive<LockGuard<Tokio>>) -> Self {
        let name = kept.guard().name().as_str().to_owned();
        Self { inner: Arc::new(Mutex::new(Some(kept))), name }
    }

    fn with<T>(&self, f: impl FnOnce(&KeepAlive<LockGuard<Tokio>>) -> T) -> Option<T> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner).as_ref().map(f)
    }
}

#[pymethods]
impl Kept {
    /// An awaitable completing when the lease is lost or ended (at once if it was released).
    fn lost<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let lost = self.with(|kept| kept.lost());
        awaitable(py, async move {
            if let Some(lost) = lost {
                lost.await;
            }
            Ok(())
        })
    }

    /// Why the renewals stopped on their own: `"max_hold"`, `"expired"`, `"lost"`, or `None`.
    #[getter]
    fn ended(&self) -> Option<&'static str> {
        self.with(KeepAlive::ended).flatten().map(KeepAliveEnd::as_str)
    }

    /// The core's `LockLostError` for this lease, by why it ended (`expired` when no end was said
    /// yet: the validity ran out while a renewal was still in flight).
    fn lost_error(&self, py: Python<'_>) -> PyErr {
        let cause = self.with(KeepAlive::ended).flatten().unwrap_or(KeepAliveEnd::Expired);
        crate::py_error(py, &tenure::Error::Lost { name: self.name.clone(), cause })
    }

    /// Stops the renewals and releases (once): `LockNotOwnedError` if the lease was lost.
    fn release<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let kept = self.inner.lock().unwrap_or_else(PoisonError::into_inner).take();
        let name = self.name.clone();
        awaitable(py, async move {
            match kept {
                Some(kept) => kept.stop().release().await.map_err(Fail::from),
                None => Err(Fail::Core(tenure::Error::NotOwned { name })),
            }
        })
    }
}
