//! Leader elections on a real etcd member, beside `etcdctl elect` on the same name.

mod common;

use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use common::Member;
use tenure::backend::LeaderElectionOperations;
use tenure_core::Metadata;
use tenure_etcd::EtcdBackend;

async fn open(member: &Member) -> EtcdBackend {
    EtcdBackend::open_url(&member.url("e/")).await.expect("the member answers")
}

fn metadata(zone: &str) -> Metadata {
    Metadata::try_from(std::collections::BTreeMap::from([("zone".to_owned(), zone.to_owned())])).expect("metadata")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leader_renews_keeps_its_start_and_a_clean_release_starts_the_count_again() {
    let member = Member::start();
    let store = open(&member).await;
    let lease = Duration::from_secs(5);
    let led = store.acquire_or_renew("leader:svc", "w1", lease, &metadata("a")).await.expect("elect");
    assert_eq!((led.holder.as_str(), led.transitions, led.lease_duration), ("w1", 0, lease));
    let other = store.acquire_or_renew("leader:svc", "w2", lease, &metadata("b")).await.expect("elect");
    assert_eq!(other.holder, "w1", "w2 follows");
    assert_eq!(other.metadata, metadata("a"));
    tokio::time::sleep(Duration::from_millis(20)).await;
    let renewed =
        store.acquire_or_renew("leader:svc", "w1", Duration::from_secs(6), &metadata("a2")).await.expect("renew");
    assert_eq!((renewed.holder.as_str(), renewed.acquired_at), ("w1", led.acquired_at));
    assert!(renewed.renewed_at > led.renewed_at);
    assert_eq!((renewed.lease_duration, renewed.metadata.clone()), (Duration::from_secs(6), metadata("a2")));
    assert_eq!(store.get("leader:svc").await.expect("get").expect("a leader").holder, "w1");
    assert!(!store.release("leader:svc", "w2").await.expect("release"), "w2 does not lead");
    assert!(store.release("leader:svc", "w1").await.expect("release"));
    assert_eq!(store.get("leader:svc").await.expect("get"), None);
    let next = store.acquire_or_renew("leader:svc", "w2", lease, &metadata("b")).await.expect("elect");
    assert_eq!((next.holder.as_str(), next.transitions), ("w2", 0), "a clean release starts the count again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_takeover_after_expiry_counts_a_transition_though_the_old_key_is_gone() {
    let member = Member::start();
    let store = open(&member).await;
    store.acquire_or_renew("leader:job", "w1", Duration::from_secs(1), &Metadata::default()).await.expect("elect");
    let started = Instant::now();
    let taken = loop {
        let record = store
            .acquire_or_renew("leader:job", "w2", Duration::from_secs(5), &Metadata::default())
            .await
            .expect("elect");
        if record.holder == "w2" {
            break record;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "w1's lease never ended");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(taken.transitions, 1);
    // w1 coming back while w2 leads follows, and cannot release what it no longer leads.
    assert_eq!(
        store
            .acquire_or_renew("leader:job", "w1", Duration::from_secs(1), &Metadata::default())
            .await
            .expect("elect")
            .holder,
        "w2"
    );
    assert!(!store.release("leader:job", "w1").await.expect("release"));
}

/// A follower whose store's watch saw the leader go takes over with the guarded write alone (no
/// read first); a hint gone stale (somebody else led first) only makes it follow, and leaves no
/// key of its own behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_woken_by_a_release_takes_over_and_a_stale_hint_only_follows() {
    let member = Member::start();
    let (a, b) = (open(&member).await, open(&member).await);
    let lease = Duration::from_secs(5);
    let elect = |store: &EtcdBackend, token: &'static str| {
        let store = store.clone();
        async move { store.acquire_or_renew("leader:hint", token, lease, &Metadata::default()).await.expect("elect") }
    };
    // After a clean release: the follower's next attempt leads, the count started again.
    assert_eq!(elect(&a, "w1").await.holder, "w1");
    assert_eq!(elect(&b, "w2").await.holder, "w1", "w2 follows");
    assert!(a.release("leader:hint", "w1").await.expect("release"));
    tokio::time::sleep(Duration::from_millis(300)).await; // b's watch saw it
    let led = elect(&b, "w2").await;
    assert_eq!((led.holder.as_str(), led.transitions), ("w2", 0));
    assert_eq!(elect(&b, "w2").await.acquired_at, led.acquired_at, "w2 renews what it took");
    // A stale hint: w3 follows, w2 lets go, w1 takes the lead before w3 tries again.
    assert_eq!(elect(&b, "w3").await.holder, "w2");
    assert!(b.release("leader:hint", "w2").await.expect("release"));
    assert_eq!(elect(&a, "w1").await.holder, "w1");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let seen = elect(&b, "w3").await;
    assert_eq!((seen.holder.as_str(), seen.transitions), ("w1", 0), "w3 follows w1");
    let keys = member
        .etcdctl(&["get", "--prefix", "--keys-only", "e/leader:hint/"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().filter(|l| !l.is_empty()).count())
        .expect("etcdctl get");
    assert_eq!(keys, 1, "only the leader's key is left");
    // After an expiry (the count kept): the takeover counts one.
    assert!(a.release("leader:hint", "w1").await.expect("release"));
    let short = a.acquire_or_renew("leader:hint", "w4", Duration::from_secs(1), &Metadata::default()).await;
    assert_eq!(short.expect("elect").holder, "w4");
    assert_eq!(elect(&b, "w5").await.holder, "w4");
    let started = Instant::now();
    let taken = loop {
        let record = elect(&b, "w5").await;
        if record.holder == "w5" {
            break record;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "w4's lease never ended");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(taken.transitions, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcdctl_elect_and_tenure_follow_each_other() {
    let member = Member::start();
    let store = open(&member).await;
    // etcdctl campaigns first and leads: Tenure follows, reading its proposal as the holder.
    let mut theirs = member.etcdctl(&["elect", "e/leader:svc", "alpha"]).spawn().expect("etcdctl elect");
    let mut lines = BufReader::new(theirs.stdout.take().expect("stdout")).lines();
    let _key = lines.next().expect("elected").expect("read");
    let record =
        store.acquire_or_renew("leader:svc", "w1", Duration::from_secs(5), &Metadata::default()).await.expect("elect");
    assert_eq!(record.holder, "alpha");
    // etcdctl resigns on SIGINT: Tenure leads at its next attempt, and `elect --listen` shows it.
    let pid = i32::try_from(theirs.id()).expect("pid");
    std::process::Command::new("kill").args(["-INT", &pid.to_string()]).status().expect("kill");
    theirs.wait().expect("etcdctl ends");
    let led =
        store.acquire_or_renew("leader:svc", "w1", Duration::from_secs(5), &Metadata::default()).await.expect("elect");
    assert_eq!(led.holder, "w1");
    let mut listen = member.etcdctl(&["elect", "--listen", "e/leader:svc"]).spawn().expect("etcdctl elect --listen");
    let mut lines = BufReader::new(listen.stdout.take().expect("stdout")).lines();
    let _key = lines.next().expect("a leader").expect("read");
    let value = lines.next().expect("its value").expect("read");
    assert!(value.contains("\"holder\":\"w1\""), "{value}");
    let _ = listen.kill();
    let _ = listen.wait();
    // While Tenure leads, a campaigning etcdctl waits; the release hands it leadership.
    let mut waiting = member.etcdctl(&["elect", "e/leader:svc", "beta"]).spawn().expect("etcdctl elect");
    // Its candidate key is queued behind Tenure's.
    let deadline = Instant::now() + Duration::from_secs(10);
    while member
        .etcdctl(&["get", "--prefix", "--keys-only", "e/leader:svc/"])
        .output()
        .map_or(0, |o| String::from_utf8_lossy(&o.stdout).lines().filter(|l| !l.is_empty()).count())
        < 2
    {
        assert!(Instant::now() < deadline, "etcdctl never campaigned");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(store.get("leader:svc").await.expect("get").expect("leader").holder, "w1");
    assert!(store.release("leader:svc", "w1").await.expect("release"));
    let mut lines = BufReader::new(waiting.stdout.take().expect("stdout")).lines();
    let _key = lines.next().expect("elected").expect("read");
    assert_eq!(store.get("leader:svc").await.expect("get").expect("leader").holder, "beta");
    let _ = waiting.kill();
    let _ = waiting.wait();
}
