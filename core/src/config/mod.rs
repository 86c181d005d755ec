//! Configuration of the three primitives: defaults and validation (spec §2.1 as amended by
//! grelmicro 0.44), builders, and resolution from `GREL_*` environment variables (spec §2.2).
//!
//! A configuration that exists is valid: builders check every rule in `build`, and the
//! configuration types have no public constructor besides their builder.

mod election;
pub mod env;
mod lock;
mod task_lock;
pub mod text;

use std::time::Duration;

pub use election::{LeaderElectionConfig, LeaderElectionConfigBuilder};
pub use env::{EnvOptions, EnvVars, EnvWarning};
pub use lock::{LockConfig, LockConfigBuilder};
pub use task_lock::{TaskLockConfig, TaskLockConfigBuilder};

use crate::error::{Error, SettingsError};
use crate::ids::WorkerId;
use crate::time::positive;

/// The smallest retry interval (grelmicro: "to prevent flooding the lock backend").
pub const MIN_RETRY_INTERVAL: Duration = Duration::from_millis(1);

/// A configuration read with the environment, and what is worth telling about that read.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved<C> {
    /// The configuration.
    pub config: C,
    /// Warnings to report once per variable (the driver deduplicates across the process).
    pub warnings: Vec<EnvWarning>,
}

/// The value of a duration field: as set, else the default; checked positive and bounded.
fn duration(field: &str, value: Option<Duration>, default: Duration) -> Result<Duration, Error> {
    positive(field, value.unwrap_or(default))
}

/// A retry interval: positive and at least [`MIN_RETRY_INTERVAL`].
fn retry_interval(value: Option<Duration>, default: Duration) -> Result<Duration, Error> {
    let d = duration("retry_interval", value, default)?;
    if d < MIN_RETRY_INTERVAL {
        return Err(Error::settings("retry_interval", "retry_interval must be >= 0.001"));
    }
    Ok(d)
}

/// A jitter factor: `0 <= j < 1`.
fn retry_jitter(value: Option<f64>, default: f64) -> Result<f64, Error> {
    let j = value.unwrap_or(default);
    if !(0.0..1.0).contains(&j) {
        return Err(Error::settings("retry_jitter", "retry_jitter must be >= 0 and < 1"));
    }
    Ok(j)
}

/// The rule every `reconfigure` applies: the worker identity cannot change.
pub fn ensure_same_worker(current: &WorkerId, new: &WorkerId) -> Result<(), Error> {
    if current == new {
        return Ok(());
    }
    Err(SettingsError::field(
        "worker",
        "the worker is immutable and cannot change (it names this process's leases in the store); \
         build a new primitive for another worker",
    )
    .into())
}
