//! grelmicro's backend calls on any backend (the driver's `LockCalls` and `LeaderElectionCalls`):
//! what an adapter's `acquire`/`release`/`locked`/`owned` (and `acquire_or_renew`/`release`/
//! `get`) do, and what the primitives' `do_*` calls make. Each call is bounded by `timeout`
//! seconds. A failure is the store's error as Python sees it: the exception a user's backend
//! raised, a `TimeoutError`, or a `ConnectionError` naming what the store did.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use pyo3::prelude::*;
use tenure::Runtime;
use tenure::backend::{LeaderElectionCalls, LockCalls};
use tenure::core::{BackendError, LeaderRecord, Metadata};

use crate::backend::Backend;
use crate::bridge::{Fail, awaitable};
use crate::{runtime, seconds};

/// A record as Python receives it: `(holder, lease seconds, acquired_at µs, renewed_at µs,
/// transitions, metadata)`.
pub(crate) type RecordTuple = (String, f64, i64, i64, u64, BTreeMap<String, String>);

pub(crate) fn record_tuple(r: LeaderRecord) -> RecordTuple {
    (
        r.holder,
        r.lease_duration.as_secs_f64(),
        r.acquired_at.as_unix_micros(),
        r.renewed_at.as_unix_micros(),
        r.transitions,
        r.metadata.as_map().clone(),
    )
}

/// The answer of the call `make` starts, within `timeout` seconds (else a timeout failure);
/// `timeout` is checked before the call is made.
pub(crate) fn bounded<'py, T, F>(
    py: Python<'py>,
    timeout: f64,
    make: impl FnOnce() -> PyResult<F>,
) -> PyResult<Bound<'py, PyAny>>
where
    T: for<'a> IntoPyObject<'a> + Send + 'static,
    F: Future<Output = Result<T, BackendError>> + Send + 'static,
{
    let timeout = seconds(py, "timeout", timeout)?;
    let call = make()?;
    let runtime = runtime();
    let deadline = runtime.now().saturating_add(timeout);
    awaitable(py, async move {
        match runtime.timeout_at(deadline, call).await {
            Some(answer) => answer.map_err(Fail::Backend),
            None => Err(Fail::Backend(BackendError::timeout(timeout))),
        }
    })
}

pub(crate) fn lease(py: Python<'_>, duration: f64) -> PyResult<Duration> {
    seconds(py, "duration", duration)
}

/// `LockBackend.acquire`: the fencing token, or `None` when another token holds `name`.
#[pyfunction]
pub(crate) fn lock_acquire<'py>(
    backend: &Backend,
    py: Python<'py>,
    name: &str,
    token: &str,
    duration: f64,
    timeout: f64,
) -> PyResult<Bound<'py, PyAny>> {
    bounded(py, timeout, || {
        let call = backend.locks(py)?.acquire(name, token, lease(py, duration)?);
        Ok(async move { call.await.map(|f| f.map(|f| f.get())) })
    })
}

/// `LockBackend.release`.
#[pyfunction]
pub(crate) fn lock_release<'py>(
    backend: &Backend,
    py: Python<'py>,
    name: &str,
    token: &str,
    timeout: f64,
) -> PyResult<Bound<'py, PyAny>> {
    bounded(py, timeout, || Ok(LockCalls::release(&*backend.locks(py)?, name, token)))
}

/// `LockBackend.locked`.
#[pyfunction]
pub(crate) fn lock_locked<'py>(
    backend: &Backend,
    py: Python<'py>,
    name: &str,
    timeout: f64,
) -> PyResult<Bound<'py, PyAny>> {
    bounded(py, timeout, || Ok(backend.locks(py)?.locked(name)))
}

/// `LockBackend.owned`.
#[pyfunction]
pub(crate) fn lock_owned<'py>(
    backend: &Backend,
    py: Python<'py>,
    name: &str,
    token: &str,
    timeout: f64,
) -> PyResult<Bound<'py, PyAny>> {
    bounded(py, timeout, || Ok(backend.locks(py)?.owned(name, token)))
}

/// `LeaderElectionBackend.acquire_or_renew`: the record after the call.
#[pyfunction]
pub(crate) fn leader_acquire_or_renew<'py>(
    backend: &Backend,
    py: Python<'py>,
    name: &str,
    token: &str,
    duration: f64,
    metadata: BTreeMap<String, String>,
    timeout: f64,
) -> PyResult<Bound<'py, PyAny>> {
    bounded(py, timeout, || {
        let metadata = Metadata::try_from(metadata).map_err(|e| crate::py_error(py, &e))?;
        let call = backend.elections(py)?.acquire_or_renew(name, token, lease(py, duration)?, &metadata);
        Ok(async move { call.await.map(record_tuple) })
    })
}

/// `LeaderElectionBackend.release`.
#[pyfunction]
pub(crate) fn leader_release<'py>(
    backend: &Backend,
    py: Python<'py>,
    name: &str,
    token: &str,
    timeout: f64,
) -> PyResult<Bound<'py, PyAny>> {
    bounded(py, timeout, || Ok(LeaderElectionCalls::release(&*backend.elections(py)?, name, token)))
}

/// `LeaderElectionBackend.get`: the live record, if any.
#[pyfunction]
pub(crate) fn leader_get<'py>(
    backend: &Backend,
    py: Python<'py>,
    name: &str,
    timeout: f64,
) -> PyResult<Bound<'py, PyAny>> {
    bounded(py, timeout, || {
        let call = backend.elections(py)?.get(name);
        Ok(async move { call.await.map(|r| r.map(record_tuple)) })
    })
}
