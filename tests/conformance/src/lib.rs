//! The backend contract, written once and instantiated per backend.
//!
//! A backend joins by giving a [`Harness`]: a way to make a fresh, empty [`Store`] and the kind
//! of clock the store judges leases by. Each case of [`cases`] then runs against it:
//! the fixed cases of spec §5 and §8.1 (exact expiry instants where the clock can be driven,
//! fencing across release and expiry, transitions, metadata, schedules, contention), and
//! [`random::compare`], which applies random operation sequences to the backend and to
//! [`tenure_core::StoreModel`] side by side and compares every answer.
//!
//! ```text
//! tenure_conformance::conformance_tests!(my_backend_harness());
//! ```

#![deny(missing_docs)]

pub mod bench;
pub mod cases;
pub mod chaos;
pub mod faults;
pub mod inspect;
pub mod push;
pub mod queue;
pub mod random;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use tenure::backend::{LeaderElectionBackend, LockBackend, ScheduleBackend};
use tenure_core::WallTime;

/// A fresh, empty store under test.
#[allow(missing_debug_implementations)] // trait objects
pub struct Store {
    /// Its lock interface.
    pub lock: Arc<dyn LockBackend>,
    /// Its leader-election interface.
    pub leader: Arc<dyn LeaderElectionBackend>,
    /// Its schedule interface.
    pub schedule: Arc<dyn ScheduleBackend>,
}

impl Store {
    /// A store that serves all three kinds, in every slot.
    pub fn of<B>(backend: B) -> Self
    where
        B: LockBackend + LeaderElectionBackend + ScheduleBackend + Clone,
    {
        Self { lock: Arc::new(backend.clone()), leader: Arc::new(backend.clone()), schedule: Arc::new(backend) }
    }
}

/// The future a harness returns a store from.
pub type StoreFuture = Pin<Box<dyn Future<Output = Store> + Send>>;

/// The clock a store judges leases by.
#[derive(Clone, Debug)]
pub enum Clock {
    /// The test drives it: the store reads [`ManualClock::now`].
    Manual(Arc<ManualClock>),
    /// Real time, to the store's own resolution: advancing sleeps. `quantum` is the spacing of
    /// the random sequences' instants; leases there end half a quantum away from any operation,
    /// so scheduling delays shorter than that cannot change an answer.
    Real {
        /// The spacing of instants in random sequences.
        quantum: Duration,
    },
}

/// A clock only the test moves, starting on a whole millisecond.
#[derive(Debug)]
pub struct ManualClock {
    micros: AtomicI64,
}

impl ManualClock {
    /// A clock reading 2026-11-29 07:35:24.000 UTC.
    pub fn new() -> Arc<Self> {
        Arc::new(Self { micros: AtomicI64::new(1_795_937_724_000_000) })
    }

    /// The instant it reads.
    pub fn now(&self) -> WallTime {
        WallTime::from_unix_micros(self.micros.load(Ordering::SeqCst))
    }

    /// Moves it forward by `d`.
    pub fn advance(&self, d: Duration) {
        let micros = i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
        self.micros.fetch_add(micros, Ordering::SeqCst);
    }
}

/// How to test one backend.
#[allow(missing_debug_implementations)] // a factory closure
pub struct Harness {
    /// The backend's name, for messages.
    pub name: &'static str,
    /// The clock its stores judge by.
    pub clock: Clock,
    /// Makes a fresh, empty store judged by `clock`.
    pub make: Box<dyn Fn() -> StoreFuture + Send + Sync>,
}

impl Harness {
    /// A fresh store.
    pub async fn store(&self) -> Store {
        (self.make)().await
    }

    /// Lets `d` pass on the store's clock.
    pub async fn advance(&self, d: Duration) {
        match &self.clock {
            Clock::Manual(clock) => clock.advance(d),
            Clock::Real { .. } => tokio::time::sleep(d).await,
        }
    }

