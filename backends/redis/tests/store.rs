//! What the Redis store adds to the contract (the conformance suite checks the contract):
//! grelmicro 0.44's keys and values, pushed wake-ups for locks and elections, malformed records,
//! inspection, a closed backend and unreachable servers.

mod common;

use std::time::{Duration, Instant};

use redis::Commands;
use tenure::backend::{LeaderElectionBackend, LockBackend, ScheduleBackend};
use tenure::{BackendErrorKind, Inspect, Metadata};
use tenure_redis::{RedisBackend, RedisOptions};

use common::{open, raw, url};

#[tokio::test]
async fn the_layout_is_grelmicro_044s() {
    let (store, p) = open().await;
    let fence = LockBackend::acquire(&store, "lock:cart", "w1:task:0.ab", Duration::from_micros(1_500_001)).await;
    assert_eq!(fence.ok().flatten().map(|f| f.get()), Some(1));
    let meta = Metadata::from_pairs([("pod", "p1")]).expect("metadata");
    store.acquire_or_renew("leader:svc", "w9", Duration::from_micros(15_500_000), &meta).await.expect("leader");
    assert!(store.claim("nightly", 1_767_229_200.25).await.expect("claim"));

    let mut db = raw(&url());
    let value: String = db.get(format!("{p}lock:cart")).expect("lock value");
    assert_eq!(value, "1:w1:task:0.ab");
    let ttl: i64 = db.pttl(format!("{p}lock:cart")).expect("pttl");
    assert!((1400..=1501).contains(&ttl), "1.500001 s rounds up to 1501 ms, PTTL {ttl}");
    let counter: i64 = db.get(format!("{p}fence:lock:cart")).expect("fence");
    assert_eq!(counter, 1);
    let fence_ttl: i64 = db.pttl(format!("{p}fence:lock:cart")).expect("fence pttl");
    assert_eq!(fence_ttl, -1, "the fence counter never expires");
    let record: std::collections::HashMap<String, String> = db.hgetall(format!("{p}le_us:leader:svc")).expect("hash");
    assert_eq!(record["holder"], "w9");
    assert_eq!(record["lease_us"], "15500000");
    assert_eq!(record["transitions"], "0");
    assert_eq!(record["metadata"], r#"{"pod": "p1"}"#);
    assert_eq!(record["acquired_at_us"], record["renewed_at_us"]);
    assert_eq!(record["acquired_at_us"].len(), 16, "epoch microseconds: {}", record["acquired_at_us"]);
    assert_eq!(record.len(), 6);
    let due: String = db.get(format!("{p}nightly")).expect("schedule");
    assert_eq!(due, "1767229200.25");

    // Released: the lock key goes, the counter stays and climbs.
    assert!(LockBackend::release(&store, "lock:cart", "w1:task:0.ab").await.expect("release"));
    assert!(!db.exists::<_, bool>(format!("{p}lock:cart")).expect("exists"));
    let fence = LockBackend::acquire(&store, "lock:cart", "w2", Duration::from_secs(5)).await;
    assert_eq!(fence.ok().flatten().map(|f| f.get()), Some(2));
}

#[tokio::test]
async fn records_written_by_others_in_grelmicros_layout_are_read() {
    let (store, p) = open().await;
    let mut db = raw(&url());
    // What grelmicro 0.44 writes (values from its own run), with a live renewal time.
    let now_us = (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock")).as_micros();
    let now_text = now_us.to_string();
    let _: () = db
        .hset_multiple(
            format!("{p}le_us:leader:svc"),
            &[
                ("holder", "w9"),
                ("lease_us", "15000000"),
                ("acquired_at_us", now_text.as_str()),
                ("renewed_at_us", now_text.as_str()),
                ("transitions", "3"),
                ("metadata", r#"{"pod": "p1"}"#),
            ],
        )
        .expect("hset");
    let _: () = db.set_ex(format!("{p}lock:cart"), "41:w1:task:0.39a0", 30).expect("set");
    let record = store.get("leader:svc").await.expect("get").expect("live");
    assert_eq!((record.holder.as_str(), record.transitions), ("w9", 3));
    assert_eq!(record.lease_duration, Duration::from_secs(15));
    let other = store.acquire_or_renew("leader:svc", "w1", Duration::from_secs(1), &Metadata::new()).await;
    assert_eq!(other.expect("refused").holder, "w9", "a live grelmicro leader keeps the record");
    assert!(store.owned("lock:cart", "w1:task:0.39a0").await.expect("owned"));
    let again = LockBackend::acquire(&store, "lock:cart", "w1:task:0.39a0", Duration::from_secs(5)).await;
    assert_eq!(again.ok().flatten().map(|f| f.get()), Some(41), "a renewal keeps the stored fence");
}

#[tokio::test]
async fn malformed_records_are_reported_as_such() {
    let (store, p) = open().await;
    let mut db = raw(&url());
    let _: () = db.set(format!("{p}lock:nofence"), "garbage").expect("set");
    let _: () = db.hset(format!("{p}lock:hash"), "a", "b").expect("hset");
    let _: () = db.set(format!("{p}fence:lock:badcounter"), "many").expect("set");
    let _: () = db.hset(format!("{p}le_us:leader:half"), "holder", "w1").expect("hset");
    let _: () = db.set(format!("{p}nightly"), "yesterday").expect("set");
    for name in ["lock:nofence", "lock:hash", "lock:badcounter"] {
        let e = LockBackend::acquire(&store, name, "w", Duration::from_secs(1)).await.expect_err(name);
        assert_eq!(e.kind(), BackendErrorKind::MalformedRecord, "{name}: {e}");
        assert!(e.to_string().contains(name), "{e}");
    }
    let e = LockBackend::release(&store, "lock:nofence", "w").await.expect_err("release");
    assert_eq!(e.kind(), BackendErrorKind::MalformedRecord, "{e}");
    let e = store.owned("lock:nofence", "w").await.expect_err("owned");
    assert_eq!(e.kind(), BackendErrorKind::MalformedRecord, "{e}");
    let e = store.acquire_or_renew("leader:half", "w", Duration::from_secs(1), &Metadata::new()).await;
    let e = e.expect_err("half a record");
    assert_eq!(e.kind(), BackendErrorKind::MalformedRecord, "{e}");
    assert!(e.to_string().contains("lease_us"), "{e}");
    let e = store.get("leader:half").await.expect_err("get");
    assert_eq!(e.kind(), BackendErrorKind::MalformedRecord, "{e}");
    let e = store.claim("nightly", 1.0).await.expect_err("claim");
    assert_eq!(e.kind(), BackendErrorKind::MalformedRecord, "{e}");
    let e = store.last_fired("nightly").await.expect_err("last_fired");
    assert_eq!(e.kind(), BackendErrorKind::MalformedRecord, "{e}");
    // Nothing was overwritten.
    let kept: String = db.get(format!("{p}lock:nofence")).expect("get");
    assert_eq!(kept, "garbage");
}

#[tokio::test]
async fn inspection_lists_holders_and_leaders() {
    let (store, _) = open().await;
    LockBackend::acquire(&store, "lock:a", "w1:task:0.1", Duration::from_secs(30)).await.expect("a");
    LockBackend::acquire(&store, "tasklock:b", "w2:task:0.2", Duration::from_secs(30)).await.expect("b");
    LockBackend::release(&store, "tasklock:b", "w2:task:0.2").await.expect("release b");
    store.acquire_or_renew("leader:svc", "w3", Duration::from_secs(30), &Metadata::new()).await.expect("leader");
    let locks = store.lock_states(Vec::new()).await.expect("locks");
    let keys: Vec<_> = locks.iter().map(|s| (s.key.as_str(), s.fence.map(|f| f.get()), s.holder.as_deref())).collect();
    assert_eq!(keys, [("lock:a", Some(1), Some("w1:task:0.1")), ("tasklock:b", Some(1), None)]);
    assert!(locks[0].expires_at.is_some() && locks[1].expires_at.is_none());
    let one = store.lock_states(vec!["lock:a".into(), "lock:never".into()]).await.expect("one");
    assert_eq!(one.len(), 1);
    let leaders = store.leader_states(Vec::new()).await.expect("leaders");
    assert_eq!(leaders.len(), 1);
    assert_eq!((leaders[0].key.as_str(), leaders[0].record.holder.as_str()), ("leader:svc", "w3"));
}

#[tokio::test]
async fn a_closed_backend_says_so() {
    let (store, _) = open().await;
    let clone = store.clone();
    store.close();
    let e = LockBackend::acquire(&clone, "lock:x", "w", Duration::from_secs(1)).await.expect_err("closed");
    assert_eq!(e.kind(), BackendErrorKind::Closed, "{e}");
}

#[tokio::test]
async fn unreachable_servers_and_bad_urls_fail_fast_naming_the_problem() {
    // A port nobody listens on: refused at once, within the connect timeout at worst.
    let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("port").port();
    let start = Instant::now();
    let e = RedisOptions::from_url(&format!("redis://:secret@127.0.0.1:{port}"))
        .expect("valid URL")
        .connect_timeout(Duration::from_millis(500))
        .open()
        .await
        .expect_err("nobody listens");
    assert!(start.elapsed() < Duration::from_secs(5), "took {:?}", start.elapsed());
    let text = e.to_string();
    assert!(text.contains(&format!("127.0.0.1:{port}")) && !text.contains("secret"), "{text}");
    for bad in ["http://h", "redis://h?command_timeout=0", "redis://h?prefix=%7Bx"] {
        let e = RedisBackend::open(bad).await.expect_err(bad);
        assert!(matches!(e, tenure_redis::OpenError::Settings(_)), "{bad}: {e}");
    }
    let e = RedisOptions::from_url("rediss://127.0.0.1:1")
        .expect("valid")
        .tls_root_certificate("/no/such/ca.pem")
        .open()
        .await
        .expect_err("no CA file");
    assert!(e.to_string().contains("/no/such/ca.pem"), "{e}");
}

#[tokio::test]
async fn a_release_wakes_a_waiter_at_once() {
    let (store, _) = open().await;
    // A second connection, as another process would have: the push crosses the server.
    let other = common::open_at(&url(), store.options().key_prefix()).await;
    common::pushed_handoff(&store, &other).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_wakeup_is_lost_over_many_handoffs_between_processes() {
    use tenure_tokio::Lock;
    let (store, prefix) = open().await;
    let other = common::open_at(&url(), &prefix).await;
    // Two "processes" (connections) pass one lock back and forth as fast as they can; each
    // waits with a retry interval of a minute, so one lost wake-up stalls the run past its
    // acquire timeout and fails it.
    let lock = |store: &RedisBackend| common::patient_lock(store, "pingpong");
    let rounds = 200;
    let worker = |lock: Lock, who: u8| {
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
    let (a, b) = (worker(lock(&store), 0), worker(lock(&other), 1));
    let (a, b) = (a.await.expect("a"), b.await.expect("b"));
    let mut all: Vec<(u64, u8)> = a.into_iter().chain(b).collect();
    all.sort_unstable();
    all.dedup_by_key(|g| g.0);
    assert_eq!(all.len(), 2 * rounds, "every grant had its own fence");
    let handoffs = all.windows(2).filter(|w| w[0].1 != w[1].1).count();
    assert!(handoffs >= rounds / 2, "only {handoffs} hand-offs between the two");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_waiters_of_one_process_each_get_their_turn() {
    // One release wakes one waiter of a process, not all: 6 tasks on one connection take one
    // lock 25 times each, with a retry interval of a minute, so a wake-up lost to one of them
    // stalls it past its acquire timeout.
    let (store, _) = open().await;
    let lock = common::patient_lock(&store, "queue");
    let tasks: Vec<_> = (0..6)
        .map(|_| {
            let lock = lock.clone();
            tokio::spawn(async move {
                for _ in 0..25 {
                    let guard = lock.acquire_timeout(Duration::from_secs(10)).await.expect("a wake-up was lost");
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    guard.release().await.expect("release");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a waiter");
    }
    let fence = LockBackend::acquire(&store, "lock:queue", "last", Duration::from_secs(1)).await.expect("acquire");
    assert_eq!(fence.map(|f| f.get()), Some(151), "150 grants, each its own fence");
}

#[tokio::test]
async fn a_follower_takes_over_as_soon_as_the_leader_releases() {
    use tenure_tokio::{LeaderElection, Tokio};
    let (store, _) = open().await;
    let other = common::open_at(&url(), store.options().key_prefix()).await;
    let election = |store: &RedisBackend, worker: &str| {
        LeaderElection::builder("svc", Tokio::current())
            .backend(store.clone())
            .worker(tenure::WorkerId::new(worker).expect("worker"))
            .lease_duration(Duration::from_secs(60))
            .renew_deadline(Duration::from_secs(40))
            .retry_interval(Duration::from_secs(20))
            .env_load(false)
            .build()
            .expect("an election")
    };
    let (leader, follower) = (election(&store, "a"), election(&other, "b"));
    leader.start();
    tokio::time::timeout(Duration::from_secs(5), leader.wait_for_leader()).await.expect("a leads");
    follower.start();
    tokio::time::sleep(Duration::from_millis(200)).await; // the follower's attempt was refused
    assert!(!follower.is_leader());
    leader.stop().await;
    // The follower's next attempt would be 20 s away: only the release's push gets it there.
    tokio::time::timeout(Duration::from_secs(5), follower.wait_for_leader()).await.expect("b took over at once");
    assert_eq!(follower.record().map(|r| r.transitions), Some(0), "a release deleted the record");
    follower.stop().await;
}

#[test]
fn locks_hand_over_on_smol() {
    use tenure_smol::{Lock, Smol};
    smol::block_on(async {
        let (store, _) = open().await;
        let lock = || {
            Lock::builder("handoff", Smol::global())
                .backend(store.clone())
                .retry_interval(Duration::from_secs(60))
                .env_load(false)
                .build()
                .expect("a lock")
        };
        let (first, second) = (lock(), lock());
        let held = first.acquire().await.expect("first");
        let waiter = smol::spawn(async move {
            second.acquire_timeout(Duration::from_secs(5)).await.map(|g| g.fencing_token().get())
        });
        smol::Timer::after(Duration::from_millis(200)).await;
        held.release().await.expect("release");
        assert_eq!(waiter.await.expect("the waiter was not woken"), 2);
    });
}

#[test]
fn locks_hand_over_on_async_std() {
    use tenure_async_std::{AsyncStd, Lock};
    async_std::task::block_on(async {
        let (store, _) = open().await;
        let lock = || {
            Lock::builder("handoff", AsyncStd)
                .backend(store.clone())
                .retry_interval(Duration::from_secs(60))
                .env_load(false)
                .build()
                .expect("a lock")
        };
        let (first, second) = (lock(), lock());
        let held = first.acquire().await.expect("first");
        let waiter = async_std::task::spawn(async move {
            second.acquire_timeout(Duration::from_secs(5)).await.map(|g| g.fencing_token().get())
        });
        async_std::task::sleep(Duration::from_millis(200)).await;
        held.release().await.expect("release");
        assert_eq!(waiter.await.expect("the waiter was not woken"), 2);
    });
}
