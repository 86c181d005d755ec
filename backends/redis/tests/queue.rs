//! Queued acquires on Redis: waiters of several processes (a backend each) get the lock in the
//! order they queued, handed over by the release script and pushed, long before they would poll;
//! a waiter that vanished is skipped once its place lapses; grelmicro's calls beside the queue
//! never find a handed-over lock free, and after a grelmicro release the queue moves on.

mod common;

use std::time::{Duration, Instant};

use redis::Commands;
use tenure::backend::{LockCalls, LockOperations};
use tenure_conformance::Store;
use tenure_conformance::queue::{self, NEVER};

use common::{fresh_prefix, open_at, raw, url};

const LEASE: Duration = Duration::from_secs(10);

/// grelmicro 0.44's Redis lock release: deletes the key if the token holds it.
const GRELMICRO_RELEASE: &str = "local stored = redis.call('get', KEYS[1]) \
    if stored and string.sub(stored, string.find(stored, ':', 1, true) + 1) == ARGV[1] then \
        return redis.call('del', KEYS[1]) end return 0";

/// Waits until `n` waiters are queued on `lock:q`.
async fn queued(prefix: &str, n: usize) {
    let mut db = raw(&url());
    queue::until_queued(n, || db.llen(format!("{prefix}queue:lock:q")).expect("llen")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_get_the_lock_in_the_order_they_queued_handed_over_at_once() {
    let prefix = fresh_prefix();
    let open = || async { Store::of(open_at(&url(), &prefix).await) };
    queue::waiters_get_the_lock_in_the_order_they_queued(open, |n| queued(&prefix, n)).await;
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
    let waiter = queue::lock(&Store::of(open_at(&url(), &prefix).await), "q", NEVER);
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
    // grelmicro's acquire script is Tenure's plain one (same keys, same answers); its release
    // (below) frees the key and hands nothing over.
    assert!(LockCalls::acquire(&store, "lock:q", "grelmicro-1", LEASE).await.expect("acquire").is_some());
    let waiter = queue::lock(&Store::of(open_at(&url(), &prefix).await), "q", Duration::from_millis(50));
    let (release, hold) = tokio::sync::oneshot::channel();
    let task = queue::take_and_hold(waiter, hold);
    queued(&prefix, 1).await;
    // grelmicro's release hands nothing over; the queue's head takes the lock at its next poll.
    let mut db = raw(&url());
    let released: i64 = redis::cmd("EVAL")
        .arg(GRELMICRO_RELEASE)
        .arg(1)
        .arg(format!("{prefix}lock:q"))
        .arg("grelmicro-1")
        .query(&mut db)
        .expect("grelmicro's release");
    assert_eq!(released, 1);
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
    let _ = release.send(());
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_queue_expires_once_its_longest_place_has_lapsed() {
    let prefix = fresh_prefix();
    let store = open_at(&url(), &prefix).await;
    let mut db = raw(&url());
    let (list, places) = (format!("{prefix}queue:lock:q"), format!("{prefix}queue-places:lock:q"));
    let ttls =
        |db: &mut redis::Connection| -> (i64, i64) { (db.pttl(&list).expect("pttl"), db.pttl(&places).expect("pttl")) };
    assert!(LockCalls::acquire(&store, "lock:q", "holder", LEASE).await.expect("acquire").is_some());
    let queue = |token, wait| LockOperations::acquire_queued(&store, "lock:q", token, LEASE, wait);
    assert_eq!(queue("short", Duration::from_millis(300)).await.expect("queued"), None);
    let (list_ttl, places_ttl) = ttls(&mut db);
    assert!((1..=300).contains(&list_ttl) && (1..=300).contains(&places_ttl), "{list_ttl} {places_ttl}");
    // A longer place stretches both keys' expiry; a shorter one never shortens it.
    assert_eq!(queue("long", Duration::from_millis(1_500)).await.expect("queued"), None);
    assert_eq!(queue("short", Duration::from_millis(300)).await.expect("queued"), None);
    let (list_ttl, places_ttl) = ttls(&mut db);
    assert!((1_000..=1_500).contains(&list_ttl) && (1_000..=1_500).contains(&places_ttl), "{list_ttl} {places_ttl}");
    // Nobody asks again and nobody releases: the queue vanishes on its own.
    tokio::time::sleep(Duration::from_millis(1_600)).await;
    assert_eq!(ttls(&mut db), (-2, -2), "both keys expired");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_that_took_the_lock_plainly_leaves_the_queue_when_it_releases() {
    let store = Store::of(open_at(&url(), &fresh_prefix()).await);
    queue::a_holder_that_took_the_lock_plainly_leaves_the_queue_when_it_releases(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_waiters_leave_no_place_the_lock_is_handed_to() {
    let store = Store::of(open_at(&url(), &fresh_prefix()).await);
    queue::cancelled_waiters_leave_no_place_the_lock_is_handed_to(&store).await;
}
