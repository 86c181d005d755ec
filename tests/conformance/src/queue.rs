//! Shared checks of a store that keeps its waiters in a queue and hands the lock over itself
//! ([`tenure::backend::LockBackend::turn`]: Redis, PostgreSQL). Each store's test opens its own
//! backends (one per "process") and says how to see that waiters are queued.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tenure_tokio::{Lock, Tokio};

use crate::Store;

/// Far longer than any check: only a hand-off (never a poll) can let a waiter in.
pub const NEVER: Duration = Duration::from_secs(30);

/// A lock on `name` in `store` with a 10 s lease and `retry_interval`.
pub fn lock(store: &Store, name: &str, retry_interval: Duration) -> Lock {
    Lock::builder(name, Tokio::current())
        .shared_backend(store.lock.clone())
        .lease_duration(Duration::from_secs(10))
        .retry_interval(retry_interval)
        .env_load(false)
        .build()
        .expect("lock")
}

/// A holder on one backend, then four waiters on a backend each, queued one after another
/// (`queued(n)` completes once `n` wait on lock `q`): after the holder's release they get the
/// lock in the order they queued, each with the next fence, long before any of them would poll.
pub async fn waiters_get_the_lock_in_the_order_they_queued<O, Q>(open: impl Fn() -> O, queued: impl Fn(usize) -> Q)
where
    O: Future<Output = Store>,
    Q: Future<Output = ()>,
{
    let first = lock(&open().await, "q", NEVER).acquire().await.expect("first holder");
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for who in 0..4u64 {
        let waiter = lock(&open().await, "q", NEVER);
        let order = order.clone();
        tasks.push(tokio::spawn(async move {
            let guard = waiter.acquire().await.expect("waiter");
            order.lock().unwrap_or_else(PoisonError::into_inner).push((who, guard.fencing_token().get()));
            tokio::time::sleep(Duration::from_millis(20)).await;
            guard.release().await.expect("release");
        }));
        queued(usize::try_from(who).expect("small") + 1).await;
    }
    let start = Instant::now();
    first.release().await.expect("release");
    for task in tasks {
        task.await.expect("waiter task");
    }
    let elapsed = start.elapsed();
    let order = order.lock().unwrap_or_else(PoisonError::into_inner).clone();
    let first_fence = order[0].1;
    let expected: Vec<(u64, u64)> = (0..4).map(|who| (who, first_fence + who)).collect();
    assert_eq!(order, expected, "turns in queue order, each the next fence");
    assert!(elapsed < NEVER / 2, "handed over, not polled: {elapsed:?}");
}

/// Completes once `count` (how many wait on the lock, read from the store) reaches `n`; panics
/// after 10 s (a waiter's first attempt may come seconds late on a loaded machine: a clean-clone
/// run beside other work failed with 2 s).
pub async fn until_queued(n: usize, mut count: impl FnMut() -> usize) {
    for _ in 0..2000 {
        if count() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("{n} waiters never queued");
}

/// A task that acquires `lock` (waiting its turn), holds it until `release` fires (or is
/// dropped), releases it, and ends with the fence it held. The test says when: a hold of a
/// fixed time could end, on a loaded machine, before the test has looked at the holder.
pub fn take_and_hold(lock: Lock, release: tokio::sync::oneshot::Receiver<()>) -> tokio::task::JoinHandle<u64> {
    tokio::spawn(async move {
        let guard = lock.acquire().await.expect("waiter");
        let fence = guard.fencing_token().get();
        let _ = release.await;
        guard.release().await.expect("release");
        fence
    })
}

/// A waiter that took the lock with a plain acquire while its place was still queued (after the
/// holder's lease lapsed, as grelmicro's acquire or `acquire_nowait` may) leaves the queue when
/// it releases: the lock goes to the waiter behind it, not back to itself.
pub async fn a_holder_that_took_the_lock_plainly_leaves_the_queue_when_it_releases(store: &Store) {
    use tenure::backend::LockCalls as _;
    let name = "lock:plain";
    let queued = |token: &str| store.lock.acquire_queued(name, token, NEVER, NEVER);
    assert!(store.lock.acquire(name, "first", Duration::from_millis(100)).await.expect("acquire").is_some());
    assert_eq!(queued("early").await.expect("queued"), None, "queued behind the holder");
    tokio::time::sleep(Duration::from_millis(150)).await; // the holder's lease lapsed
    assert!(store.lock.acquire(name, "early", NEVER).await.expect("plain acquire").is_some());
    assert_eq!(queued("late").await.expect("queued"), None, "queued behind the new holder");
    assert!(store.lock.release(name, "early").await.expect("release"));
    assert!(store.lock.owned(name, "late").await.expect("owned"), "handed to the waiter behind");
    assert!(!store.lock.owned(name, "early").await.expect("owned"));
}

/// Waiters cancelled at every point of their wait — between attempts, and with an attempt in
/// flight that the store answers after the cancel — leave no place in the queue: the holder's
/// release hands the lock to nobody, and it is free at once, not held for a lease by a waiter
/// that left (found from Kotlin, where a cancelled coroutine drops the acquire).
pub async fn cancelled_waiters_leave_no_place_the_lock_is_handed_to(store: &Store) {
    for round in 0..30u64 {
        let name = format!("cancelled-{round}");
        let holder = lock(store, &name, NEVER).acquire().await.expect("holder");
        // Attempts every millisecond or so: a cancel often lands while one is in flight.
        let waiter = lock(store, &name, Duration::from_millis(1));
        let waiting = tokio::spawn(async move { waiter.acquire().await.map(drop) });
        tokio::time::sleep(Duration::from_micros(3_000 + 397 * round)).await;
        waiting.abort();
        assert!(waiting.await.is_err_and(|e| e.is_cancelled()), "round {round}: the waiter was not cancelled");
        holder.release().await.expect("release");
        let checker = lock(store, &name, NEVER);
        let start = Instant::now();
        while checker.locked().await.expect("locked") {
            assert!(start.elapsed() < Duration::from_secs(2), "round {round}: handed to a waiter that left");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}
