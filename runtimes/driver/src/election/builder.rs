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
    purpose: Option<String>,
}

impl<R: Runtime> LeaderElectionBuilder<R> {
    pub(crate) fn new(name: &str, runtime: R) -> Self {
        let config = LeaderElectionConfig::builder();
        Self { common: Common::new(name, runtime), config, metadata: Metadata::new(), purpose: None }
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

    /// What this worker leads for, shown with it while it leads ([`LeaderElection::set_purpose`]).
    pub fn purpose(mut self, purpose: &str) -> Self {
        self.purpose = Some(purpose.to_owned());
        self
    }

    /// Validates and builds (not started: see [`LeaderElection::start`]).
    pub fn build(self) -> Result<LeaderElection<R>, Error> {
        let built = self.common.build("LeaderElection", self.config)?;
        let election = LeaderElection::assemble(&built.name, built.config, built.backend, built.runtime, self.metadata);
        election.set_purpose(self.purpose.as_deref())?;
        Ok(election)
    }
}

impl<R: Runtime> std::fmt::Debug for LeaderElectionBuilder<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElectionBuilder").field("name", &self.common.name).finish_non_exhaustive()
    }
}
