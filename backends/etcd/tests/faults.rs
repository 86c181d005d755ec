//! A 3-member cluster under faults: the member a client talks to killed, the cluster's leader
//! killed, every member restarted on its data. Locks stay exclusive and fences keep growing.

mod common;

use std::time::{Duration, Instant};

use common::cluster::Cluster;
use tenure::backend::LockOperations;
use tenure_core::FencingToken;
use tenure_etcd::EtcdBackend;

/// Retries `call` until it answers (a request can fail while the client moves to another
/// member), for at most `within`.
async fn eventually<T, F: std::future::Future<Output = Result<T, tenure_core::BackendError>>>(
    within: Duration,
    mut call: impl FnMut() -> F,
) -> T {
    let deadline = Instant::now() + within;
    loop {
        match call().await {
            Ok(value) => return value,
            Err(e) if Instant::now() < deadline => {
                eprintln!("retrying after: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("no answer within {within:?}: {e}"),
        }
    }
}

/// An acquire with a lease that outlasts a member's restart on a loaded machine.
async fn acquire(store: &EtcdBackend, token: &str) -> Option<FencingToken> {
    eventually(Duration::from_secs(10), || store.acquire("lock:f", token, Duration::from_secs(30))).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_member_or_leader_keeps_the_holder_and_the_fences_growing_and_a_full_restart_keeps_them_too() {
    let mut cluster = Cluster::start(3);
    let url = cluster.url("f/");
    let (a, b) = (EtcdBackend::open_url(&url).await.expect("a"), EtcdBackend::open_url(&url).await.expect("b"));
    let mut fences = vec![acquire(&a, "a").await.expect("free")];

    // The first endpoint (the one a fresh client dials first) dies: the holder renews through
    // another member, keeping its fence, and nobody else gets the lock meanwhile.
    cluster.kill9(0);
    assert_eq!(acquire(&a, "a").await, Some(fences[0]), "the holder lost its lease to a member's death");
    assert_eq!(acquire(&b, "b").await, None, "a second holder while the first holds");
    cluster.restart(0);
    cluster.wait_healthy();

    // The cluster's leader dies: the same, across an election of the cluster.
    let leader = cluster.leader();
    cluster.kill9(leader);
    assert_eq!(acquire(&a, "a").await, Some(fences[0]));
    assert_eq!(acquire(&b, "b").await, None);
    // (A release that applied but whose answer was lost answers false when made again.)
    eventually(Duration::from_secs(10), || a.release("lock:f", "a")).await;
    fences.push(acquire(&b, "b").await.expect("free after the release"));
    cluster.restart(leader);
    cluster.wait_healthy();

    // Every member restarted on its data: the next fences are above all before.
    for i in 0..3 {
        cluster.kill9(i);
    }
    for i in 0..3 {
        cluster.restart(i);
    }
    cluster.wait_healthy();
    assert!(eventually(Duration::from_secs(10), || b.owned("lock:f", "b")).await, "b's lease survived the restart");
    eventually(Duration::from_secs(10), || b.release("lock:f", "b")).await;
    fences.push(acquire(&a, "a").await.expect("free"));
    assert!(fences.windows(2).all(|w| w[1] > w[0]), "fences {fences:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_without_quorum_fails_calls_within_the_command_timeout_and_serves_again_with_it() {
    let mut cluster = Cluster::start(3);
    let store = EtcdBackend::open_url(&cluster.url("q/")).await.expect("open");
    let before = acquire(&store, "a").await.expect("free");
    cluster.kill9(1);
    cluster.kill9(2);
    for call in 0..3 {
        let started = Instant::now();
        let outcome =
            tokio::time::timeout(Duration::from_secs(15), store.acquire("lock:f", "a", Duration::from_secs(5)))
                .await
                .expect("a call hung without quorum");
        let error = outcome.expect_err("no quorum, no answer");
        // Bounded by the command timeout (1 s) per request, a few requests per call.
        assert!(started.elapsed() < Duration::from_secs(10), "call {call} took {:?}", started.elapsed());
        assert!(error.to_string().contains("etcd: "), "the error says where it failed: {error}");
        assert!(
            matches!(error.kind(), tenure_core::BackendErrorKind::Timeout | tenure_core::BackendErrorKind::Unavailable),
            "{error}"
        );
    }
    cluster.restart(1);
    cluster.restart(2);
    cluster.wait_healthy();
    // Service resumes: the holder's key outlived the outage (etcd extends leases across an
    // election), or its lease ended and the name is free; either way the next fence is not lower.
    let after = acquire(&store, "a").await.expect("the holder, or free again");
    assert!(after >= before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_frozen_past_the_lease_never_lets_a_second_holder_in_while_the_first_believes() {
    let cluster = Cluster::start(3);
    let url = cluster.url("s/");
    let (a, b) = (EtcdBackend::open_url(&url).await.expect("a"), EtcdBackend::open_url(&url).await.expect("b"));
    let lease = Duration::from_secs(5);
    let fence = eventually(Duration::from_secs(10), || a.acquire("lock:f", "a", lease)).await.expect("free");
    // What a believes: its lease from the send of its last renewal that answered with its fence.
    let mut believed_until = Instant::now() + lease;
    let mut lost = false;
    let mut renewed = 0;
    cluster.freeze(0);
    let frozen = Instant::now();
    // Longer than the lease: the holder renews through the other members (a request that meets
    // the frozen one times out after 1 s), and b tries all along.
    while frozen.elapsed() < Duration::from_secs(7) {
        let sent = Instant::now();
        match a.acquire("lock:f", "a", lease).await {
            Ok(Some(f)) if f == fence && !lost => {
                believed_until = sent + lease;
                renewed += 1;
            }
            // A different fence: a learns that it lost the lock, and believes nothing more.
            Ok(_) => lost = true,
            Err(_) => {}
        }
        if let Ok(Some(_)) = b.acquire("lock:f", "b", lease).await {
            assert!(lost || Instant::now() >= believed_until, "b holds while a believes it holds");
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    cluster.thaw(0);
    // The frozen member leaves the balancer within about a second (its probe fails): from then
    // on every renewal goes to the others, so the holder kept its lock all along.
    eprintln!("a renewed {renewed} times through the freeze; lost: {lost}");
    assert!(!lost, "the holder lost its lock to a frozen member");
    assert!(renewed >= 10, "only {renewed} renewals got through the freeze");
    eventually(Duration::from_secs(10), || a.release("lock:f", "a")).await;
    eventually(Duration::from_secs(10), || b.release("lock:f", "b")).await;
    // Once both let go (or their leases ended), the next fence is above a's.
    let next = loop {
        if let Some(f) = acquire(&b, "b").await {
            break f;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(next > fence);
}
