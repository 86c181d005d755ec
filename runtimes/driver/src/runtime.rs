//! The seam between Tenure and an async runtime: a monotonic clock, timers and background tasks.
//!
//! `tenure-tokio`, `tenure-smol` and `tenure-async-std` implement [`Runtime`] in a few lines;
//! everything else in Tenure is written once against it.

use std::future::Future;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tenure_core::Timestamp;

/// What Tenure needs from an async runtime.
pub trait Runtime: Clone + std::fmt::Debug + Send + Sync + 'static {
    /// The future [`Runtime::sleep_until`] returns.
    type Sleep: Future<Output = ()> + Send + 'static;

    /// A future that completes at `deadline` (a [`clock`] instant); at once if it has passed.
    fn sleep_until(&self, deadline: Timestamp) -> Self::Sleep;

    /// Runs `task` in the background, detached. Called from `Drop` (a guard handing its
    /// release over), so it must not block and must work from any thread.
    fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static;

    /// The monotonic clock every machine input is stamped with.
    fn now(&self) -> Timestamp {
        clock::now()
    }

    /// Whether blocking the calling thread would stall this runtime (the thread is one of its
    /// workers), so a blocking adapter must refuse instead of deadlocking.
    fn blocks_runtime(&self) -> bool {
        false
    }
}

/// The process-wide monotonic clock: nanoseconds since the first time Tenure looked at it.
pub mod clock {
    use super::{Duration, Instant, OnceLock, Timestamp};

    static EPOCH: OnceLock<Instant> = OnceLock::new();

    fn epoch() -> Instant {
        *EPOCH.get_or_init(Instant::now)
    }

    /// Now.
    pub fn now() -> Timestamp {
        let elapsed = epoch().elapsed();
        Timestamp::from_nanos(u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX))
    }

    /// The [`Instant`] of `t`, for runtimes whose timers take one. Saturates far in the future.
    pub fn instant(t: Timestamp) -> Instant {
        let epoch = epoch();
        let far = Duration::from_secs(100 * 365 * 86_400);
        epoch.checked_add(Duration::from_nanos(t.as_nanos())).unwrap_or_else(|| epoch + far)
    }
}
