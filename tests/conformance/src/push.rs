//! Cases for a store that pushes releases (DESIGN §4.5), written once: each waiter retries
//! only once a minute, so past its first attempt only a pushed wake-up brings it back within a
//! test's patience, and a lost wake-up fails the case by its acquire timeout.
//!
//! Two [`Store`]s opened separately on one server stand for two processes: a push between them
//! crosses the server.

use std::time::Duration;

use tenure::{Lock, Runtime, WorkerId};
use tenure_tokio::Tokio;

use crate::Store;
use tenure::backend::LockCalls as _;

/// A lock on `store` named `name` that retries only once a minute.
pub fn patient_lock<R: Runtime>(store: &Store, name: &str, runtime: R) -> Lock<R> {
    Lock::builder(name, runtime)
        .shared_backend(store.lock.clone())
        .retry_interval(Duration::from_secs(60))
        .env_load(false)
        .build()
        .expect("a lock")
}

/// `first` holds a fresh lock while `second` waits; the release wakes `second`, which gets the
/// next fence. Runs on `runtime` (any of them) without spawning.
pub async fn handoff<R: Runtime>(first: &Store, second: &Store, runtime: R) {
    let holder = patient_lock(first, "handoff", runtime.clone());
    let waiter = patient_lock(second, "handoff", runtime.clone());
    let held = holder.acquire().await.expect("first");
    let fence = held.fencing_token().get();
    let waiting = async { waiter.acquire_timeout(Duration::from_secs(5)).await.map(|g| g.fencing_token().get()) };
    let releasing = async {
        // The waiter makes its failing attempt meanwhile.
        runtime.sleep_until(runtime.now().saturating_add(Duration::from_millis(200))).await;
        held.release().await.expect("release");
    };
    let (next, ()) = futures_lite::future::zip(waiting, releasing).await;
    let next = next.expect("the waiter was not woken");
    assert!(second.fences.next_after(fence, next), "the waiter's fence {next} after {fence}");
}

