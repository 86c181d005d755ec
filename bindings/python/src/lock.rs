//! `Lock` and its per-task `Holder`: the Python `Lock` keeps one holder per asyncio task, so a
//! nested acquire in one task is refused (`LockReentrantError`) and other tasks wait.

use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tenure::LockHandle;
use tenure::binding::{self, LockOptionsTarget, Spelling, Unit};
use tenure_tokio::Tokio;

use crate::backend::Backend;
use crate::bridge::{Fail, awaitable};
use crate::thread::block;
use crate::{py_error, runtime, seconds};

/// A lock on a backend, configured as grelmicro's `Lock(...)` is.
#[pyclass(frozen, module = "tenure._tenure")]
pub(crate) struct Lock {
    inner: tenure::Lock<Tokio>,
}

#[pymethods]
impl Lock {
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
        let builder = tenure::Lock::builder(name, runtime()).shared_backend(backend.locks(py)?);
        let inner: tenure::Lock<Tokio> = crate::lock::built(py, &options, builder, |b| b.build())?;
        inner.set_purpose(purpose).map_err(|e| py_error(py, &e))?;
        Ok(Self { inner })
    }

    /// Who holds the lock: `(name, fencing token, worker, expires at µs, details)`, details
    /// `(host, pid, program, purpose, acquired at µs)`, each `None` when unknown.
    fn state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let lock = self.inner.clone();
        awaitable(py, async move { lock.state().await.map(state_tuple).map_err(Fail::from) })
    }

    /// The lock name.
    #[getter]
    fn name(&self) -> String {
        self.inner.name().as_str().to_owned()
    }

    /// The resolved configuration: worker, lease_duration, retry_interval, retry_jitter,
    /// backend_timeout (seconds as floats).
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

    /// A new holder: a task's (one per asyncio task), or with `thread` a thread's.
    #[pyo3(signature = (*, thread=false))]
    fn holder(&self, thread: bool) -> Holder {
        Holder { inner: if thread { self.inner.thread_holder() } else { self.inner.holder() } }
    }

    /// Whether anyone holds the lock, blocking the calling thread.
    fn locked_blocking(&self, py: Python<'_>) -> PyResult<bool> {
        let blocking = self.inner.blocking();
        crate::thread::detached(py, || blocking.locked())
    }

    /// Whether anyone holds the lock.
    fn locked<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let lock = self.inner.clone();
        awaitable(py, async move { lock.locked().await.map_err(Fail::from) })
    }
}

/// The settings Python gives a `Lock`, `ReadWriteLock` or `Semaphore` (seconds, grelmicro's
/// names), checked.
#[allow(clippy::too_many_arguments)]
pub(crate) fn lock_options(
    py: Python<'_>,
    worker: Option<&str>,
    lease_duration: Option<f64>,
    retry_interval: Option<f64>,
    retry_jitter: Option<f64>,
    backend_timeout: Option<f64>,
    env_prefix: Option<&str>,
    env_load: Option<bool>,
) -> PyResult<binding::LockOptions> {
    let given = [lease_duration, retry_interval, backend_timeout];
    let given =
        binding::LockOptions::from_numbers(Unit::Seconds, Spelling::Snake, given).map_err(|e| py_error(py, &e))?;
    let (worker, env_prefix) = (worker.map(str::to_owned), env_prefix.map(str::to_owned));
    Ok(binding::LockOptions { worker, retry_jitter, env_prefix, env_load, ..given })
}

/// `builder` (a `Lock`'s, a `ReadWriteLock`'s, a `Semaphore`'s) with `options`, built.
pub(crate) fn built<B: LockOptionsTarget, T>(
    py: Python<'_>,
    options: &binding::LockOptions,
    builder: B,
    build: impl FnOnce(B) -> Result<T, tenure::Error>,
) -> PyResult<T> {
    options.apply(builder).and_then(build).map_err(|e| py_error(py, &e))
}

