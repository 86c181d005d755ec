//! `LockBuilder`: settings, environment and backend of a `Lock`.

use std::time::Duration;

use tenure_core::{Error, LockConfig, LockConfigBuilder, WorkerId};

use super::Lock;
use crate::backend::LockBackend;
use crate::builder::{Common, common_setters, config_setters};
use crate::runtime::Runtime;

/// The setters of a lock's configuration (a read-write lock's is a lock's).
macro_rules! lock_config_setters {
    () => {
        config_setters! {
            /// The worker identity (default: 16 random hex characters).
            worker: WorkerId,
            /// The lease (default 60 s; on a read-write lock each reader's, the writer's and a
            /// waiting writer's intent's).
            lease_duration: Duration,
            /// The pause between attempts (default 0.1 s, at least 1 ms).
            retry_interval: Duration,
            /// The jitter factor (default 0.1; `0 <= j < 1`).
            retry_jitter: f64,
            /// The bound on one store call (default 5 s).
            backend_timeout: Duration,
        }
    };
}

pub(super) use lock_config_setters;

/// Builds a [`Lock`]. Settings left unset come from the environment (`GREL_LOCK_{NAME}_*`, then
/// `GREL_LOCK_*`, gated by `GREL_ENV_LOAD`), then from grelmicro's defaults.
#[must_use]
pub struct LockBuilder<R: Runtime> {
    common: Common<dyn LockBackend, R>,
    config: LockConfigBuilder,
    purpose: Option<String>,
}

impl<R: Runtime> LockBuilder<R> {
    pub(crate) fn new(name: &str, runtime: R) -> Self {
        Self { common: Common::new(name, runtime), config: LockConfig::builder(), purpose: None }
    }

    common_setters!(LockBackend);

    lock_config_setters!();

    /// What the lock is held for, shown with its holder ([`Lock::set_purpose`]).
    pub fn purpose(mut self, purpose: &str) -> Self {
        self.purpose = Some(purpose.to_owned());
        self
    }

    /// Validates the name and every setting and builds the lock.
    pub fn build(self) -> Result<Lock<R>, Error> {
        let built = self.common.build("Lock", self.config)?;
        let lock = Lock::assemble(&built.name, built.config, built.backend, built.runtime);
        lock.set_purpose(self.purpose.as_deref())?;
        Ok(lock)
    }
}

impl<R: Runtime> std::fmt::Debug for LockBuilder<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockBuilder").field("name", &self.common.name).finish_non_exhaustive()
    }
}
