//! The seam between Tenure and an async runtime: a monotonic clock, timers and background tasks.
//!
//! `tenure-tokio`, `tenure-smol` and `tenure-async-std` implement [`Runtime`] in a few lines;
//! everything else in Tenure is written once against it.

use std::future::Future;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tenure_core::{Error, Timestamp};

/// What Tenure needs from an async runtime.
pub trait Runtime: Clone + std::fmt::Debug + Send + Sync + 'static {
    /// The future [`Runtime::sleep_until`] returns (its output is ignored).
    type Sleep: Future + Send + 'static;

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

    /// `future`'s output, or `None` if `deadline` (a [`clock`] instant) passes first; an output
    /// ready at the deadline wins. Every place Tenure races a store call against its deadline
    /// uses this.
    fn timeout_at<F>(&self, deadline: Timestamp, future: F) -> impl Future<Output = Option<F::Output>> + Send
    where
        F: Future + Send,
    {
        let sleep = self.sleep_until(deadline);
        futures_lite::future::or(async { Some(future.await) }, async {
            drop(sleep.await);
            None
        })
    }

    /// A seed for a machine's retry jitter: from the operating system by default; a simulator
    /// gives its own, so that a seed replays a run.
    fn jitter_seed(&self) -> u64 {
        rand::random()
    }

    /// Whether blocking the calling thread would stall this runtime (the thread is one of its
    /// workers), so a blocking adapter must refuse instead of deadlocking.
    fn blocks_runtime(&self) -> bool {
        false
    }

    /// Runs `work` to completion on the calling thread, for the blocking adapters:
    /// [`Error::Deadlock`] if that would stall this runtime.
    fn block_on<F: Future>(&self, what: &str, work: F) -> Result<F::Output, Error> {
        if self.blocks_runtime() {
            return Err(Error::Deadlock { what: what.to_owned() });
        }
        Ok(futures_lite::future::block_on(work))
    }
}

/// Sleeps until `deadline`, or forever when there is none.
pub(crate) async fn sleep_until<R: Runtime>(runtime: &R, deadline: Option<Timestamp>) {
    match deadline {
        Some(at) => drop(runtime.sleep_until(at).await),
        None => futures_lite::future::pending().await,
    }
}

/// The process-wide monotonic clock: nanoseconds since the first time Tenure looked at it.
pub mod clock {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::{Duration, Instant, OnceLock, Timestamp};

    static EPOCH: OnceLock<Instant> = OnceLock::new();
    static LATEST: AtomicU64 = AtomicU64::new(0);

    fn epoch() -> Instant {
        *EPOCH.get_or_init(Instant::now)
    }

    /// Now: never earlier than a `now` returned before, even if the OS clock went back (a
    /// monotonic clock does not, but a faked one does: libfaketime, as the Jepsen runs' clock
    /// jumps use it, moved every client's clock back and Tenure's debug builds stopped on the
    /// core's check that time never goes back).
    pub fn now() -> Timestamp {
        let elapsed = u64::try_from(epoch().elapsed().as_nanos()).unwrap_or(u64::MAX);
        Timestamp::from_nanos(never_back(&LATEST, elapsed))
    }

    /// `reading`, or the latest of the readings before it if that is later.
    pub(crate) fn never_back(latest: &AtomicU64, reading: u64) -> u64 {
        latest.fetch_max(reading, Ordering::Relaxed).max(reading)
    }

    /// The [`Instant`] of `t`, for runtimes whose timers take one. Saturates far in the future.
    pub fn instant(t: Timestamp) -> Instant {
        let epoch = epoch();
        let far = Duration::from_secs(100 * 365 * 86_400);
        epoch.checked_add(Duration::from_nanos(t.as_nanos())).unwrap_or_else(|| epoch + far)
    }
}

/// Defines, in a runtime crate, the type aliases that fix the runtime of every primitive
/// (`Lock` for `tenure::Lock<$runtime>`, and so on).
#[macro_export]
macro_rules! runtime_aliases {
    ($runtime:ty) => {
        /// A [`tenure::Lock`] on this runtime.
        pub type Lock = $crate::Lock<$runtime>;
        /// A [`tenure::LockGuard`] on this runtime.
        pub type LockGuard = $crate::LockGuard<$runtime>;
        /// A [`tenure::LockHolder`] on this runtime.
        pub type LockHolder = $crate::LockHolder<$runtime>;
        /// A [`tenure::TaskLock`] on this runtime.
        pub type TaskLock = $crate::TaskLock<$runtime>;
        /// A [`tenure::TaskLockGuard`] on this runtime.
        pub type TaskLockGuard = $crate::TaskLockGuard<$runtime>;
        /// A [`tenure::LeaderElection`] on this runtime.
        pub type LeaderElection = $crate::LeaderElection<$runtime>;
        /// A [`tenure::LeaderGuard`] on this runtime.
        pub type LeaderGuard = $crate::LeaderGuard<$runtime>;
        /// A [`tenure::Coordination`] on this runtime.
        pub type Coordination = $crate::Coordination<$runtime>;
        /// A [`tenure::Registry`] on this runtime.
        pub type Registry = $crate::Registry<$runtime>;
        /// A [`tenure::ReadWriteLock`] on this runtime.
        pub type ReadWriteLock = $crate::ReadWriteLock<$runtime>;
        /// A [`tenure::ReadGuard`] on this runtime.
        pub type ReadGuard = $crate::ReadGuard<$runtime>;
        /// A [`tenure::WriteGuard`] on this runtime.
        pub type WriteGuard = $crate::WriteGuard<$runtime>;
    };
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU64;

    use super::clock::never_back;

    #[test]
    fn the_clock_never_goes_back_when_the_os_clock_does() {
        let latest = AtomicU64::new(0);
        let readings = [5, 9, 3, 0, 12, 11];
        let seen: Vec<u64> = readings.iter().map(|&r| never_back(&latest, r)).collect();
        assert_eq!(seen, [5, 9, 9, 9, 12, 12]);
    }
}
