//! `LeaderElection`: the renew loop runs on the package's runtime; Python awaits it, asks who
//! leads, and waits for leadership to come or go.

use std::collections::BTreeMap;
use std::future::Future;

use pyo3::prelude::*;
use tenure::Metadata;
use tenure::binding::{self, Spelling, Unit};
use tenure_tokio::Tokio;

use crate::backend::Backend;
use crate::bridge::{Fail, awaitable};
use crate::{py_error, runtime};

/// A leader election on a backend, configured as grelmicro's `LeaderElection(...)` is.
#[pyclass(frozen, module = "tenure._tenure")]
pub(crate) struct LeaderElection {
    inner: tenure::LeaderElection<Tokio>,
}

/// A record as Python receives it: `(holder, lease_seconds, acquired_at_us, renewed_at_us,
/// transitions, metadata)`.
use crate::calls::RecordTuple;

#[pymethods]
impl LeaderElection {
    #[new]
    #[pyo3(signature = (name, backend, *, worker=None, lease_duration=None, renew_deadline=None, retry_interval=None, retry_jitter=None, backend_timeout=None, error_interval=None, env_prefix=None, env_load=None, metadata=None, purpose=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        name: &str,
        backend: &Backend,
        worker: Option<&str>,
        lease_duration: Option<f64>,
        renew_deadline: Option<f64>,
        retry_interval: Option<f64>,
        retry_jitter: Option<f64>,
        backend_timeout: Option<f64>,
        error_interval: Option<f64>,
        env_prefix: Option<&str>,
        env_load: Option<bool>,
        metadata: Option<BTreeMap<String, String>>,
        purpose: Option<&str>,
    ) -> PyResult<Self> {
        let fail = |e: tenure::Error| py_error(py, &e);
        let given = [lease_duration, renew_deadline, retry_interval, backend_timeout, error_interval];
        let given = binding::ElectionOptions::from_numbers(Unit::Seconds, Spelling::Snake, given).map_err(fail)?;
        let (worker, env_prefix) = (worker.map(str::to_owned), env_prefix.map(str::to_owned));
        let options = binding::ElectionOptions { worker, retry_jitter, env_prefix, env_load, ..given };
        let builder = tenure::LeaderElection::builder(name, runtime()).shared_backend(backend.elections(py)?);
        let mut builder = options.apply(builder).map_err(fail)?;
        if let Some(metadata) = metadata {
            builder = builder.metadata(Metadata::try_from(metadata).map_err(|e| py_error(py, &e))?);
        }
        let inner = builder.build().map_err(fail)?;
        inner.set_purpose(purpose).map_err(fail)?;
        Ok(Self { inner })
    }

    /// The resolved configuration (seconds as floats).
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let c = self.inner.config();
        let values = [
            ("lease_duration", c.lease_duration().as_secs_f64()),
            ("renew_deadline", c.renew_deadline().as_secs_f64()),
            ("retry_interval", c.retry_interval().as_secs_f64()),
            ("retry_jitter", c.retry_jitter()),
            ("backend_timeout", c.backend_timeout().as_secs_f64()),
            ("error_interval", c.error_interval().as_secs_f64()),
        ];
        crate::config_dict(py, c.worker(), &values)
    }

    /// Applies new settings at the loop's next turn (the worker stays).
    #[pyo3(signature = (*, lease_duration=None, renew_deadline=None, retry_interval=None, retry_jitter=None, backend_timeout=None, error_interval=None))]
    #[allow(clippy::too_many_arguments)]
    fn reconfigure(
        &self,
        py: Python<'_>,
        lease_duration: Option<f64>,
        renew_deadline: Option<f64>,
        retry_interval: Option<f64>,
        retry_jitter: Option<f64>,
        backend_timeout: Option<f64>,
        error_interval: Option<f64>,
    ) -> PyResult<()> {
        let fail = |e: tenure::Error| py_error(py, &e);
        let given = [lease_duration, renew_deadline, retry_interval, backend_timeout, error_interval];
        let given = binding::ElectionOptions::from_numbers(Unit::Seconds, Spelling::Snake, given).map_err(fail)?;
        let config =
            binding::ElectionOptions { retry_jitter, ..given }.reconfigure(&self.inner.config()).map_err(fail)?;
        self.inner.reconfigure(config).map_err(fail)
    }

    /// Runs the loop until it is stopped; cancelling the awaitable stops the election (and
    /// releases the lease).
    fn run<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let election = self.inner.clone();
        until(py, async move { election.run().await })
    }

    /// Stops the election: leadership ends now; the awaitable completes once the lease is released.
    fn stop<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        until(py, self.inner.stop())
    }

    fn is_running(&self) -> bool {
        self.inner.is_running()
    }

    fn is_leader(&self) -> bool {
        self.inner.is_leader()
    }

    fn last_confirmation_age(&self) -> Option<f64> {
        self.inner.last_confirmation_age().map(|d| d.as_secs_f64())
    }

    fn is_leader_confirmed_within(&self, max_age: f64) -> bool {
        // grelmicro: a negative age is never within; NaN neither.
        if max_age.is_nan() || max_age < 0.0 {
            return false;
        }
        let max_age = std::time::Duration::try_from_secs_f64(max_age).unwrap_or(std::time::Duration::MAX);
        self.inner.is_leader_confirmed_within(max_age)
    }

    /// The leader health check: `None` when healthy, else why not.
    fn health(&self, py: Python<'_>, tolerance: f64) -> PyResult<Option<String>> {
        let tolerance = Unit::Seconds.duration("tolerance", tolerance).map_err(|e| py_error(py, &e))?;
        let health = self.inner.health(tolerance);
        Ok((!health.is_healthy()).then(|| health.to_string()))
    }

    fn wait_for_leader<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let election = self.inner.clone();
        until(py, async move { election.wait_for_leader().await })
    }

    fn wait_lose_leader<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let election = self.inner.clone();
        until(py, async move { election.wait_lose_leader().await })
    }

    /// While leading: the term's fencing token.
    fn fencing_token(&self) -> Option<u64> {
        self.inner.fence().map(tenure::FencingToken::get)
    }

    /// The last record the store returned.
    fn record(&self) -> Option<RecordTuple> {
        self.inner.record().map(crate::calls::record_tuple)
    }
}

/// An awaitable that completes, with `None`, when `fut` does.
fn until<'py>(py: Python<'py>, fut: impl Future<Output = ()> + Send + 'static) -> PyResult<Bound<'py, PyAny>> {
    awaitable(py, async move {
        fut.await;
        Ok::<(), Fail>(())
    })
}
