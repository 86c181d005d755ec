//! # tenure-sim
//!
//! Deterministic simulation of Tenure's core. A seed fixes a fleet of workers — each running
//! `LockMachine`s, a `TaskLockMachine` and an `ElectionMachine` from `tenure-core` for an
//! application that writes under fencing tokens, enters and exits scheduled jobs, starts and
//! stops elections — and the faults they meet: message delay, reordering, loss and duplication,
//! replies lost after the store applied the request, symmetric and one-way partitions, clock
//! offsets, drift, forward jumps and (out of bounds) stalls, process pauses longer than a lease,
//! worker crashes and restarts, store restarts. Everything runs on one thread in virtual time
//! against the core's `StoreModel`; all randomness comes from the seed, split into named streams,
//! so one number replays a run event for event.
//!
//! After every event the checker verifies: fencing tokens issued per name strictly increase; a
//! fenced resource sees one holder per token value; while clocks stay inside the bounds, no two
//! machines believe they hold the same lock or lead the same election at one true instant and
//! task bodies start at least one min-hold window apart; no task body starts on a lease that has
//! run out; a holder sends a renewal only while its application asked for one; nothing panics.
//! On the read-write lock most seeds run: never a writer believing beside a reader or another
//! writer; write grants' fencing tokens strictly increase; a reader is granted the last write's
//! generation; a write grant is poisoned iff the writer before it expired without releasing (or
//! downgrading). After the faults stop, every lock is taken, a task body runs, a leader is
//! elected and a writer takes the read-write lock within a bound computed from the seed's
//! timings.
//!
//! The `driver` profile runs the `tenure` driver itself — foreground and background drives,
//! hand-offs, keep-alives — through its public API on a simulated runtime and store, under the
//! same kind of checks.
//!
//! `tenure-sim --help` lists the command line; `README.md` in this folder describes the model.

// The simulator's arithmetic on times and rates is over bounded, non-negative values.
#![allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss)]

mod check;
mod client;
mod clock;
mod driver;
pub mod profile;
pub mod rand;
mod sim;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize};

pub use check::Coverage;
pub use profile::Profile;
pub use sim::{Failure, Outcome, run_seed};
pub use tenure_core::bugs::Bugs;

/// One seed, with a panic anywhere in it turned into a failure.
pub fn run_guarded(seed: u64, profile: Profile, bugs: Bugs, print: bool) -> Result<Outcome, Failure> {
    catch_unwind(AssertUnwindSafe(|| run_seed(seed, profile, bugs, print))).unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("(no message)");
        Err(Failure { at: 0, what: format!("panic: {message}") })
    })
}

/// The command that replays one run.
pub fn replay_line(seed: u64, profile: Profile, bugs: Bugs) -> String {
    let bugs = if bugs.is_empty() { String::new() } else { format!(" --inject-bug {bugs}") };
    format!("cargo run -p tenure-sim --profile sim -- --seed {seed} --profile {profile}{bugs}")
}

/// The result of one seed in a batch.
#[derive(Debug)]
pub struct SeedRun {
    /// The seed.
    pub seed: u64,
    /// Its profile.
    pub profile: Profile,
    /// What happened.
    pub result: Result<Outcome, Failure>,
}

/// Runs `seeds` (in that order of preference) on `threads` threads, replaying every seed that
/// `replay(seed)` selects a second time to compare traces. Stops handing out seeds after the
/// first failure; returns the runs made, in seed order.
pub fn run_batch(
    seeds: &[(u64, Profile)],
    bugs: Bugs,
    threads: usize,
    replay: impl Fn(usize) -> bool + Sync,
) -> Vec<SeedRun> {
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let runs = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| {
                loop {
                    if failed.load(std::sync::atomic::Ordering::Relaxed) {
                        break;
                    }
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&(seed, profile)) = seeds.get(i) else { break };
                    let mut result = run_guarded(seed, profile, bugs, false);
                    if let Ok(first) = &result
                        && replay(i)
                    {
                        result = match run_guarded(seed, profile, bugs, false) {
                            Ok(second) if second.trace != first.trace => Err(Failure {
                                at: 0,
                                what: format!(
                                    "nondeterministic: the same seed gave traces {:016x} and {:016x}",
                                    first.trace, second.trace
                                ),
                            }),
                            other => other,
                        };
                    }
                    if result.is_err() {
                        failed.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                    runs.lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push((i, SeedRun { seed, profile, result }));
                }
            });
        }
    });
    let mut runs = runs.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    runs.sort_by_key(|(i, _)| *i);
    runs.into_iter().map(|(_, run)| run).collect()
}

/// The coverage counters a batch of `profile` must have made non-zero, by name.
pub fn required_coverage(profile: Profile, coverage: &Coverage) -> Vec<(&'static str, u64)> {
    use Profile::{Mixed, Network, Pauses, UnboundedClocks};
    if profile == Profile::Driver {
        return driver::required(coverage);
    }
    let mut required = vec![
        ("contention", coverage.contention),
        ("leadership changed hands", coverage.leader_changes),
        ("a lock handed over by the store", coverage.handed_over),
        ("a read of the read-write lock", coverage.rw_reads),
        ("a write of the read-write lock", coverage.rw_writes),
        ("a writer downgraded", coverage.downgrades),
        ("a semaphore permit granted", coverage.permits),
        ("every semaphore permit held at once", coverage.permits_full),
    ];
    if matches!(profile, Mixed | Network | Pauses | UnboundedClocks) {
        required.push(("stale token rejected", coverage.stale_rejected));
    }
    if matches!(profile, Mixed | Pauses | UnboundedClocks) {
        required.push(("lease expired under a paused holder", coverage.expired_in_pause));
        required.push(("a write grant poisoned by a writer that expired", coverage.poisoned));
    }
    required
}
