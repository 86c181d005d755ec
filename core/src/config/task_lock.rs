//! `TaskLockConfig`: hold at least 1 s after the task, lease 60 s, backend calls bounded by 5 s.

use std::time::Duration;

use rand_core::Rng;

use super::env::{EnvOptions, EnvReader, EnvVars};
use super::{Resolved, duration};
use crate::error::Error;
use crate::ids::WorkerId;

/// How a `TaskLock` behaves. Build it with [`TaskLockConfig::builder`].
#[derive(Clone, Debug, PartialEq)]
pub struct TaskLockConfig {
    worker: WorkerId,
    min_hold_duration: Duration,
    lease_duration: Duration,
    backend_timeout: Duration,
}

impl TaskLockConfig {
    /// The kind in variable names: `GREL_TASKLOCK_*`.
    pub const ENV_KIND: &'static str = "TASKLOCK";
    /// Default minimum hold after the task body.
    pub const DEFAULT_MIN_HOLD_DURATION: Duration = Duration::from_secs(1);
    /// Default lease.
    pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(60);
    /// Default bound on one store call.
    pub const DEFAULT_BACKEND_TIMEOUT: Duration = Duration::from_secs(5);

    /// A builder with every field unset.
    pub fn builder() -> TaskLockConfigBuilder {
        TaskLockConfigBuilder::default()
    }

    /// A builder holding this configuration.
    pub fn to_builder(&self) -> TaskLockConfigBuilder {
        TaskLockConfigBuilder {
            worker: Some(self.worker.clone()),
            min_hold_duration: Some(self.min_hold_duration),
            lease_duration: Some(self.lease_duration),
            backend_timeout: Some(self.backend_timeout),
        }
    }

    /// The worker identity in this task lock's tokens.
    pub fn worker(&self) -> &WorkerId {
        &self.worker
    }

    /// How long the lock stays held at least, counted from the acquisition, so that no other
    /// worker runs the task again within that window.
    pub fn min_hold_duration(&self) -> Duration {
        self.min_hold_duration
    }

    /// The lease taken at enter: the longest a crashed holder blocks the task.
    pub fn lease_duration(&self) -> Duration {
        self.lease_duration
    }

    /// The longest one store call may take.
    pub fn backend_timeout(&self) -> Duration {
        self.backend_timeout
    }
}

/// Builds a [`TaskLockConfig`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskLockConfigBuilder {
    worker: Option<WorkerId>,
    min_hold_duration: Option<Duration>,
    lease_duration: Option<Duration>,
    backend_timeout: Option<Duration>,
}

impl TaskLockConfigBuilder {
    /// Sets the worker identity.
    #[must_use]
    pub fn worker(mut self, worker: WorkerId) -> Self {
        self.worker = Some(worker);
        self
    }

    /// Sets the minimum hold (default 1 s; at most the lease).
    #[must_use]
    pub fn min_hold_duration(mut self, d: Duration) -> Self {
        self.min_hold_duration = Some(d);
        self
    }

    /// Sets the lease (default 60 s).
    #[must_use]
    pub fn lease_duration(mut self, d: Duration) -> Self {
        self.lease_duration = Some(d);
        self
    }

    /// Sets the bound on one store call (default 5 s).
    #[must_use]
    pub fn backend_timeout(mut self, d: Duration) -> Self {
        self.backend_timeout = Some(d);
        self
    }

    /// Checks every rule and builds.
    pub fn build<R: Rng + ?Sized>(self, rng: &mut R) -> Result<TaskLockConfig, Error> {
        let min_hold_duration =
            duration("min_hold_duration", self.min_hold_duration, TaskLockConfig::DEFAULT_MIN_HOLD_DURATION)?;
        let lease_duration = duration("lease_duration", self.lease_duration, TaskLockConfig::DEFAULT_LEASE_DURATION)?;
        if min_hold_duration > lease_duration {
            return Err(Error::settings(
                "min_hold_duration",
                "min_hold_duration must be less than or equal to lease_duration",
            ));
        }
        Ok(TaskLockConfig {
            min_hold_duration,
            lease_duration,
            backend_timeout: duration(
                "backend_timeout",
                self.backend_timeout,
                TaskLockConfig::DEFAULT_BACKEND_TIMEOUT,
            )?,
            worker: self.worker.unwrap_or_else(|| WorkerId::random(rng)),
        })
    }

    /// Fills unset fields from `GREL_TASKLOCK_*` for the task lock `name`, then builds.
    pub fn resolve<R: Rng + ?Sized>(
        mut self,
        name: &str,
        env: &EnvVars,
        options: &EnvOptions,
        rng: &mut R,
    ) -> Result<Resolved<TaskLockConfig>, Error> {
        let mut reader = EnvReader::new(TaskLockConfig::ENV_KIND, name, env, options)?;
        reader.worker(&mut self.worker)?;
        reader.duration("MIN_HOLD_DURATION", &mut self.min_hold_duration)?;
        reader.duration("LEASE_DURATION", &mut self.lease_duration)?;
        reader.duration("BACKEND_TIMEOUT", &mut self.backend_timeout)?;
        Ok(Resolved { config: self.build(rng)?, warnings: reader.into_warnings() })
    }
}
