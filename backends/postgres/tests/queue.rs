//! Queued acquires on PostgreSQL: waiters of several processes (a backend each) get the lock in
//! the order they queued, handed over inside the release's transaction and notified, long before
//! they would poll; a waiter that vanished is skipped once its place lapses, and one whose place
//! lapsed asks again at the back; grelmicro's statements beside the queue never find a
//! handed-over lock free, and after a grelmicro release the queue moves on.

mod common;

use std::time::{Duration, Instant};

use tenure::backend::{LockCalls, LockOperations};
use tenure_conformance::Store;
use tenure_conformance::queue::{self, NEVER};

use common::{fresh_tables, open_at, psql, url};

const LEASE: Duration = Duration::from_secs(10);

/// The lock row's `<fence>:<token>`, or `free`.
fn holder(stem: &str) -> String {
    let row = psql(
        &url(),
        &format!("SELECT fence || ':' || token FROM {stem}_locks WHERE name = 'lock:q' AND expire_at >= NOW()"),
    );
    if row.is_empty() { "free".into() } else { row }
}

/// Waits until `n` waiters are queued on `lock:q`.
async fn queued(stem: &str, n: usize) {
    let sql = format!("SELECT count(*) FROM {stem}_locks_queue WHERE name = 'lock:q'");
    queue::until_queued(n, || psql(&url(), &sql).parse().expect("count")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_get_the_lock_in_the_order_they_queued_handed_over_at_once() {
    let stem = fresh_tables();
    let open = || async { Store::of(open_at(&url(), &stem).await) };
    queue::waiters_get_the_lock_in_the_order_they_queued(open, |n| queued(&stem, n)).await;
    assert_eq!(psql(&url(), &format!("SELECT count(*) FROM {stem}_locks_queue")), "0", "the queue is empty");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_that_vanished_is_skipped_and_one_that_lapsed_asks_again_at_the_back() {
    let stem = fresh_tables();
    let store = open_at(&url(), &stem).await;
    assert!(LockCalls::acquire(&store, "lock:q", "holder", LEASE).await.expect("acquire").is_some());
    let queue = |token, wait| LockOperations::acquire_queued(&store, "lock:q", token, LEASE, wait);
    // "gone" queues with a 100 ms place and is never heard of again; "early" too, but asks again.
    assert_eq!(queue("gone", Duration::from_millis(100)).await.expect("queued"), None);
    assert_eq!(queue("early", Duration::from_millis(100)).await.expect("queued"), None);
    assert_eq!(queue("late", NEVER).await.expect("queued"), None);
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(queue("early", NEVER).await.expect("queued"), None);
    assert!(LockCalls::release(&store, "lock:q", "holder").await.expect("release"));
    assert_eq!(holder(&stem), "2:late", "handed to the oldest waiter whose place is live");
    assert!(LockCalls::release(&store, "lock:q", "late").await.expect("release"));
    assert_eq!(holder(&stem), "3:early");
    assert!(LockCalls::release(&store, "lock:q", "early").await.expect("release"));
    assert_eq!(holder(&stem), "free", "nobody left to hand over to");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grelmicro_never_finds_a_handed_over_lock_free_and_its_release_lets_the_queue_move() {
    let stem = fresh_tables();
    let store = open_at(&url(), &stem).await;
    let acquire = store.lock_statements().0.to_owned();
    // grelmicro's statements: the plain acquire, and a release that hands nothing over.
    let grelmicro_release = format!(
        "UPDATE {stem}_locks SET token = NULL, expire_at = NULL \
         WHERE name = 'lock:q' AND token = 'grelmicro-1' AND expire_at >= NOW()"
    );
    assert!(LockCalls::acquire(&store, "lock:q", "grelmicro-1", LEASE).await.expect("acquire").is_some());
    let waiter = queue::lock(&Store::of(open_at(&url(), &stem).await), "q", Duration::from_millis(50));
    let (release, hold) = tokio::sync::oneshot::channel();
    let task = queue::take_and_hold(waiter, hold);
    queued(&stem, 1).await;
    psql(&url(), &grelmicro_release);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !holder(&stem).starts_with("2:") {
        assert!(Instant::now() < deadline, "the queue's head never took the lock");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Held by the head: grelmicro's acquire is refused.
    // (grelmicro's decision is the statement's; it keeps no holder details: $4 NULL)
    let refused = acquire.replace("$1", "'lock:q'").replace("$2", "'grelmicro-2'").replace("$3::bigint", "10000000");
    let refused = refused.replace("$4::text", "NULL::text");
    assert_eq!(psql(&url(), &refused), "", "grelmicro's acquire finds the lock held");
    let _ = release.send(());
    assert_eq!(task.await.expect("task"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_that_took_the_lock_plainly_leaves_the_queue_when_it_releases() {
    let store = Store::of(open_at(&url(), &fresh_tables()).await);
    queue::a_holder_that_took_the_lock_plainly_leaves_the_queue_when_it_releases(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_waiters_leave_no_place_the_lock_is_handed_to() {
    let store = Store::of(open_at(&url(), &fresh_tables()).await);
    queue::cancelled_waiters_leave_no_place_the_lock_is_handed_to(&store).await;
}
