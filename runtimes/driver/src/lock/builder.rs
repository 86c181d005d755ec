//! `LockBuilder`: settings, environment and backend of a `Lock`.

use std::sync::Arc;
use std::time::Duration;

use tenure_core::{EnvOptions, EnvVars, Error, LockConfig, LockConfigBuilder, Name, WorkerId};

use super::Lock;
use crate::backend::LockBackend;
use crate::env::{EnvSource, resolve_warnings};
use crate::runtime::Runtime;

/// Builds a [`Lock`]. Settings left unset come from the environment (`GREL_LOCK_{NAME}_*`, then
/// `GREL_LOCK_*`, gated by `GREL_ENV_LOAD`), then from grelmicro's defaults.
#[must_use]
pub struct LockBuilder<R: Runtime> {
    name: String,
    config: LockConfigBuilder,
    env: EnvSource,
    options: EnvOptions,
    backend: Option<Arc<dyn LockBackend>>,
    runtime: R,
}

impl<R: Runtime> LockBuilder<R> {
    pub(crate) fn new(name: &str, runtime: R) -> Self {
        Self {
            name: name.to_owned(),
            config: LockConfig::builder(),
            env: EnvSource::Process,
            options: EnvOptions::default(),
            backend: None,
            runtime,
        }
    }

    /// The store (any [`LockBackend`]; a `MemoryBackend` clone shares its store).
    pub fn backend(self, backend: impl LockBackend) -> Self {
        self.shared_backend(Arc::new(backend))
    }

    /// The store, shared.
    pub fn shared_backend(mut self, backend: Arc<dyn LockBackend>) -> Self {
        self.backend = Some(backend);
        self
    }

    /// The worker identity (default: 16 random hex characters).
    pub fn worker(mut self, worker: WorkerId) -> Self {
        self.config = self.config.worker(worker);
        self
    }

    /// The lease (default 60 s).
    pub fn lease_duration(mut self, d: Duration) -> Self {
        self.config = self.config.lease_duration(d);
        self
    }

    /// The pause between attempts (default 0.1 s, at least 1 ms).
    pub fn retry_interval(mut self, d: Duration) -> Self {
        self.config = self.config.retry_interval(d);
        self
    }

    /// The jitter factor (default 0.1; `0 <= j < 1`).
    pub fn retry_jitter(mut self, j: f64) -> Self {
        self.config = self.config.retry_jitter(j);
        self
    }

    /// The bound on one store call (default 5 s).
    pub fn backend_timeout(mut self, d: Duration) -> Self {
        self.config = self.config.backend_timeout(d);
        self
    }

    /// Reads exactly `{prefix}{FIELD}` variables instead of the derived names.
    pub fn env_prefix(mut self, prefix: &str) -> Self {
        self.options.env_prefix = Some(prefix.to_owned());
        self
    }

    /// Reads (`true`) or ignores (`false`) the environment whatever `GREL_ENV_LOAD` says.
    pub fn env_load(mut self, load: bool) -> Self {
        self.options.env_load = Some(load);
        self
    }

    /// Reads these variables instead of the process environment.
    pub fn env_vars(mut self, vars: EnvVars) -> Self {
        self.env = EnvSource::Vars(vars);
        self
    }

    /// Validates the name and every setting and builds the lock.
    pub fn build(self) -> Result<Lock<R>, Error> {
        let name = Name::new(&self.name)?;
        let backend = self.backend.ok_or_else(|| missing_backend("Lock", &self.name))?;
        let resolved = self.config.resolve(&self.name, &self.env.vars(), &self.options, &mut rand::rng())?;
        resolve_warnings(&resolved.warnings);
        Ok(Lock::assemble(&name, resolved.config, backend, self.runtime))
    }
}

/// grelmicro's `OutOfContextError` for a primitive built without a backend.
pub(crate) fn missing_backend(kind: &str, name: &str) -> Error {
    Error::OutOfContext {
        message: format!(
            "{kind}('{name}') resolved no backend. Pass a backend (a MemoryBackend serves one process), \
             or build it from a Coordination that has one."
        ),
    }
}

impl<R: Runtime> std::fmt::Debug for LockBuilder<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockBuilder").field("name", &self.name).finish_non_exhaustive()
    }
}
