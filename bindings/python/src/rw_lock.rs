//! `ReadWriteLock`: the driver's read-write lock, which hands each task (or thread) a pair of
//! holders, one per side, that refuse an upgrade (`LockUpgradeError`) and a second lease
//! (`LockReentrantError`), as grelmicro's; each side's holder is the [`Holder`] a `Lock` gives.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tenure_tokio::Tokio;

use crate::backend::Backend;
use crate::bridge::{Fail, awaitable};
use crate::lock::{Holder, config_of, reconfigured};
use crate::{py_error, runtime};

/// A read-write lock on a backend, configured as grelmicro's `ReadWriteLock(...)` is.
#[pyclass(frozen, module = "tenure._tenure")]
pub(crate) struct ReadWriteLock {
    inner: tenure::ReadWriteLock<Tokio>,
}

#[pymethods]
impl ReadWriteLock {
    #[new]
    #[pyo3(signature = (name, backend, *, worker=None, lease_duration=None, retry_interval=None, retry_jitter=None, backend_timeout=None, env_prefix=None, env_load=None, purpose=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        name: &str,
        backend: &Backend,
        worker: Option<&str>,
        lease_duration: Option<f64>,
        retry_interval: Option<f64>,
        retry_jitter: Option<f64>,
        backend_timeout: Option<f64>,
        env_prefix: Option<&str>,
        env_load: Option<bool>,
        purpose: Option<&str>,
    ) -> PyResult<Self> {
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
        let builder = tenure::ReadWriteLock::builder(name, runtime()).shared_backend(backend.read_write(py)?);
        let inner: tenure::ReadWriteLock<Tokio> = crate::lock::built(py, &options, builder, |b| b.build())?;
        inner.set_purpose(purpose).map_err(|e| py_error(py, &e))?;
        Ok(Self { inner })
    }

    /// The lock name.
    #[getter]
    fn name(&self) -> String {
        self.inner.name().as_str().to_owned()
    }

    /// The resolved configuration (see `Lock.config`).
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        config_of(py, &self.inner.config())
    }

    /// Applies new settings from the next call on (the worker stays).
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

    /// A new pair of holders, one per side: a task's, or with `thread` a thread's.
    #[pyo3(signature = (*, thread=false))]
    fn holders(&self, thread: bool) -> ReadWriteHolders {
        ReadWriteHolders(if thread { self.inner.thread_holders() } else { self.inner.holders() })
    }

    /// The lock's state: `(generation, writing, readers, waiting_writers)`.
    fn state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let lock = self.inner.clone();
        awaitable(py, async move {
            let s = lock.state().await.map_err(Fail::from)?;
            Ok((s.generation, s.writing, s.readers, s.waiting_writers))
        })
    }
}

/// One task's (or thread's) holders of both sides, and the driver's rule that binds them.
#[pyclass(frozen, module = "tenure._tenure")]
pub(crate) struct ReadWriteHolders(tenure::ReadWriteHolders<Tokio>);

#[pymethods]
impl ReadWriteHolders {
    /// The holder of the write side (`write`) or of the read side.
    #[pyo3(signature = (*, write))]
    fn holder(&self, write: bool) -> Holder {
        Holder::new(self.0.holder(write).clone())
    }

    /// Refuses to ask for a side while holding one: `LockUpgradeError` for a reader asking to
    /// write, `LockReentrantError` otherwise.
    #[pyo3(signature = (*, write))]
    fn check(&self, py: Python<'_>, write: bool) -> PyResult<()> {
        self.0.check(write).map_err(|e| py_error(py, &e))
    }
}
