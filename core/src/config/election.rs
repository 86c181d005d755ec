//! `LeaderElectionConfig`: lease 15 s, renew deadline 10 s, an attempt every 2 s (10 % jitter),
//! backend calls bounded by 5 s, error logs at most every 30 s.

use std::time::Duration;

use rand_core::Rng;

use super::env::{EnvOptions, EnvReader, EnvVars};
use super::{Resolved, duration, retry_interval, retry_jitter};
use crate::error::Error;
use crate::ids::WorkerId;

/// How a `LeaderElection` behaves. Build it with [`LeaderElectionConfig::builder`].
#[derive(Clone, Debug, PartialEq)]
pub struct LeaderElectionConfig {
    worker: WorkerId,
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_interval: Duration,
    backend_timeout: Duration,
    error_interval: Duration,
    retry_jitter: f64,
}

impl LeaderElectionConfig {
    /// The kind in variable names: `GREL_LEADERELECTION_*`.
    pub const ENV_KIND: &'static str = "LEADERELECTION";
    /// Default lease.
    pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
    /// Default renew deadline.
    pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
    /// Default pause between attempts.
    pub const DEFAULT_RETRY_INTERVAL: Duration = Duration::from_secs(2);
    /// Default bound on one store call.
    pub const DEFAULT_BACKEND_TIMEOUT: Duration = Duration::from_secs(5);
    /// Default quiet period between logged errors.
    pub const DEFAULT_ERROR_INTERVAL: Duration = Duration::from_secs(30);
    /// Default jitter factor.
    pub const DEFAULT_RETRY_JITTER: f64 = 0.1;

    /// A builder with every field unset.
    pub fn builder() -> LeaderElectionConfigBuilder {
        LeaderElectionConfigBuilder::default()
    }

    /// A builder holding this configuration.
    pub fn to_builder(&self) -> LeaderElectionConfigBuilder {
        LeaderElectionConfigBuilder {
            worker: Some(self.worker.clone()),
            lease_duration: Some(self.lease_duration),
            renew_deadline: Some(self.renew_deadline),
            retry_interval: Some(self.retry_interval),
            backend_timeout: Some(self.backend_timeout),
            error_interval: Some(self.error_interval),
            retry_jitter: Some(self.retry_jitter),
        }
    }

    /// The worker identity, which is also the election token.
    pub fn worker(&self) -> &WorkerId {
        &self.worker
    }

    /// How long the leader's lease lasts after each renewal.
    pub fn lease_duration(&self) -> Duration {
        self.lease_duration
    }

    /// How long a leader keeps believing without a successful renewal.
    pub fn renew_deadline(&self) -> Duration {
        self.renew_deadline
    }

    /// The pause between attempts, before jitter.
    pub fn retry_interval(&self) -> Duration {
        self.retry_interval
    }

    /// The longest one store call may take.
    pub fn backend_timeout(&self) -> Duration {
        self.backend_timeout
    }

    /// The quiet period after which another store error is worth logging.
    pub fn error_interval(&self) -> Duration {
        self.error_interval
    }

    /// The jitter factor applied to each pause.
    pub fn retry_jitter(&self) -> f64 {
        self.retry_jitter
    }
}

/// Builds a [`LeaderElectionConfig`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LeaderElectionConfigBuilder {
    worker: Option<WorkerId>,
    lease_duration: Option<Duration>,
    renew_deadline: Option<Duration>,
    retry_interval: Option<Duration>,
    backend_timeout: Option<Duration>,
    error_interval: Option<Duration>,
    retry_jitter: Option<f64>,
}

impl LeaderElectionConfigBuilder {
    /// Sets the worker identity.
    #[must_use]
    pub fn worker(mut self, worker: WorkerId) -> Self {
        self.worker = Some(worker);
        self
    }

    /// Sets the lease (default 15 s).
    #[must_use]
    pub fn lease_duration(mut self, d: Duration) -> Self {
        self.lease_duration = Some(d);
        self
    }

