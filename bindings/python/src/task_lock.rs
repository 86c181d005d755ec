//! `TaskLock`: at most one run per `min_hold_duration` window across every worker.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tenure::binding::{self, Spelling, Unit};
use tenure_tokio::Tokio;

use crate::backend::Backend;
use crate::bridge::{Fail, awaitable};
use crate::thread::block;
use crate::{py_error, runtime};

/// A task lock on a backend, configured as grelmicro's `TaskLock(...)` is.
#[pyclass(frozen, module = "tenure._tenure")]
pub(crate) struct TaskLock {
    inner: tenure::TaskLock<Tokio>,
}

#[pymethods]
impl TaskLock {
    #[new]
    #[pyo3(signature = (name, backend, *, worker=None, min_hold_duration=None, lease_duration=None, backend_timeout=None, env_prefix=None, env_load=None, purpose=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        name: &str,
        backend: &Backend,
        worker: Option<&str>,
        min_hold_duration: Option<f64>,
        lease_duration: Option<f64>,
        backend_timeout: Option<f64>,
        env_prefix: Option<&str>,
        env_load: Option<bool>,
        purpose: Option<&str>,
    ) -> PyResult<Self> {
        let fail = |e: tenure::Error| py_error(py, &e);
        let given = [min_hold_duration, lease_duration, backend_timeout];
        let given = binding::TaskLockOptions::from_numbers(Unit::Seconds, Spelling::Snake, given).map_err(fail)?;
        let (worker, env_prefix) = (worker.map(str::to_owned), env_prefix.map(str::to_owned));
        let options = binding::TaskLockOptions { worker, env_prefix, env_load, ..given };
        let builder = tenure::TaskLock::builder(name, runtime()).shared_backend(backend.locks(py)?);
        let inner = options.apply(builder).and_then(tenure::TaskLockBuilder::build).map_err(fail)?;
        inner.set_purpose(purpose).map_err(fail)?;
        Ok(Self { inner })
    }

    /// Who runs the task: as `Lock.state`.
    fn state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let lock = self.inner.clone();
        awaitable(py, async move { lock.state().await.map(crate::lock::state_tuple).map_err(Fail::from) })
    }

    /// The resolved configuration (seconds as floats).
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.inner.config();
        let values = [
            ("min_hold_duration", c.min_hold_duration().as_secs_f64()),
            ("lease_duration", c.lease_duration().as_secs_f64()),
            ("backend_timeout", c.backend_timeout().as_secs_f64()),
        ];
        crate::config_dict(py, c.worker(), &values)
    }

    /// Applies new settings from the next enter on (the worker stays).
    #[pyo3(signature = (*, min_hold_duration=None, lease_duration=None, backend_timeout=None))]
    fn reconfigure(
        &self,
        py: Python<'_>,
        min_hold_duration: Option<f64>,
        lease_duration: Option<f64>,
        backend_timeout: Option<f64>,
    ) -> PyResult<()> {
        let fail = |e: tenure::Error| py_error(py, &e);
        let given = [min_hold_duration, lease_duration, backend_timeout];
        let given = binding::TaskLockOptions::from_numbers(Unit::Seconds, Spelling::Snake, given).map_err(fail)?;
        self.inner.reconfigure(given.reconfigure(&self.inner.config()).map_err(fail)?).map_err(fail)
    }

    /// Takes the lock or fails at once (`WouldBlockError`): an awaitable of a [`TaskGuard`].
    fn enter<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let lock = self.inner.clone();
        awaitable(py, async move { Ok::<_, Fail>(TaskGuard::new(&lock, lock.enter().await?)) })
    }

    /// Takes the lock for a thread's run (a `:thread:` token): an awaitable of a [`TaskGuard`].
    fn enter_thread<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let lock = self.inner.clone();
        awaitable(py, async move { Ok::<_, Fail>(TaskGuard::new(&lock, lock.enter_thread().await?)) })
    }

    /// [`TaskLock::enter_thread`], blocking the calling thread.
    fn enter_thread_blocking(&self, py: Python<'_>) -> PyResult<TaskGuard> {
        let entered = block(py, "TaskLock.from_thread.__enter__", self.inner.enter_thread())?;
        Ok(TaskGuard::new(&self.inner, entered))
    }

    /// Whether anyone holds the task lock, blocking the calling thread.
    fn locked_blocking(&self, py: Python<'_>) -> PyResult<bool> {
        let blocking = self.inner.blocking();
        crate::thread::detached(py, || blocking.locked())
    }

    /// Whether anyone holds the task lock.
    fn locked<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let lock = self.inner.clone();
        awaitable(py, async move { lock.locked().await.map_err(Fail::from) })
    }
}

/// One run under a task lock.
#[pyclass(frozen, module = "tenure._tenure")]
pub(crate) struct TaskGuard {
    guard: SharedGuard,
    fencing_token: u64,
    name: String,
}

impl TaskGuard {
    /// A run of `lock` that `entered` began.
    fn new(lock: &tenure::TaskLock<Tokio>, entered: tenure::TaskLockGuard<Tokio>) -> Self {
        let fencing_token = entered.fencing_token().get();
        let name = lock.name().as_str().to_owned();
        Self { guard: Arc::new(tokio::sync::Mutex::new(Some(entered))), fencing_token, name }
    }
}

#[pymethods]
impl TaskGuard {
    /// The fencing token of this run.
    #[getter]
    fn fencing_token(&self) -> u64 {
        self.fencing_token
    }

    /// Renews the lease for another `lease_duration`.
    fn extend<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let (guard, name) = (self.guard.clone(), self.name.clone());
        awaitable(py, async move {
            match guard.lock().await.as_mut() {
                Some(guard) => guard.extend().await.map_err(Fail::from),
                None => Err(Fail::Core(tenure::Error::NotOwned { name })),
            }
        })
    }

    /// Ends the run, keeping the lock until the minimum hold has passed.
    fn exit<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let (guard, name) = (self.guard.clone(), self.name.clone());
        awaitable(py, async move { exit(guard, name).await.map_err(Fail::from) })
    }

    /// [`TaskGuard::exit`], blocking the calling thread.
    fn exit_blocking(&self, py: Python<'_>) -> PyResult<()> {
        block(py, "TaskLock.from_thread.__exit__", exit(self.guard.clone(), self.name.clone()))
    }
}

type SharedGuard = Arc<tokio::sync::Mutex<Option<tenure::TaskLockGuard<Tokio>>>>;

/// Ends a run (once: a second exit is `LockNotOwnedError`).
async fn exit(guard: SharedGuard, name: String) -> Result<(), tenure::Error> {
    match guard.lock().await.take() {
        Some(guard) => guard.exit().await,
        None => Err(tenure::Error::NotOwned { name }),
    }
}
