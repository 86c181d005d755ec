//! `LockConfig`: lease 60 s, retry every 0.1 s with 10 % jitter, backend calls bounded by 5 s.

use std::time::Duration;

use rand_core::Rng;

use super::env::{EnvOptions, EnvReader, EnvVars};
use super::{Resolved, duration, retry_interval, retry_jitter};
use crate::error::Error;
use crate::ids::WorkerId;

/// How a `Lock` behaves. Build it with [`LockConfig::builder`].
#[derive(Clone, Debug, PartialEq)]
pub struct LockConfig {
    worker: WorkerId,
    lease_duration: Duration,
    retry_interval: Duration,
    retry_jitter: f64,
    backend_timeout: Duration,
}

impl LockConfig {
    /// The kind in variable names: `GREL_LOCK_*`.
    pub const ENV_KIND: &'static str = "LOCK";
    /// The `GREL_*` kind a read-write lock's variables use (`GREL_READWRITELOCK_*`): its
    /// configuration is a lock's.
    pub const READ_WRITE_ENV_KIND: &'static str = "READWRITELOCK";
    /// The `GREL_*` kind a semaphore's variables use (`GREL_SEMAPHORE_*`): its configuration is
    /// a lock's (the permit count is not read from the environment: it is part of the store's
    /// state, and every contender must ask for the same).
    pub const SEMAPHORE_ENV_KIND: &'static str = "SEMAPHORE";
    /// Default lease.
    pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(60);
    /// Default pause between attempts of a blocking acquire.
    pub const DEFAULT_RETRY_INTERVAL: Duration = Duration::from_millis(100);
    /// Default jitter factor.
    pub const DEFAULT_RETRY_JITTER: f64 = 0.1;
    /// Default bound on one store call (DESIGN §4.3; grelmicro has none).
    pub const DEFAULT_BACKEND_TIMEOUT: Duration = Duration::from_secs(5);

    /// A builder with every field unset.
    pub fn builder() -> LockConfigBuilder {
        LockConfigBuilder::default()
    }

    /// A builder holding this configuration, to change a field and build again.
    pub fn to_builder(&self) -> LockConfigBuilder {
        LockConfigBuilder {
            worker: Some(self.worker.clone()),
            lease_duration: Some(self.lease_duration),
            retry_interval: Some(self.retry_interval),
            retry_jitter: Some(self.retry_jitter),
            backend_timeout: Some(self.backend_timeout),
        }
    }

    /// The worker identity in this lock's tokens.
    pub fn worker(&self) -> &WorkerId {
        &self.worker
    }

    /// How long a lease lasts unless extended.
    pub fn lease_duration(&self) -> Duration {
        self.lease_duration
    }

    /// The pause between attempts of a blocking acquire, before jitter.
    pub fn retry_interval(&self) -> Duration {
        self.retry_interval
    }

    /// The jitter factor applied to each pause.
    pub fn retry_jitter(&self) -> f64 {
        self.retry_jitter
    }

    /// The longest one store call may take before it fails with a timeout.
    pub fn backend_timeout(&self) -> Duration {
        self.backend_timeout
    }
}

/// Builds a [`LockConfig`]; unset fields come from the environment or the defaults.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LockConfigBuilder {
    worker: Option<WorkerId>,
    lease_duration: Option<Duration>,
    retry_interval: Option<Duration>,
    retry_jitter: Option<f64>,
    backend_timeout: Option<Duration>,
}

impl LockConfigBuilder {
    /// Sets the worker identity (default: 16 random hex characters).
    #[must_use]
    pub fn worker(mut self, worker: WorkerId) -> Self {
        self.worker = Some(worker);
        self
    }

    /// Sets the lease (default 60 s).
    #[must_use]
    pub fn lease_duration(mut self, d: Duration) -> Self {
        self.lease_duration = Some(d);
        self
    }

    /// Sets the retry interval (default 0.1 s, at least 1 ms).
    #[must_use]
    pub fn retry_interval(mut self, d: Duration) -> Self {
        self.retry_interval = Some(d);
        self
    }

    /// Sets the jitter factor (default 0.1, `0 <= j < 1`).
    #[must_use]
    pub fn retry_jitter(mut self, j: f64) -> Self {
        self.retry_jitter = Some(j);
        self
    }

    /// Sets the bound on one store call (default 5 s).
    #[must_use]
    pub fn backend_timeout(mut self, d: Duration) -> Self {
        self.backend_timeout = Some(d);
        self
    }

    /// Checks every rule and builds; a missing worker is drawn from `rng`.
    pub fn build<R: Rng + ?Sized>(self, rng: &mut R) -> Result<LockConfig, Error> {
        Ok(LockConfig {
            lease_duration: duration("lease_duration", self.lease_duration, LockConfig::DEFAULT_LEASE_DURATION)?,
            retry_interval: retry_interval(self.retry_interval, LockConfig::DEFAULT_RETRY_INTERVAL)?,
            retry_jitter: retry_jitter(self.retry_jitter, LockConfig::DEFAULT_RETRY_JITTER)?,
            backend_timeout: duration("backend_timeout", self.backend_timeout, LockConfig::DEFAULT_BACKEND_TIMEOUT)?,
            worker: self.worker.unwrap_or_else(|| WorkerId::random(rng)),
        })
    }

    /// Fills unset fields from `GREL_LOCK_*` for the lock `name`, then builds.
    pub fn resolve<R: Rng + ?Sized>(
        self,
        name: &str,
        env: &EnvVars,
        options: &EnvOptions,
        rng: &mut R,
    ) -> Result<Resolved<LockConfig>, Error> {
        self.resolve_kind(LockConfig::ENV_KIND, name, env, options, rng)
    }

    /// Fills unset fields from `GREL_{kind}_*` (a read-write lock's
    /// [`LockConfig::READ_WRITE_ENV_KIND`], say) for `name`, then builds.
    pub fn resolve_kind<R: Rng + ?Sized>(
        mut self,
        kind: &str,
        name: &str,
        env: &EnvVars,
        options: &EnvOptions,
        rng: &mut R,
    ) -> Result<Resolved<LockConfig>, Error> {
        let mut reader = EnvReader::new(kind, name, env, options)?;
        reader.worker(&mut self.worker)?;
        reader.duration("LEASE_DURATION", &mut self.lease_duration)?;
        reader.duration("RETRY_INTERVAL", &mut self.retry_interval)?;
        reader.float("RETRY_JITTER", &mut self.retry_jitter)?;
        reader.duration("BACKEND_TIMEOUT", &mut self.backend_timeout)?;
        Ok(Resolved { config: self.build(rng)?, warnings: reader.into_warnings() })
    }
}