    /// Sets the renew deadline (default 10 s; shorter than the lease).
    #[must_use]
    pub fn renew_deadline(mut self, d: Duration) -> Self {
        self.renew_deadline = Some(d);
        self
    }

    /// Sets the retry interval (default 2 s; shorter than the renew deadline; at least 1 ms — a
    /// Tenure floor that protects the store, where grelmicro only asks for a positive value).
    #[must_use]
    pub fn retry_interval(mut self, d: Duration) -> Self {
        self.retry_interval = Some(d);
        self
    }

    /// Sets the bound on one store call (default 5 s; shorter than the renew deadline).
    #[must_use]
    pub fn backend_timeout(mut self, d: Duration) -> Self {
        self.backend_timeout = Some(d);
        self
    }

    /// Sets the error-log quiet period (default 30 s).
    #[must_use]
    pub fn error_interval(mut self, d: Duration) -> Self {
        self.error_interval = Some(d);
        self
    }

    /// Sets the jitter factor (default 0.1).
    #[must_use]
    pub fn retry_jitter(mut self, j: f64) -> Self {
        self.retry_jitter = Some(j);
        self
    }

    /// Checks every rule, in grelmicro's order, and builds.
    pub fn build<R: Rng + ?Sized>(self, rng: &mut R) -> Result<LeaderElectionConfig, Error> {
        type C = LeaderElectionConfig;
        let lease_duration = duration("lease_duration", self.lease_duration, C::DEFAULT_LEASE_DURATION)?;
        let renew_deadline = duration("renew_deadline", self.renew_deadline, C::DEFAULT_RENEW_DEADLINE)?;
        let retry_interval = retry_interval(self.retry_interval, C::DEFAULT_RETRY_INTERVAL)?;
        let backend_timeout = duration("backend_timeout", self.backend_timeout, C::DEFAULT_BACKEND_TIMEOUT)?;
        let error_interval = duration("error_interval", self.error_interval, C::DEFAULT_ERROR_INTERVAL)?;
        let retry_jitter = retry_jitter(self.retry_jitter, C::DEFAULT_RETRY_JITTER)?;
        if renew_deadline >= lease_duration {
            return Err(Error::settings("renew_deadline", "Renew deadline must be shorter than lease duration"));
        }
        if retry_interval >= renew_deadline {
            return Err(Error::settings("retry_interval", "Retry interval must be shorter than renew deadline"));
        }
        if backend_timeout >= renew_deadline {
            return Err(Error::settings("backend_timeout", "Backend timeout must be shorter than renew deadline"));
        }
        Ok(LeaderElectionConfig {
            worker: self.worker.unwrap_or_else(|| WorkerId::random(rng)),
            lease_duration,
            renew_deadline,
            retry_interval,
            backend_timeout,
            error_interval,
            retry_jitter,
        })
    }

    /// Fills unset fields from `GREL_LEADERELECTION_*` for the election `name`, then builds.
    pub fn resolve<R: Rng + ?Sized>(
        mut self,
        name: &str,
        env: &EnvVars,
        options: &EnvOptions,
        rng: &mut R,
    ) -> Result<Resolved<LeaderElectionConfig>, Error> {
        let mut reader = EnvReader::new(LeaderElectionConfig::ENV_KIND, name, env, options)?;
        reader.worker(&mut self.worker)?;
        reader.duration("LEASE_DURATION", &mut self.lease_duration)?;
        reader.duration("RENEW_DEADLINE", &mut self.renew_deadline)?;
        reader.duration("RETRY_INTERVAL", &mut self.retry_interval)?;
        reader.duration("BACKEND_TIMEOUT", &mut self.backend_timeout)?;
        reader.duration("ERROR_INTERVAL", &mut self.error_interval)?;
        reader.float("RETRY_JITTER", &mut self.retry_jitter)?;
        Ok(Resolved { config: self.build(rng)?, warnings: reader.into_warnings() })
    }
}
