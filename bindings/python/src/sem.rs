//! `Semaphore`: the driver's fenced semaphore, whose permits are held by the same per-task
//! [`Holder`]s a `Lock` hands out; and its store calls on a built-in store (the driver's
//! `SemaphoreCalls`), each bounded by `timeout` seconds (see [`crate::calls`]).

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tenure::backend::SemaphoreCalls;
use tenure_tokio::Tokio;

use crate::backend::Backend;
use crate::bridge::{Fail, awaitable};
use crate::calls::{bounded, lease};
use crate::lock::{Holder, config_of, reconfigured};
use crate::{py_error, runtime};

/// A semaphore's state as Python receives it: `(permits, holders, waiting, fence)`.
type StateTuple = (u32, usize, usize, u64);

fn state_tuple(s: tenure::SemState) -> StateTuple {
    (s.permits, s.holders, s.waiting, s.fence)
}

/// A semaphore of `permits` permits on a backend, configured as a `Lock(...)` is.
#[pyclass(frozen, module = "tenure._tenure")]
pub(crate) struct Semaphore {
    inner: tenure::Semaphore<Tokio>,
}

#[pymethods]
impl Semaphore {
    #[new]
    #[pyo3(signature = (name, backend, *, permits, worker=None, lease_duration=None, retry_interval=None, retry_jitter=None, backend_timeout=None, env_prefix=None, env_load=None, purpose=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        name: &str,
        backend: &Backend,
        permits: i64,
        worker: Option<&str>,
        lease_duration: Option<f64>,
        retry_interval: Option<f64>,
        retry_jitter: Option<f64>,
        backend_timeout: Option<f64>,
        env_prefix: Option<&str>,
        env_load: Option<bool>,
        purpose: Option<&str>,
    ) -> PyResult<Self> {
        let permits = u32::try_from(permits).map_err(|_| {
            let e = tenure::core::SettingsError::field(
                "permits",
                format!("permits must be from 1 to {}, got {permits}", u32::MAX),
            );
            py_error(py, &tenure::Error::Settings(e))
        })?;
        let options = crate::lock::lock_options(
            py,
            worker,
            lease_duration,
            retry_interval,
            retry_jitter,
            backend_timeout,
            env_prefix,
            env_load,
        )?;
        let builder = tenure::Semaphore::builder(name, permits, runtime()).shared_backend(backend.semaphore(py)?);
        let inner: tenure::Semaphore<Tokio> = crate::lock::built(py, &options, builder, |b| b.build())?;
        inner.set_purpose(purpose).map_err(|e| py_error(py, &e))?;
        Ok(Self { inner })
    }

    /// The semaphore's name.
    #[getter]
    fn name(&self) -> String {
        self.inner.name().as_str().to_owned()
    }

    /// How many holders it admits at once.
    #[getter]
    fn permits(&self) -> u32 {
        self.inner.permits()
    }

    /// The resolved configuration (see `Lock.config`).
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        config_of(py, &self.inner.config())
    }

    /// Applies new settings from the next call on (the worker and the permit count stay).
    #[pyo3(signature = (*, lease_duration=None, retry_interval=None, retry_jitter=None, backend_timeout=None))]
    fn reconfigure(
        &self,
        py: Python<'_>,
        lease_duration: Option<f64>,
        retry_interval: Option<f64>,
        retry_jitter: Option<f64>,
        backend_timeout: Option<f64>,
    ) -> PyResult<()> {
        let config =
            reconfigured(py, &self.inner.config(), lease_duration, retry_interval, retry_jitter, backend_timeout)?;
        self.inner.reconfigure(config).map_err(|e| py_error(py, &e))
    }

    /// A new holder of a permit: a task's, or with `thread` a thread's.
    #[pyo3(signature = (*, thread=false))]
    fn holder(&self, thread: bool) -> Holder {
        Holder::new(if thread { self.inner.thread_holder() } else { self.inner.holder() })
    }

    /// The semaphore's state: `(permits, holders, waiting, fence)`.
    fn state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let semaphore = self.inner.clone();
        awaitable(py, async move { semaphore.state().await.map(state_tuple).map_err(Fail::from) })
    }

    /// Whether no permit is free now (see the driver's `Semaphore::locked`).
    fn locked<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let semaphore = self.inner.clone();
        awaitable(py, async move { semaphore.locked().await.map_err(Fail::from) })
    }

    /// [`Semaphore::locked`], blocking the calling thread.
    fn locked_blocking(&self, py: Python<'_>) -> PyResult<bool> {
        let semaphore = self.inner.clone();
        crate::thread::block(py, "Semaphore.from_thread.locked", async move { semaphore.locked().await })
    }
}

/// One acquire of a permit of `name` for `token`: `(fencing token or None, stored permits)`,
/// keeping a place in line for `wait` seconds if refused and `wait` is given.
#[pyfunction]
#[pyo3(signature = (backend, name, token, duration, permits, wait, timeout))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn sem_acquire<'py>(
    backend: &Backend,
    py: Python<'py>,
    name: &str,
    token: &str,
    duration: f64,
    permits: u32,
    wait: Option<f64>,
    timeout: f64,
) -> PyResult<Bound<'py, PyAny>> {
    bounded(py, timeout, || {
        let wait = wait.map(|w| crate::seconds(py, "wait", w)).transpose()?;
        let call = backend.semaphore(py)?.acquire(name, token, lease(py, duration)?, permits, wait);
        Ok(async move { call.await.map(|a| (a.fence.map(|f| f.get()), a.permits)) })
    })
}

/// `state`: `(permits, holders, waiting, fence)`.
#[pyfunction]
pub(crate) fn sem_state<'py>(
    backend: &Backend,
    py: Python<'py>,
    name: &str,
    timeout: f64,
) -> PyResult<Bound<'py, PyAny>> {
    bounded(py, timeout, || {
        let call = backend.semaphore(py)?.state(name);
        Ok(async move { call.await.map(state_tuple) })
    })
}

/// `release`: gives `token`'s permit back and leaves the line; whether it held a live permit.
#[pyfunction]
pub(crate) fn sem_release<'py>(
    backend: &Backend,
    py: Python<'py>,
    name: &str,
    token: &str,
    timeout: f64,
) -> PyResult<Bound<'py, PyAny>> {
    bounded(py, timeout, || Ok(backend.semaphore(py)?.release(name, token)))
}

/// `owned`: whether `token` holds a live permit.
#[pyfunction]
pub(crate) fn sem_owned<'py>(
    backend: &Backend,
    py: Python<'py>,
    name: &str,
    token: &str,
    timeout: f64,
) -> PyResult<Bound<'py, PyAny>> {
    bounded(py, timeout, || Ok(backend.semaphore(py)?.owned(name, token)))
}
