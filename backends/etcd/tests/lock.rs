//! Locks on a real etcd member: fences are create revisions, etcd's own `etcdctl lock` and
//! Tenure exclude each other on one name, leases are kept in whole seconds.

mod common;

use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use common::Member;
use tenure::backend::{LockOperations, ScheduleBackend};
use tenure_core::BackendErrorKind;
use tenure_etcd::EtcdBackend;

/// Waits until `prefix` holds `count` keys (an `etcdctl` contender queued, say).
async fn wait_for_keys(member: &Member, prefix: &str, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let output = member.etcdctl(&["get", "--prefix", "--keys-only", prefix]).output().expect("etcdctl");
        if String::from_utf8_lossy(&output.stdout).lines().filter(|l| !l.is_empty()).count() >= count {
            return;
        }
        assert!(Instant::now() < deadline, "{prefix} never held {count} keys");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn open(member: &Member) -> EtcdBackend {
    EtcdBackend::open_url(&member.url("t/")).await.expect("the member answers")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_holder_at_a_time_fences_grow_and_renewing_keeps_the_fence() {
    let member = Member::start();
    let store = open(&member).await;
    let lease = Duration::from_secs(5);
    let first = store.acquire("lock:cart", "a", lease).await.expect("acquire").expect("free");
    assert_eq!(store.acquire("lock:cart", "b", lease).await.expect("acquire"), None, "held by a");
    assert!(store.locked("lock:cart").await.expect("locked"));
    assert!(
        store.owned("lock:cart", "a").await.expect("owned") && !store.owned("lock:cart", "b").await.expect("owned")
    );
    // Renewing (another lease length too) keeps the key's create revision: the same fence.
    let renewed = store.acquire("lock:cart", "a", Duration::from_secs(8)).await.expect("renew").expect("still a's");
    assert_eq!(renewed, first);
    assert!(!store.release("lock:cart", "b").await.expect("release"), "b holds nothing");
    assert!(store.release("lock:cart", "a").await.expect("release"));
    assert!(!store.locked("lock:cart").await.expect("locked"));
    assert!(!store.release("lock:cart", "a").await.expect("release"), "released already");
    let next = store.acquire("lock:cart", "b", lease).await.expect("acquire").expect("free again");
    assert!(next > first, "{next:?} after {first:?}");
    // The refused attempt left no key behind: only b's key is under the name.
    let keys = member.etcdctl(&["get", "--prefix", "--keys-only", "t/lock:cart/"]).output().expect("etcdctl");
    let listed = String::from_utf8_lossy(&keys.stdout).lines().filter(|l| !l.is_empty()).count();
    assert_eq!(listed, 1, "{}", String::from_utf8_lossy(&keys.stdout));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_holding_a_slash_is_not_a_contender_of_its_prefix() {
    let member = Member::start();
    let store = open(&member).await;
    let lease = Duration::from_secs(5);
    let child = store.acquire("lock:pay/eu", "a", lease).await.expect("acquire").expect("free");
    assert!(!store.locked("lock:pay").await.expect("locked"), "lock:pay/eu's key counted for lock:pay");
    let parent = store.acquire("lock:pay", "b", lease).await.expect("acquire").expect("lock:pay is free");
    assert!(parent > child);
    assert!(
        store.owned("lock:pay/eu", "a").await.expect("owned") && store.owned("lock:pay", "b").await.expect("owned")
    );
    assert!(store.release("lock:pay", "b").await.expect("release"));
    assert!(store.locked("lock:pay/eu").await.expect("locked"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_ends_in_etcd_whole_seconds_and_the_next_holder_gets_a_higher_fence() {
    let member = Member::start();
    let store = open(&member).await;
    let started = Instant::now();
    let first = store.acquire("lock:job", "a", Duration::from_millis(300)).await.expect("acquire").expect("free");
    // 300 ms is held for etcd's minimum TTL at least (whole seconds): longer, never shorter.
    assert_eq!(store.acquire("lock:job", "b", Duration::from_secs(5)).await.expect("acquire"), None);
    let taken = loop {
        if let Some(fence) = store.acquire("lock:job", "b", Duration::from_secs(5)).await.expect("acquire") {
            break fence;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "the lease never ended");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // Held for etcd's whole seconds: at least one, never the 300 ms alone.
    assert!(started.elapsed() >= Duration::from_secs(1), "{:?}", started.elapsed());
    assert!(taken > first);
    assert!(!store.owned("lock:job", "a").await.expect("owned"));
    assert!(!store.release("lock:job", "a").await.expect("release"), "a's lease ended");
}

/// The lease (in hex) of the one key under `prefix`, and its TTL left.
fn only_key(member: &Member, prefix: &str) -> (String, u64) {
    let out = member.etcdctl(&["get", "--prefix", "-w", "json", prefix]).output().expect("etcdctl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(text.matches("\"create_revision\"").count(), 1, "{text}");
    let lease: i64 = text
        .split("\"lease\":")
        .nth(1)
        .and_then(|t| t.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no lease in {text}"));
    let lease = format!("{lease:x}");
    let ttl = member.etcdctl(&["lease", "timetolive", &lease]).output().expect("etcdctl");
    let text = String::from_utf8_lossy(&ttl.stdout).into_owned();
    let left = text.split("remaining(").nth(1).and_then(|t| t.split('s').next()).and_then(|t| t.parse().ok());
    (lease, left.unwrap_or_else(|| panic!("no TTL left in {text:?}")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_released_lease_serves_the_next_holder_refreshed_and_renewing_as_long_keeps_it() {
    let member = Member::start();
    let store = open(&member).await;
    let lease = Duration::from_secs(30);
    let first = store.acquire("lock:spare", "a", lease).await.expect("acquire").expect("free");
    let (granted, _) = only_key(&member, "t/lock:spare/");
    // A renewal for as long refreshes the key's own lease: same key, same fence.
    assert_eq!(store.acquire("lock:spare", "a", lease).await.expect("renew"), Some(first));
    assert_eq!(only_key(&member, "t/lock:spare/").0, granted, "a renewal moved the key to another lease");
    assert!(store.release("lock:spare", "a").await.expect("release"));
    tokio::time::sleep(Duration::from_secs(2)).await;
    // The next holder's key is on the same lease, refreshed to its whole TTL, with a new fence.
    let next = store.acquire("lock:spare", "b", lease).await.expect("acquire").expect("free");
    assert!(next > first);
    let (reused, left) = only_key(&member, "t/lock:spare/");
    assert_eq!(reused, granted, "a new lease was granted");
    assert!(left >= 29, "the spare lease was not refreshed: {left} s left");
    // A renewal for longer moves the key onto a lease of that length, keeping the key and fence.
    assert_eq!(store.acquire("lock:spare", "b", lease * 2).await.expect("renew"), Some(next));
    let (moved, left) = only_key(&member, "t/lock:spare/");
    assert_ne!(moved, granted);
    assert!(left > 30, "{left} s left");
    // A closed store revokes its spares: only the held key's lease stays.
    assert!(store.release("lock:spare", "b").await.expect("release"));
    store.close();
    let leases = || {
        let out = member.etcdctl(&["lease", "list"]).output().expect("etcdctl");
        String::from_utf8_lossy(&out.stdout).lines().skip(1).filter(|l| !l.is_empty()).count()
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while leases() > 0 {
        assert!(Instant::now() < deadline, "spare leases left after close: {}", leases());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcdctl_lock_and_tenure_exclude_each_other_and_share_one_fence_sequence() {
    let member = Member::start();
    let store = open(&member).await;
    // etcdctl holds the name (the same key layout: t/lock:cart/<lease>) and prints its revision.
    let mut child = member
        .etcdctl(&["lock", "t/lock:cart", "--", "sh", "-c", "echo $ETCD_LOCK_REV; sleep 2"])
        .spawn()
        .expect("etcdctl lock");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let theirs: u64 = lines.next().expect("a line").expect("read").trim().parse().expect("ETCD_LOCK_REV");
    assert_eq!(store.acquire("lock:cart", "a", Duration::from_secs(5)).await.expect("acquire"), None);
    assert!(store.locked("lock:cart").await.expect("locked"));
    let waited = Instant::now();
    let ours = loop {
        if let Some(fence) = store.acquire("lock:cart", "a", Duration::from_secs(5)).await.expect("acquire") {
            break fence;
        }
        assert!(waited.elapsed() < Duration::from_secs(10), "etcdctl never let go");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(child.wait().expect("etcdctl ends").success());
    assert!(ours.get() > theirs, "tenure's fence {ours:?} after etcdctl's revision {theirs}");
    // Now Tenure holds: an `etcdctl lock` waits for the release (its key queued behind ours), and
    // its revision comes after.
    let mut child =
        member.etcdctl(&["lock", "t/lock:cart", "--", "sh", "-c", "echo $ETCD_LOCK_REV"]).spawn().expect("etcdctl");
    wait_for_keys(&member, "t/lock:cart/", 2).await;
    assert!(child.try_wait().expect("poll").is_none(), "etcdctl took a lock Tenure holds");
    assert!(store.owned("lock:cart", "a").await.expect("owned"), "a waiting etcdctl does not take ownership");
    assert!(store.release("lock:cart", "a").await.expect("release"));
    let output = child.wait_with_output().expect("etcdctl ends");
    let later: u64 = String::from_utf8_lossy(&output.stdout).trim().parse().expect("ETCD_LOCK_REV");
    assert!(later > ours.get());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedules_are_claimed_once_per_fire_time() {
    let member = Member::start();
    let store = open(&member).await;
    assert_eq!(store.last_fired("nightly").await.expect("read"), None);
    assert!(store.claim("nightly", 100.0).await.expect("claim"));
    assert!(!store.claim("nightly", 100.0).await.expect("claim"), "claimed already");
    assert!(!store.claim("nightly", 50.0).await.expect("claim"), "earlier than the stored one");
    assert!(store.claim("nightly", 160.5).await.expect("claim"));
    assert_eq!(store.last_fired("nightly").await.expect("read"), Some(160.5));
    // Two claims of one fire time at once: exactly one wins.
    let (a, b) = tokio::join!(store.claim("race", 7.0), store.claim("race", 7.0));
    assert_eq!(u8::from(a.expect("claim")) + u8::from(b.expect("claim")), 1);
    // A value not written by Tenure is a malformed record, not a panic.
    assert!(member.etcdctl(&["put", "t/tenure:schedule:odd", "soon"]).status().expect("etcdctl").success());
    let e = store.last_fired("odd").await.expect_err("malformed");
    assert_eq!(e.kind(), BackendErrorKind::MalformedRecord);
}

#[test]
fn smol_runs_it_on_the_stores_own_runtime_and_an_unreachable_cluster_is_a_clear_error() {
    let member = Member::start();
    smol::block_on(async {
        let store = EtcdBackend::open_url(&member.url("s/")).await.expect("open off tokio");
        let fence = store.acquire("lock:a", "t", Duration::from_secs(3)).await.expect("acquire").expect("free");
        assert!(fence.get() > 0);
        assert!(store.release("lock:a", "t").await.expect("release"));
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("port").port();
        let started = Instant::now();
        let url = format!("etcd://u:hunter2@127.0.0.1:{port}/?connect_timeout=0.5&command_timeout=0.5");
        let outcome = async {
            let store = EtcdBackend::open_url(&url).await?;
            store.locked("lock:a").await
        }
        .await;
        let e = outcome.expect_err("nobody listens there");
        assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
        assert!(matches!(e.kind(), BackendErrorKind::Unavailable | BackendErrorKind::Timeout), "{e}");
        assert!(!e.to_string().contains("hunter2"), "{e}");
    });
}

/// A lock on `store` that retries only once a minute: past its first attempt, only a pushed
/// wake-up brings it back within the test's patience.
fn patient(store: &EtcdBackend, name: &str) -> tenure::Lock<tenure_tokio::Tokio> {
    tenure::Lock::builder(name, tenure_tokio::Tokio::current())
        .shared_backend(std::sync::Arc::new(store.clone()))
        .retry_interval(Duration::from_secs(60))
        .env_load(false)
        .build()
        .expect("a lock")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_or_an_expiry_wakes_a_waiter_of_another_process_through_the_watch() {
    let member = Member::start();
    let (a, b) = (open(&member).await, open(&member).await);
    let (holder, waiter) = (patient(&a, "handoff"), patient(&b, "handoff"));
    for _ in 0..3 {
        let held = holder.acquire().await.expect("free");
        let fence = held.fencing_token();
        let waiting = waiter.acquire_timeout(Duration::from_secs(5));
        let releasing = async {
            tokio::time::sleep(Duration::from_millis(200)).await; // the waiter is refused meanwhile
            held.release().await.expect("release");
        };
        let (next, ()) = tokio::join!(waiting, releasing);
        let next = next.expect("the waiter was not woken");
        assert!(next.fencing_token() > fence);
        next.release().await.expect("release");
    }
    // An etcdctl holder that ends (its key deleted) wakes the waiter too.
    let mut child =
        member.etcdctl(&["lock", "t/lock:handoff", "--", "sh", "-c", "echo held; sleep 1"]).spawn().expect("etcdctl");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    assert_eq!(lines.next().expect("a line").expect("read"), "held");
    let taken = waiter.acquire_timeout(Duration::from_secs(8)).await.expect("woken when etcdctl let go");
    assert!(child.wait().expect("etcdctl ends").success());
    taken.release().await.expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_lists_holders_with_their_fences_and_a_closed_store_refuses_calls() {
    use tenure::Inspect;
    let member = Member::start();
    let store = open(&member).await;
    let fence = store.acquire("lock:a", "w1:task:0.1", Duration::from_secs(30)).await.expect("a").expect("free");
    store.acquire("tasklock:b", "w2:task:0.2", Duration::from_secs(30)).await.expect("b").expect("free");
    assert!(store.release("tasklock:b", "w2:task:0.2").await.expect("release"));
    tenure::backend::LeaderElectionOperations::acquire_or_renew(
        &store,
        "leader:svc",
        "w3",
        Duration::from_secs(30),
        &tenure_core::Metadata::default(),
    )
    .await
    .expect("leader");
    let locks = store.lock_states(Vec::new()).await.expect("locks");
    // etcd keeps nothing of a released name: only the held one is listed, with its revision.
    let listed: Vec<_> = locks.iter().map(|s| (s.key.as_str(), s.fence, s.holder.as_deref())).collect();
    assert_eq!(listed, [("lock:a", Some(fence), Some("w1:task:0.1"))]);
    assert!(locks[0].expires_at.is_some());
    assert_eq!(store.lock_states(vec!["lock:never".into()]).await.expect("none").len(), 0);
    let leaders = store.leader_states(Vec::new()).await.expect("leaders");
    assert_eq!(
        leaders.iter().map(|l| (l.key.as_str(), l.record.holder.as_str())).collect::<Vec<_>>(),
        [("leader:svc", "w3")]
    );
    store.close();
    let e = store.locked("lock:a").await.expect_err("closed");
    assert_eq!(e.kind(), BackendErrorKind::Closed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_lists_read_write_locks_and_semaphores() {
    let member = Member::start();
    let store = open(&member).await;
    tenure_conformance::inspect::inspection_lists_read_write_locks_and_semaphores(&store).await;
    tenure_conformance::shared_details::read_write_holders_show_their_details(&store).await;
    tenure_conformance::shared_details::permit_holders_show_their_details(&store).await;
    tenure_conformance::shared_details::leaders_show_their_details(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holder_details_are_kept_beside_each_grant() {
    let member = Member::start();
    let store = open(&member).await;
    tenure_conformance::inspect::holder_details_are_kept_beside_each_grant(&store).await;
    tenure_conformance::inspect::holder_details_follow_a_hand_off(&store, false).await;
}
