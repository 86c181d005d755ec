//! The leader health check (client-go's `HealthzAdaptor`): a process that believes it leads but
//! whose election loop has stopped renewing is unhealthy, so that its orchestrator restarts it.

use std::fmt;
use std::time::Duration;

use super::LeaderElection;
use crate::runtime::Runtime;

/// What a health route answers for an election ([`LeaderElection::health`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeaderHealth {
    /// Not leading, or leading with renewals on time.
    Healthy,
    /// This process still believes it leads, but the store last confirmed it longer ago than
    /// its leadership lasts plus the tolerance: the election loop is stuck (a blocked or starved
    /// runtime).
    Stale {
        /// The election.
        name: String,
        /// Since the store last confirmed the leadership.
        since_confirmed: Duration,
        /// The tolerance asked for.
        tolerance: Duration,
    },
}

impl LeaderHealth {
    /// Whether a health route should answer healthy.
    pub fn is_healthy(&self) -> bool {
        matches!(self, Self::Healthy)
    }
}

impl fmt::Display for LeaderHealth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Healthy => f.write_str("healthy"),
            Self::Stale { name, since_confirmed, tolerance } => write!(
                f,
                "leader election {name}: this process believes it leads but the store last confirmed it \
                 {:.3} s ago, past its renew deadline plus the tolerance of {:.3} s: the election loop is not renewing",
                since_confirmed.as_secs_f64(),
                tolerance.as_secs_f64(),
            ),
        }
    }
}

impl<R: Runtime> LeaderElection<R> {
    /// The leader health check: [`LeaderHealth::Stale`] when this process believes it leads but
    /// the store has not confirmed it within the renew deadline plus `tolerance` (client-go's
    /// `maxTolerableExpiredLease`); healthy otherwise (a follower, a stopped election).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # fn route<R: tenure::Runtime>(election: &tenure::LeaderElection<R>) -> (u16, String) {
    /// let health = election.health(Duration::from_secs(10));
    /// if health.is_healthy() { (200, "ok".into()) } else { (503, health.to_string()) }
    /// # }
    /// ```
    pub fn health(&self, tolerance: Duration) -> LeaderHealth {
        let shared = self.shared();
        let stale = shared.cell.lock().stale_leadership(shared.now(), tolerance);
        match stale {
            None => LeaderHealth::Healthy,
            Some(since_confirmed) => {
                LeaderHealth::Stale { name: self.name().as_str().to_owned(), since_confirmed, tolerance }
            }
        }
    }
}
