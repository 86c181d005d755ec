//! `LeaderElectionBuilder`.

use std::sync::Arc;
use std::time::Duration;

use tenure_core::{
    EnvOptions, EnvVars, Error, LeaderElectionConfig, LeaderElectionConfigBuilder, Metadata, Name, WorkerId,
};

use super::LeaderElection;
use crate::backend::LeaderElectionBackend;
use crate::env::{EnvSource, resolve_warnings};
use crate::lock::missing_backend;
use crate::runtime::Runtime;

/// Builds a [`LeaderElection`].
#[must_use]
pub struct LeaderElectionBuilder<R: Runtime> {
    name: String,
    config: LeaderElectionConfigBuilder,
    env: EnvSource,
    options: EnvOptions,
    backend: Option<Arc<dyn LeaderElectionBackend>>,
    metadata: Metadata,
    runtime: R,
}

impl<R: Runtime> LeaderElectionBuilder<R> {
    pub(crate) fn new(name: &str, runtime: R) -> Self {
        Self {
            name: name.to_owned(),
            config: LeaderElectionConfig::builder(),
            env: EnvSource::Process,
            options: EnvOptions::default(),
            backend: None,
            metadata: Metadata::new(),
            runtime,
        }
    }

    /// The store.
    pub fn backend(self, backend: impl LeaderElectionBackend) -> Self {
        self.shared_backend(Arc::new(backend))
    }

    /// The store, shared.
    pub fn shared_backend(mut self, backend: Arc<dyn LeaderElectionBackend>) -> Self {
        self.backend = Some(backend);
        self
    }

    /// What this worker attaches to the lease while it leads (pod, version, region).
    pub fn metadata(mut self, metadata: Metadata) -> Self {
        self.metadata = metadata;
        self
    }

    /// The worker identity, which is also the election token.
    pub fn worker(mut self, worker: WorkerId) -> Self {
        self.config = self.config.worker(worker);
        self
    }

    /// The lease (default 15 s).
    pub fn lease_duration(mut self, d: Duration) -> Self {
        self.config = self.config.lease_duration(d);
        self
    }

    /// How long a leader keeps believing without a confirmation (default 10 s).
    pub fn renew_deadline(mut self, d: Duration) -> Self {
        self.config = self.config.renew_deadline(d);
        self
    }

    /// The pause between attempts (default 2 s).
    pub fn retry_interval(mut self, d: Duration) -> Self {
        self.config = self.config.retry_interval(d);
        self
    }

    /// The jitter factor (default 0.1).
    pub fn retry_jitter(mut self, j: f64) -> Self {
        self.config = self.config.retry_jitter(j);
        self
    }

    /// The bound on one store call (default 5 s).
    pub fn backend_timeout(mut self, d: Duration) -> Self {
        self.config = self.config.backend_timeout(d);
        self
    }

    /// The quiet period between logged errors (default 30 s).
    pub fn error_interval(mut self, d: Duration) -> Self {
        self.config = self.config.error_interval(d);
        self
    }

    /// Reads exactly `{prefix}{FIELD}` variables.
    pub fn env_prefix(mut self, prefix: &str) -> Self {
        self.options.env_prefix = Some(prefix.to_owned());
        self
    }

    /// Reads or ignores the environment whatever `GREL_ENV_LOAD` says.
    pub fn env_load(mut self, load: bool) -> Self {
        self.options.env_load = Some(load);
        self
    }

    /// Reads these variables instead of the process environment.
    pub fn env_vars(mut self, vars: EnvVars) -> Self {
        self.env = EnvSource::Vars(vars);
        self
    }

    /// Validates and builds (not started: see [`LeaderElection::start`]).
    pub fn build(self) -> Result<LeaderElection<R>, Error> {
        let name = Name::new(&self.name)?;
        let backend = self.backend.ok_or_else(|| missing_backend("LeaderElection", &self.name))?;
        let resolved = self.config.resolve(&self.name, &self.env.vars(), &self.options, &mut rand::rng())?;
        resolve_warnings(&resolved.warnings);
        Ok(LeaderElection::assemble(&name, resolved.config, backend, self.runtime, self.metadata))
    }
}

impl<R: Runtime> std::fmt::Debug for LeaderElectionBuilder<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElectionBuilder").field("name", &self.name).finish_non_exhaustive()
    }
}
