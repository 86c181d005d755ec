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
pub mod revoke;
pub mod rw;
pub mod sem;
pub mod shared_details;
pub mod tls;

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use tenure::backend::{LeaderElectionBackend, LockBackend, ReadWriteLockBackend, ScheduleBackend, SemaphoreBackend};
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
    /// Its read-write lock interface, if it serves read-write locks.
    pub rw: Option<Arc<dyn ReadWriteLockBackend>>,
    /// Its semaphore interface, if it serves semaphores.
    pub sem: Option<Arc<dyn SemaphoreBackend>>,
    /// How it numbers a name's holders.
    pub fences: Fences,
    /// What it needs alive while it is used (a server the test started), dropped with it.
    keep: Option<Arc<dyn Any + Send + Sync>>,
}

impl Store {
    /// A store that serves all three kinds, in every slot, with fences 1, 2, 3… per name.
    pub fn of<B>(backend: B) -> Self
    where
        B: LockBackend + LeaderElectionBackend + ScheduleBackend + Clone,
    {
        Self {
            rw: backend.read_write(),
            sem: backend.semaphore(),
            lock: Arc::new(backend.clone()),
            leader: Arc::new(backend.clone()),
            schedule: Arc::new(backend),
            fences: Fences::PerName,
            keep: None,
        }
    }

    /// The same store, whose fences only strictly increase ([`Fences::Increasing`]).
    #[must_use]
    pub fn increasing_fences(mut self) -> Self {
        self.fences = Fences::Increasing;
        self
    }

    /// The same store, keeping `alive` (a server the test started) until it is dropped.
    #[must_use]
    pub fn keeping(mut self, alive: Arc<dyn Any + Send + Sync>) -> Self {
        self.keep = Some(alive);
        self
    }
}

/// How a store numbers the holders of a name (spec §5.1 for the reference's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fences {
    /// grelmicro's counter per name: the first holder gets 1, each next one one more.
    PerName,
    /// Strictly increasing for each name but neither consecutive nor per name (etcd's create
    /// revisions count every write of the cluster): every guarantee a fencing token gives, none
    /// of the reference's exact numbers.
    Increasing,
}

impl Fences {
    /// Whether `fence` may be the first fence of a name.
    pub fn first(self, fence: u64) -> bool {
        match self {
            Self::PerName => fence == 1,
            Self::Increasing => fence >= 1,
        }
    }

    /// Whether `next` may be the fence of the holder that comes right after one holding `prev`.
    pub fn next_after(self, prev: u64, next: u64) -> bool {
        match self {
            Self::PerName => prev.checked_add(1) == Some(next),
            Self::Increasing => next > prev,
        }
    }
}

/// How a store keeps the leases it is asked for: exactly, or longer (never shorter: a holder's
/// belief must not outlive the store's lease).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Leases {
    /// A lease is held for a whole number of these, rounded up (zero: as asked).
    pub unit: Duration,
    /// And for at least this long.
    pub minimum: Duration,
    /// How long after its end an ended lease may still hold (etcd looks for ended leases every
    /// 500 ms and then deletes their keys through consensus).
    pub late: Duration,
}

impl Leases {
    /// A store that holds a lease exactly as long as asked (to its millisecond).
    pub const AS_ASKED: Self = Self { unit: Duration::ZERO, minimum: Duration::ZERO, late: Duration::ZERO };

    /// How long the store holds a lease asked for `asked`.
    pub fn held(&self, asked: Duration) -> Duration {
        let rounded = if self.unit.is_zero() {
            asked
        } else {
            let units = asked.as_nanos().div_ceil(self.unit.as_nanos());
            self.unit * u32::try_from(units).unwrap_or(u32::MAX)
        };
        rounded.max(self.minimum)
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
    /// How its stores keep leases.
    pub leases: Leases,
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
            Clock::Real { quantum } => {
                let lease = self.leases.held(quantum * 2);
                (lease, lease + self.leases.late + quantum * 2)
            }
        }
    }

    /// A lease of about `asked` that the store holds exactly as long as the model does.
    pub fn lease(&self, asked: Duration) -> Duration {
        self.leases.held(asked)
    }

    /// How many random sequences a case runs: `real` on a real clock whose quantum is under a
    /// second, 2 on a slower one (each sequence then takes about a minute), `manual` on a
    /// manual clock.
    pub fn sequences(&self, manual: u64, real: u64) -> u64 {
        match self.clock {
            Clock::Manual(_) => manual,
            Clock::Real { quantum } if quantum >= Duration::from_secs(1) => real.min(2),
            Clock::Real { .. } => real,
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
            a_term_s_fence_rises_with_every_take_and_survives_a_release,
            leader_metadata_round_trips,
            schedule_claims_win_only_with_a_later_due,
            concurrent_acquires_have_one_winner,
            concurrent_claims_have_one_winner,
            random_sequences_match_the_store_model,
            queued_sequences_match_the_store_model,
            a_revoked_lease_is_lost_fenced_out_and_held_until_it_would_have_ended,
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

/// The outputs of store calls run at once (each a task of its own), in their order.
pub(crate) async fn join_all<T: Send + 'static>(
    calls: impl Iterator<Item = tenure::backend::BackendFuture<'static, T>>,
) -> Vec<Result<T, tenure_core::BackendError>> {
    let tasks: Vec<_> = calls.map(tokio::spawn).collect();
    let mut outputs = Vec::with_capacity(tasks.len());
    for task in tasks {
        outputs.push(task.await.unwrap_or_else(|e| panic!("a store call's task failed: {e}")));
    }
    outputs
}
