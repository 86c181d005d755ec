//! `LeaderElectionBuilder`.

use std::time::Duration;

use tenure_core::{Error, LeaderElectionConfig, LeaderElectionConfigBuilder, Metadata, WorkerId};

use super::LeaderElection;
use crate::backend::LeaderElectionBackend;
use crate::builder::{Common, common_setters, config_setters};
use crate::runtime::Runtime;

/// Builds a [`LeaderElection`]. Settings left unset come from `GREL_LEADERELECTION_*`.
#[must_use]
pub struct LeaderElectionBuilder<R: Runtime> {
    common: Common<dyn LeaderElectionBackend, R>,
    config: LeaderElectionConfigBuilder,
    metadata: Metadata,
}

impl<R: Runtime> LeaderElectionBuilder<R> {
    pub(crate) fn new(name: &str, runtime: R) -> Self {
        Self { common: Common::new(name, runtime), config: LeaderElectionConfig::builder(), metadata: Metadata::new() }
    }

    common_setters!(LeaderElectionBackend);

    config_setters! {
        /// The worker identity, which is also the election token.
        worker: WorkerId,
        /// The lease (default 15 s).
        lease_duration: Duration,
        /// How long a leader keeps believing without a confirmation (default 10 s).
        renew_deadline: Duration,
        /// The pause between attempts (default 2 s).
        retry_interval: Duration,
        /// The jitter factor (default 0.1).
        retry_jitter: f64,
        /// The bound on one store call (default 5 s).
        backend_timeout: Duration,
        /// The quiet period between logged errors (default 30 s).
        error_interval: Duration,
    }

    /// What this worker attaches to the lease while it leads (pod, version, region).
    pub fn metadata(mut self, metadata: Metadata) -> Self {
        self.metadata = metadata;
        self
    }

    /// Validates and builds (not started: see [`LeaderElection::start`]).
    pub fn build(self) -> Result<LeaderElection<R>, Error> {
        let built = self.common.build("LeaderElection", self.config)?;
        Ok(LeaderElection::assemble(&built.name, built.config, built.backend, built.runtime, self.metadata))
    }
}

impl<R: Runtime> std::fmt::Debug for LeaderElectionBuilder<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElectionBuilder").field("name", &self.common.name).finish_non_exhaustive()
    }
}
