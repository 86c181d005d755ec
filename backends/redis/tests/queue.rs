//! Queued acquires on Redis: waiters of several processes (a backend each) get the lock in the
//! order they queued, handed over by the release script and pushed, long before they would poll;
//! a waiter that vanished is skipped once its place lapses; grelmicro's calls beside the queue
//! never find a handed-over lock free, and after a grelmicro release the queue moves on.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::Commands;
use tenure::backend::{LockCalls, LockOperations};
use tenure_redis::RedisBackend;
use tokio::sync::Mutex;

use common::{fresh_prefix, open_at, raw, url};

const LEASE: Duration = Duration::from_secs(10);
/// Far longer than any test: only a hand-off (never a poll) can let a waiter in.
const NEVER: Duration = Duration::from_secs(30);

fn lock(store: &RedisBackend, retry: Duration) -> tenure_tokio::Lock {
    tenure_tokio::Lock::builder("q", tenure_tokio::Tokio::current())
        .backend(store.clone())
        .lease_duration(LEASE)
        .retry_interval(retry)
        .env_load(false)
        .build()
        .expect("lock")
}

/// Waits until `n` waiters are queued on `lock:q`.
async fn queued(prefix: &str, n: usize) {
    let mut db = raw(&url());
    for _ in 0..400 {
        let len: usize = db.llen(format!("{prefix}queue:lock:q")).expect("llen");
        if len >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("{n} waiters never queued");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_get_the_lock_in_the_order_they_queued_handed_over_at_once() {
    let prefix = fresh_prefix();
    let holder = lock(&open_at(&url(), &prefix).await, NEVER);
    let first = holder.acquire().await.expect("first holder");
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for who in 0..4 {
        let waiter = lock(&open_at(&url(), &prefix).await, NEVER);
        let order = order.clone();
        tasks.push(tokio::spawn(async move {
            let guard = waiter.acquire().await.expect("waiter");
            order.lock().await.push((who, guard.fencing_token().get()));
            tokio::time::sleep(Duration::from_millis(20)).await;
            guard.release().await.expect("release");
        }));
        queued(&prefix, who + 1).await;
    }
    let start = Instant::now();
    first.release().await.expect("release");
    for task in tasks {
        task.await.expect("waiter task");
    }
    let elapsed = start.elapsed();
    let order = order.lock().await.clone();
    let first_fence = order[0].1;
    let expected: Vec<(usize, u64)> = (0..4).map(|who| (who, first_fence + who as u64)).collect();
    assert_eq!(order, expected, "turns in queue order, each the next fence");
    assert!(elapsed < NEVER / 2, "handed over, not polled: {elapsed:?}");
    assert!(!raw(&url()).exists::<_, bool>(format!("{prefix}queue:lock:q")).expect("exists"), "the queue is gone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_that_vanished_is_skipped_once_its_place_lapses() {
    let prefix = fresh_prefix();
    let store = open_at(&url(), &prefix).await;
    assert!(LockCalls::acquire(&store, "lock:q", "holder", LEASE).await.expect("acquire").is_some());
    // A waiter queues with a 100 ms place, and is never heard of again.
    let gone = LockOperations::acquire_queued(&store, "lock:q", "gone", LEASE, Duration::from_millis(100)).await;
    assert_eq!(gone.expect("queued"), None);
    let waiter = lock(&open_at(&url(), &prefix).await, NEVER);
    let task = tokio::spawn(async move { waiter.acquire().await.expect("waiter").fencing_token().get() });
    queued(&prefix, 2).await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(LockCalls::release(&store, "lock:q", "holder").await.expect("release"));
    let fence = tokio::time::timeout(NEVER / 2, task).await.expect("handed over").expect("task");
    // Fence 2: the lock went straight to the live waiter (handed to "gone", it would have
    // waited out that lease, and got fence 3).
    assert_eq!(fence, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grelmicro_never_finds_a_handed_over_lock_free_and_its_release_lets_the_queue_move() {
    let prefix = fresh_prefix();
    let store = open_at(&url(), &prefix).await;
    // grelmicro's acquire and release scripts are Tenure's plain ones (same keys, same answers).
    assert!(LockCalls::acquire(&store, "lock:q", "grelmicro-1", LEASE).await.expect("acquire").is_some());
    let waiter = lock(&open_at(&url(), &prefix).await, Duration::from_millis(50));
    let task = tokio::spawn(async move {
        let guard = waiter.acquire().await.expect("waiter");
        let fence = guard.fencing_token().get();
        tokio::time::sleep(Duration::from_millis(300)).await;
        guard.release().await.expect("release");
        fence
    });
    queued(&prefix, 1).await;
    // grelmicro's release hands nothing over; the queue's head takes the lock at its next poll.
    assert!(LockCalls::release(&store, "lock:q", "grelmicro-1").await.expect("release"));
    let mut db = raw(&url());
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let value: Option<String> = db.get(format!("{prefix}lock:q")).expect("get");
        if value.is_some_and(|v| !v.contains("grelmicro")) {
            break;
        }
        assert!(Instant::now() < deadline, "the queue's head never took the lock");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Held by the head: grelmicro's acquire is refused.
    assert_eq!(LockCalls::acquire(&store, "lock:q", "grelmicro-2", LEASE).await.expect("acquire"), None);
    assert_eq!(task.await.expect("task"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_place_lapsed_asks_again_behind_those_that_kept_theirs() {
    let prefix = fresh_prefix();
    let store = open_at(&url(), &prefix).await;
    let holder = |db: &mut redis::Connection| db.get::<_, Option<String>>(format!("{prefix}lock:q")).expect("get");
    let mut db = raw(&url());
    assert!(LockCalls::acquire(&store, "lock:q", "holder", LEASE).await.expect("acquire").is_some());
    let queue = |token, wait| LockOperations::acquire_queued(&store, "lock:q", token, LEASE, wait);
    assert_eq!(queue("early", Duration::from_millis(100)).await.expect("queued"), None);
    assert_eq!(queue("late", NEVER).await.expect("queued"), None);
    tokio::time::sleep(Duration::from_millis(150)).await;
    // "early" lapsed at the head; asking again puts it behind "late".
    assert_eq!(queue("early", NEVER).await.expect("queued"), None);
    assert!(LockCalls::release(&store, "lock:q", "holder").await.expect("release"));
    assert_eq!(holder(&mut db).as_deref(), Some("2:late"), "handed to the waiter that kept its place");
    assert!(LockCalls::release(&store, "lock:q", "late").await.expect("release"));
    assert_eq!(holder(&mut db).as_deref(), Some("3:early"));
    let queue_len: usize = db.llen(format!("{prefix}queue:lock:q")).expect("llen");
    let places: usize = db.hlen(format!("{prefix}queue-places:lock:q")).expect("hlen");
    assert_eq!((queue_len, places), (0, 0), "nobody left queued");
}