/// Two processes pass one lock back and forth 200 times as fast as they can; every grant has
/// its own fence, and the lock changes hands often.
pub async fn no_wakeup_is_lost_over_many_handoffs(a: &Store, b: &Store) {
    let rounds = 200;
    let worker = |store: &Store, who: u8| {
        let lock = patient_lock(store, "pingpong", Tokio::current());
        tokio::spawn(async move {
            let mut grants = Vec::new();
            for _ in 0..rounds {
                let guard = lock.acquire_timeout(Duration::from_secs(10)).await.expect("a wake-up was lost");
                grants.push((guard.fencing_token().get(), who));
                // Held long enough for the other to be refused and wait.
                tokio::time::sleep(Duration::from_millis(2)).await;
                guard.release().await.expect("release");
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            grants
        })
    };
    let (x, y) = (worker(a, 0), worker(b, 1));
    let (x, y) = (x.await.expect("a"), y.await.expect("b"));
    let mut all: Vec<(u64, u8)> = x.into_iter().chain(y).collect();
    all.sort_unstable();
    all.dedup_by_key(|g| g.0);
    assert_eq!(all.len(), 2 * rounds, "every grant had its own fence");
    let handoffs = all.windows(2).filter(|w| w[0].1 != w[1].1).count();
    assert!(handoffs >= rounds / 2, "only {handoffs} hand-offs between the two");
}

/// One release wakes one waiter of a process, not all: 6 tasks on one store take one lock 25
/// times each; each grant has a fence of its own, above the one before.
pub async fn many_waiters_of_one_process_each_get_their_turn(store: &Store) {
    let lock = patient_lock(store, "queue", Tokio::current());
    let tasks: Vec<_> = (0..6)
        .map(|_| {
            let lock = lock.clone();
            tokio::spawn(async move {
                let mut fences = Vec::new();
                for _ in 0..25 {
                    let guard = lock.acquire_timeout(Duration::from_secs(10)).await.expect("a wake-up was lost");
                    fences.push(guard.fencing_token().get());
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    guard.release().await.expect("release");
                }
                fences
            })
        })
        .collect();
    let mut fences = Vec::new();
    for task in tasks {
        fences.extend(task.await.expect("a waiter"));
    }
    fences.sort_unstable();
    fences.dedup();
    assert_eq!(fences.len(), 150, "150 grants, each its own fence");
    let last = fences[fences.len() - 1];
    let fence = store.lock.acquire("lock:queue", "last", Duration::from_secs(1)).await.expect("acquire");
    let fence = fence.expect("free after every task").get();
    assert!(store.fences.next_after(last, fence), "the next holder's fence {fence} after {last}");
    if store.fences == crate::Fences::PerName {
        assert_eq!(fence, 151, "150 grants, numbered from 1");
    }
}

/// A follower whose next attempt is 20 s away leads as soon as the leader stops.
pub async fn a_follower_takes_over_as_soon_as_the_leader_releases(a: &Store, b: &Store) {
    let election = |store: &Store, worker: &str| {
        tenure::LeaderElection::builder("svc", Tokio::current())
            .shared_backend(store.leader.clone())
            .worker(WorkerId::new(worker).expect("worker"))
            .lease_duration(Duration::from_secs(60))
            .renew_deadline(Duration::from_secs(40))
            .retry_interval(Duration::from_secs(20))
            .env_load(false)
            .build()
            .expect("an election")
    };
    let (leader, follower) = (election(a, "a"), election(b, "b"));
    leader.start();
    tokio::time::timeout(Duration::from_secs(5), leader.wait_for_leader()).await.expect("a leads");
    follower.start();
    tokio::time::sleep(Duration::from_millis(200)).await; // the follower's attempt was refused
    assert!(!follower.is_leader());
    leader.stop().await;
    tokio::time::timeout(Duration::from_secs(5), follower.wait_for_leader()).await.expect("b took over at once");
    assert_eq!(follower.record().map(|r| r.transitions), Some(0), "a release deleted the record");
    follower.stop().await;
}

/// Instantiates every case above as a test, for a backend whose `$pair` (an async function)
/// opens two stores on one server through separate connections on the runtime it is given
/// ([`tenure::net::Net`]), as two processes would. The
/// test crate needs `tokio`, `smol`, `async-std`, `tenure-tokio`, `tenure-smol` and
/// `tenure-async-std`.
#[macro_export]
macro_rules! push_tests {
    ($pair:path) => {
        #[tokio::test]
        async fn a_release_wakes_a_waiter_in_another_process_at_once() {
            let (a, b) = $pair(::tenure_tokio::Tokio::current()).await;
            $crate::push::handoff(&a, &b, ::tenure_tokio::Tokio::current()).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn no_wakeup_is_lost_over_many_handoffs_between_processes() {
            let (a, b) = $pair(::tenure_tokio::Tokio::current()).await;
            $crate::push::no_wakeup_is_lost_over_many_handoffs(&a, &b).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn many_waiters_of_one_process_each_get_their_turn() {
            let (a, _) = $pair(::tenure_tokio::Tokio::current()).await;
            $crate::push::many_waiters_of_one_process_each_get_their_turn(&a).await;
        }

        #[tokio::test]
        async fn a_follower_takes_over_as_soon_as_the_leader_releases() {
            let (a, b) = $pair(::tenure_tokio::Tokio::current()).await;
            $crate::push::a_follower_takes_over_as_soon_as_the_leader_releases(&a, &b).await;
        }

        #[test]
        fn locks_hand_over_on_smol() {
            ::smol::block_on(async {
                let (a, b) = $pair(::tenure_smol::Smol::global()).await;
                $crate::push::handoff(&a, &b, ::tenure_smol::Smol::global()).await;
            });
        }

        #[test]
        fn locks_hand_over_on_async_std() {
            ::async_std::task::block_on(async {
                let (a, b) = $pair(::tenure_async_std::AsyncStd).await;
                $crate::push::handoff(&a, &b, ::tenure_async_std::AsyncStd).await;
            });
        }
    };
}
