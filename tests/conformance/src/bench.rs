//! Lock and election timings on any store, for the backends' benchmarks (which print them beside
//! the store's own floor): medians of batches, rates over a fixed run. Asserts nothing.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use tenure_tokio::{LeaderElection, Lock, Tokio, WorkerId};

use crate::Store;

/// Cycles per batch.
pub const BATCH: u32 = 200;
/// Batches measured (after one to warm up).
pub const BATCHES: usize = 11;
/// Tasks in the contention runs.
pub const TASKS: usize = 8;
/// How long a hand-off's waiter waits, refused, before the release it measures.
pub const HANDOFF_IDLE: Duration = Duration::from_millis(2);
/// How long a contention run lasts.
pub const RUN: Duration = Duration::from_secs(2);

/// The median of `samples`.
pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// `d` in microseconds.
pub fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// The median time per call of `step`, over [`BATCHES`] batches of [`BATCH`] after a warm-up.
pub async fn per_call<F: Future<Output = ()>>(mut step: impl FnMut() -> F) -> Duration {
    let mut samples = Vec::new();
    for batch in 0..=BATCHES {
        let start = Instant::now();
        for _ in 0..BATCH {
            step().await;
        }
        if batch > 0 {
            samples.push(start.elapsed() / BATCH);
        }
    }
    median(samples)
}

fn lock(store: &Store, name: &str, retry_interval: Option<Duration>) -> Lock {
    let builder = Lock::builder(name, Tokio::current()).shared_backend(store.lock.clone()).env_load(false);
    let builder = match retry_interval {
        Some(interval) => builder.retry_interval(interval),
        None => builder,
    };
    builder.build().expect("lock")
}

/// One task: acquire + release, per cycle.
pub async fn one_task(store: &Store) -> Duration {
    per_call_each(&mut [one_task_step(store)]).await[0]
}

/// One call of something measured beside others ([`per_call_each`]).
pub type Step<'a> = Box<dyn FnMut() -> Pin<Box<dyn Future<Output = ()> + 'a>> + 'a>;

/// The median time per call of each step, their batches taking turns (as in [`per_call`]), so
/// that a slow or fast spell of the machine — on a virtual machine, whether its CPUs were let
/// idle — hits each alike and their ratios hold.
pub async fn per_call_each(steps: &mut [Step<'_>]) -> Vec<Duration> {
    let mut samples = vec![Vec::new(); steps.len()];
    for batch in 0..=BATCHES {
        for (step, kept) in steps.iter_mut().zip(&mut samples) {
            let start = Instant::now();
            for _ in 0..BATCH {
                step().await;
            }
            if batch > 0 {
                kept.push(start.elapsed() / BATCH);
            }
        }
    }
    samples.into_iter().map(median).collect()
}

/// [`one_task`]'s cycle as a step for [`per_call_each`].
pub fn one_task_step<'a>(store: &Store) -> Step<'a> {
    let lock = lock(store, "one", None);
    Box::new(move || {
        let lock = lock.clone();
        Box::pin(async move {
            let guard = lock.acquire().await.expect("acquire");
            guard.release().await.expect("release");
        })
    })
}

/// What [`many_tasks`] measured.
#[derive(Clone, Copy, Debug)]
pub struct Contention {
    /// Cycles per second, all tasks together.
    pub rate: f64,
    /// Cycles, all tasks together.
    pub cycles: u64,
    /// Jain's fairness index over the tasks' cycle counts: 1 when every task had as many turns,
    /// `1 / TASKS` when one task had them all.
    pub fairness: f64,
}

/// Jain's fairness index of `counts`: `(Σx)² / (n·Σx²)`.
#[allow(clippy::cast_precision_loss)]
pub fn jain(counts: &[u64]) -> f64 {
    let total: f64 = counts.iter().map(|&c| c as f64).sum();
    let squares: f64 = counts.iter().map(|&c| (c as f64) * (c as f64)).sum();
    if squares == 0.0 { 0.0 } else { total * total / (counts.len() as f64 * squares) }
}

/// [`TASKS`] tasks, each acquiring and releasing in a loop for [`RUN`], on one name or on one
/// name each.
pub async fn many_tasks(store: &Store, names: usize) -> Contention {
    let locks: Vec<Lock> = (0..names).map(|i| lock(store, &format!("many-{names}-{i}"), None)).collect();
    let start = Instant::now();
    let tasks: Vec<_> = (0..TASKS)
        .map(|i| {
            let lock = locks[i % names].clone();
            tokio::spawn(async move {
                let mut cycles = 0u64;
                while start.elapsed() < RUN {
                    let guard = lock.acquire().await.expect("acquire");
                    guard.release().await.expect("release");
                    cycles += 1;
                }
                cycles
            })
        })
        .collect();
    let mut counts = Vec::new();
    for task in tasks {
        counts.push(task.await.expect("task"));
    }
    let cycles = counts.iter().sum();
    #[allow(clippy::cast_precision_loss)]
    let rate = cycles as f64 / start.elapsed().as_secs_f64();
    Contention { rate, cycles, fairness: jain(&counts) }
}

/// From the start of a release to the grant of the waiter it wakes, on `other` (another
/// connection; a retry interval far longer than the run, so only the push hands over).
pub async fn handoff(store: &Store, other: &Store) -> Duration {
    let retry = Some(Duration::from_secs(5));
    let (holder, waiter) = (lock(store, "handoff", retry), lock(other, "handoff", retry));
    let mut samples = Vec::new();
    for _ in 0..200 {
        let guard = holder.acquire().await.expect("holder");
        let waiting = waiter.clone();
        let task = tokio::spawn(async move {
            let guard = waiting.acquire().await.expect("waiter");
            (Instant::now(), guard)
        });
        tokio::time::sleep(HANDOFF_IDLE).await; // the waiter's attempt was refused
        let released = Instant::now();
        guard.release().await.expect("release");
        let (granted, guard) = task.await.expect("waiter task");
        samples.push(granted.saturating_duration_since(released));
        guard.release().await.expect("release");
    }
    median(samples)
}

/// From the start of a leader's clean stop to the moment a follower (on `other`) leads.
pub async fn leader_handover(store: &Store, other: &Store) -> Duration {
    let election = |store: &Store, worker: &str| {
        LeaderElection::builder("handover", Tokio::current())
            .shared_backend(store.leader.clone())
            .worker(WorkerId::new(worker).expect("worker"))
            .retry_interval(Duration::from_millis(200))
            .env_load(false)
            .build()
            .expect("election")
    };
    let mut samples = Vec::new();
    for round in 0..21 {
        let leader = election(store, &format!("a{round}"));
        let follower = election(other, &format!("b{round}"));
        leader.start();
        leader.wait_for_leader().await;
        follower.start();
        tokio::time::sleep(Duration::from_millis(250)).await; // the follower was refused
        let stopping = Instant::now();
        leader.stop().await;
        follower.wait_for_leader().await;
        samples.push(stopping.elapsed());
        follower.stop().await;
    }
    median(samples)
}