    /// A timer for waiting until instants counted from its start (real clocks), or for counting
    /// them (manual clocks).
    pub fn timeline(&self) -> Timeline<'_> {
        Timeline { harness: self, start: Instant::now(), at: Duration::ZERO }
    }

    /// How far a duration read back from the store (a record's times) may be from the model's.
    pub fn tolerance(&self) -> Duration {
        match self.clock {
            Clock::Manual(_) => Duration::ZERO,
            // Both stamps fall within half a quantum of their instants, to the store's millisecond.
            Clock::Real { quantum } => quantum / 2 + Duration::from_millis(1),
        }
    }

    /// The shortest lease to expire in a fixed case, and the wait that outlasts it.
    pub fn short_lease(&self) -> (Duration, Duration) {
        match self.clock {
            Clock::Manual(_) => (Duration::from_millis(200), Duration::from_millis(201)),
            Clock::Real { quantum } => (quantum * 2, quantum * 4),
        }
    }
}

/// Instants of a test on a harness's clock, counted from its start.
#[allow(missing_debug_implementations)]
pub struct Timeline<'a> {
    harness: &'a Harness,
    start: Instant,
    at: Duration,
}

impl Timeline<'_> {
    /// Moves to `at` after the start: sleeps until then on a real clock (never drifting with the
    /// time operations took), moves a manual one.
    pub async fn go_to(&mut self, at: Duration) {
        let step = at.saturating_sub(self.at);
        self.at = self.at.max(at);
        match &self.harness.clock {
            Clock::Manual(clock) => clock.advance(step),
            Clock::Real { .. } => tokio::time::sleep_until((self.start + self.at).into()).await,
        }
    }

    /// Where the timeline is.
    pub fn at(&self) -> Duration {
        self.at
    }

    /// On a real clock, how far the present is past where the timeline is; zero on a manual one.
    pub fn lateness(&self) -> Duration {
        match &self.harness.clock {
            Clock::Manual(_) => Duration::ZERO,
            Clock::Real { .. } => self.start.elapsed().saturating_sub(self.at),
        }
    }
}

/// Instantiates every conformance case as a `#[tokio::test]` for the harness `$harness`
/// (an expression of type [`Harness`], evaluated per test). With `sequential`, one test runs
/// every case in turn on one harness, evaluated once (for a store the test starts itself, such
/// as a cluster, stopped when the harness drops).
#[macro_export]
macro_rules! conformance_tests {
    ($harness:expr) => {
        $crate::conformance_tests!(@list parallel $harness);
    };
    (sequential $harness:expr) => {
        $crate::conformance_tests!(@list sequential $harness);
    };
    (@list $mode:ident $harness:expr) => {
        $crate::conformance_tests!(@$mode $harness;
            fresh_acquire_returns_a_fence_of_at_least_one,
            the_same_token_extends_with_the_same_fence,
            another_token_is_refused_while_held,
            a_queued_acquire_takes_renews_and_waits_its_turn,
            the_same_token_reacquires_after_expiry_with_a_new_fence,
            another_token_takes_over_after_expiry_with_a_greater_fence,
            release_answers_true_once_and_only_for_a_live_holder,
            release_after_expiry_is_false,
            locked_and_owned_follow_the_holder,
            fences_strictly_increase_across_release_and_expiry,
            a_lock_is_live_through_its_expiry_instant,
            a_leader_record_is_created_renewed_and_refused,
            a_leader_record_expires_at_renewed_plus_lease,
            a_takeover_counts_a_transition_and_a_release_deletes_the_record,
            leader_metadata_round_trips,
            schedule_claims_win_only_with_a_later_due,
            concurrent_acquires_have_one_winner,
            concurrent_claims_have_one_winner,
            random_sequences_match_the_store_model,
            queued_sequences_match_the_store_model,
        );
    };
    (@parallel $harness:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let harness: $crate::Harness = $harness;
                $crate::cases::$case(&harness).await;
            }
        )*
    };
    (@sequential $harness:expr; $($case:ident),* $(,)?) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn every_conformance_case_in_turn() {
            let harness: $crate::Harness = $harness;
            $(
                $crate::cases::$case(&harness).await;
            )*
        }
    };
}