/// A lock's resolved configuration as Python sees it: worker, lease_duration, retry_interval,
/// retry_jitter, backend_timeout (seconds as floats).
pub(crate) fn config_of<'py>(py: Python<'py>, c: &tenure::LockConfig) -> PyResult<Bound<'py, PyDict>> {
    let values = [
        ("lease_duration", c.lease_duration().as_secs_f64()),
        ("retry_interval", c.retry_interval().as_secs_f64()),
        ("retry_jitter", c.retry_jitter()),
        ("backend_timeout", c.backend_timeout().as_secs_f64()),
    ];
    crate::config_dict(py, c.worker(), &values)
}

/// `current` with the settings given changed (the worker stays), checked.
pub(crate) fn reconfigured(
    py: Python<'_>,
    current: &tenure::LockConfig,
    lease_duration: Option<f64>,
    retry_interval: Option<f64>,
    retry_jitter: Option<f64>,
    backend_timeout: Option<f64>,
) -> PyResult<tenure::LockConfig> {
    let options = lock_options(py, None, lease_duration, retry_interval, retry_jitter, backend_timeout, None, None)?;
    options.reconfigure(current).map_err(|e| py_error(py, &e))
}

/// One holder of a lock: its own ownership token per acquisition.
#[pyclass(frozen, module = "tenure._tenure")]
pub(crate) struct Holder {
    inner: tenure::LockHolder<Tokio>,
}

/// A handle as Python receives it: `(name, token, fencing_token)`.
pub(crate) type HandleTuple = (String, String, u64);

pub(crate) fn handle(h: &LockHandle) -> HandleTuple {
    (h.name.as_str().to_owned(), h.token.as_str().to_owned(), h.fencing_token.get())
}

impl Holder {
    pub(crate) fn new(inner: tenure::LockHolder<Tokio>) -> Self {
        Self { inner }
    }

    fn run<'py, T, F>(
        &self,
        py: Python<'py>,
        call: impl FnOnce(tenure::LockHolder<Tokio>) -> F,
    ) -> PyResult<Bound<'py, PyAny>>
    where
        F: std::future::Future<Output = Result<T, tenure::Error>> + Send + 'static,
        T: for<'a> IntoPyObject<'a> + Send + 'static,
    {
        let future = call(self.inner.clone());
        awaitable(py, async move { future.await.map_err(Fail::from) })
    }
}

