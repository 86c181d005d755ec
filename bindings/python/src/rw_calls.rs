//! grelmicro 0.44's `ReadWriteLockBackend` calls on a built-in store (the driver's
//! `ReadWriteCalls`): what `ReadWriteLockAdapter`'s methods and the views' `do_*` calls make,
//! each bounded by `timeout` seconds (see [`crate::calls`]).

use pyo3::prelude::*;
use tenure::backend::ReadWriteCalls;

use crate::backend::Backend;
use crate::calls::{bounded, lease};

/// `acquire_read`: the generation read, or `None` when refused.
#[pyfunction]
pub(crate) fn rw_acquire_read<'py>(
    backend: &Backend,
    py: Python<'py>,
    name: &str,
    token: &str,
    duration: f64,
    timeout: f64,
) -> PyResult<Bound<'py, PyAny>> {
    bounded(py, timeout, || {
        let call = backend.read_write(py)?.acquire_read(name, token, lease(py, duration)?);
        Ok(async move { call.await.map(|g| g.map(|g| g.get())) })
    })
}

/// `acquire_write`: `(fencing_token, poisoned)`, or `None` when refused (keeping an intent iff
/// `intent`).
#[pyfunction]
pub(crate) fn rw_acquire_write<'py>(
    backend: &Backend,
    py: Python<'py>,
    name: &str,
    token: &str,
    duration: f64,
    intent: bool,
    timeout: f64,
) -> PyResult<Bound<'py, PyAny>> {
    bounded(py, timeout, || {
        let call = backend.read_write(py)?.acquire_write(name, token, lease(py, duration)?, intent);
        Ok(async move { call.await.map(|w| w.map(|w| (w.fence.get(), w.poisoned))) })
    })
}

/// `downgrade`: the generation, or `None` when `token` holds no write lease.
#[pyfunction]
pub(crate) fn rw_downgrade<'py>(
    backend: &Backend,
    py: Python<'py>,
    name: &str,
    token: &str,
    duration: f64,
    timeout: f64,
) -> PyResult<Bound<'py, PyAny>> {
    bounded(py, timeout, || {
        let call = backend.read_write(py)?.downgrade(name, token, lease(py, duration)?);
        Ok(async move { call.await.map(|g| g.map(|g| g.get())) })
    })
}

/// `state`: `(generation, writing, readers, waiting_writers)`.
#[pyfunction]
pub(crate) fn rw_state<'py>(
    backend: &Backend,
    py: Python<'py>,
    name: &str,
    timeout: f64,
) -> PyResult<Bound<'py, PyAny>> {
    bounded(py, timeout, || {
        let call = backend.read_write(py)?.state(name);
        Ok(async move { call.await.map(|s| (s.generation, s.writing, s.readers, s.waiting_writers)) })
    })
}

/// One of the calls answering yes or no for `token`: `release_read`, `release_write`,
/// `cancel_intent`, `owned_read` or `owned_write`.
#[pyfunction]
pub(crate) fn rw_flag<'py>(
    backend: &Backend,
    py: Python<'py>,
    call: &str,
    name: &str,
    token: &str,
    timeout: f64,
) -> PyResult<Bound<'py, PyAny>> {
    bounded(py, timeout, || {
        let store = backend.read_write(py)?;
        Ok(match call {
            "release_read" => store.release_read(name, token),
            "release_write" => store.release_write(name, token),
            "cancel_intent" => store.cancel_intent(name, token),
            "owned_read" => store.owned_read(name, token),
            "owned_write" => store.owned_write(name, token),
            other => return Err(pyo3::exceptions::PyValueError::new_err(format!("no read-write call {other:?}"))),
        })
    })
}