#[pymethods]
impl Holder {
    /// Acquires, waiting up to `timeout` seconds (`None`: forever).
    #[pyo3(signature = (timeout=None))]
    fn acquire<'py>(&self, py: Python<'py>, timeout: Option<f64>) -> PyResult<Bound<'py, PyAny>> {
        let timeout: Option<Duration> = timeout.map(|t| seconds(py, "timeout", t)).transpose()?;
        self.run(py, move |h| async move { h.acquire(timeout).await.map(|x| handle(&x)) })
    }

    /// One attempt; `WouldBlockError` if another holder has the lock.
    fn acquire_nowait<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.run(py, |h| async move { h.acquire_nowait().await.map(|x| handle(&x)) })
    }

    /// Renews the lease for another `lease_duration`.
    fn extend<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.run(py, |h| async move { h.extend().await.map(|x| handle(&x)) })
    }

    /// Releases; `LockNotOwnedError` if this holder does not hold it.
    fn release<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.run(py, |h| async move { h.release().await })
    }

    /// Whether this holder holds a live lease on the store.
    fn owned<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.run(py, |h| async move { h.owned().await })
    }

    /// Turns the write lease this holder holds into a read lease (a side of a read-write lock);
    /// the read lease's handle, whose fencing token is the generation read.
    fn downgrade<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.run(py, |h| async move { h.downgrade().await.map(|x| handle(&x)) })
    }

    /// [`Holder::downgrade`], blocking the calling thread.
    fn downgrade_blocking(&self, py: Python<'_>) -> PyResult<HandleTuple> {
        block(py, "ReadWriteLock.write.from_thread.downgrade", async {
            self.inner.downgrade().await.map(|h| handle(&h))
        })
    }

    /// Whether the write lease held or last held is poisoned (see the driver's
    /// `LockHolder::poisoned`).
    #[getter]
    fn poisoned(&self) -> bool {
        self.inner.poisoned()
    }

    /// Whether this holder holds a lease whose validity has not run out.
    #[getter]
    fn held(&self) -> bool {
        self.inner.is_held()
    }

    /// Seconds until the validity of the lease held runs out, as the driver counts it (0 when
    /// none is held): a guard's `expires_in`.
    #[getter]
    fn valid_for(&self) -> f64 {
        self.inner.valid_for().map_or(0.0, |d| d.as_secs_f64())
    }

    /// [`Holder::acquire`], blocking the calling thread.
    #[pyo3(signature = (timeout=None))]
    fn acquire_blocking(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<HandleTuple> {
        let timeout: Option<Duration> = timeout.map(|t| seconds(py, "timeout", t)).transpose()?;
        block(py, "Lock.from_thread.acquire", async { self.inner.acquire(timeout).await.map(|h| handle(&h)) })
    }

    /// [`Holder::acquire_nowait`], blocking the calling thread.
    fn acquire_nowait_blocking(&self, py: Python<'_>) -> PyResult<HandleTuple> {
        block(py, "Lock.from_thread.acquire_nowait", async { self.inner.acquire_nowait().await.map(|h| handle(&h)) })
    }

    /// [`Holder::extend`], blocking the calling thread.
    fn extend_blocking(&self, py: Python<'_>) -> PyResult<HandleTuple> {
        block(py, "Lock.from_thread.extend", async { self.inner.extend().await.map(|h| handle(&h)) })
    }

    /// [`Holder::release`], blocking the calling thread.
    fn release_blocking(&self, py: Python<'_>) -> PyResult<()> {
        block(py, "Lock.from_thread.release", self.inner.release())
    }

    /// [`Holder::owned`], blocking the calling thread.
    fn owned_blocking(&self, py: Python<'_>) -> PyResult<bool> {
        block(py, "Lock.from_thread.owned", self.inner.owned())
    }

    /// Keeps the lease this holder holds alive (see the driver's `KeepAlive`), for at most
    /// `max_hold` seconds, warning below `warn_below` seconds of validity left (a third of the
    /// lease without); `LockNotOwnedError` if it holds none, `SettingsValidationError` for a
    /// threshold not under half the lease (the lease then held as before).
    #[pyo3(signature = (max_hold, warn_below=None))]
    fn keep_alive(&self, py: Python<'_>, max_hold: f64, warn_below: Option<f64>) -> PyResult<crate::kept::Kept> {
        let max_hold = seconds(py, "max_hold", max_hold)?;
        let warn_below = warn_below.map(|t| seconds(py, "warn_below", t)).transpose()?;
        let kept = self.inner.keep_alive(max_hold, warn_below).map_err(|e| py_error(py, &e))?;
        Ok(crate::kept::Kept::new(kept))
    }
}

/// A lock's state as the native layer hands it to Python ([`Lock::state`]).
pub(crate) type StateTuple =
    (String, Option<u64>, Option<String>, Option<i64>, Option<DetailsTuple>, Option<Vec<WaiterTuple>>);
/// `(host, pid, program, purpose, acquired at µs)`.
pub(crate) type DetailsTuple = (String, u32, String, Option<String>, i64);
/// `(worker, since µs, details)`.
pub(crate) type WaiterTuple = (String, Option<i64>, Option<DetailsTuple>);

pub(crate) fn state_tuple(info: tenure::LockInfo) -> StateTuple {
    let details = |d: tenure::HolderInfo| (d.host, d.pid, d.program, d.purpose, d.acquired_at.as_unix_micros());
    let expires = info.expires_at.map(|t| t.as_unix_micros());
    let waiting = info.waiting.map(|line| {
        line.into_iter().map(|w| (w.worker, w.since.map(|t| t.as_unix_micros()), w.details.map(details))).collect()
    });
    (info.name, info.fencing_token.map(|f| f.get()), info.worker, expires, info.details.map(details), waiting)
}
