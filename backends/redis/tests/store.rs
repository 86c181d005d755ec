//! What the Redis store adds to the contract (the conformance suite checks the contract):
//! grelmicro 0.44's keys and values, pushed wake-ups for locks and elections, malformed records,
//! inspection, a closed backend and unreachable servers.

mod common;

use std::time::{Duration, Instant};

use redis::Commands;
use tenure::backend::ScheduleBackend;
use tenure::{BackendErrorKind, Metadata};
use tenure_conformance::Store;
use tenure_redis::{RedisBackend, RedisOptions};

use common::{open, raw, url};
use tenure::backend::{LeaderElectionCalls, LockCalls};

#[tokio::test]
async fn the_layout_is_grelmicro_044s() {
    let (store, p) = open().await;
    let fence = LockCalls::acquire(&store, "lock:cart", "w1:task:0.ab", Duration::from_micros(1_500_001)).await;
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
    assert!(LockCalls::release(&store, "lock:cart", "w1:task:0.ab").await.expect("release"));
    assert!(!db.exists::<_, bool>(format!("{p}lock:cart")).expect("exists"));
    let fence = LockCalls::acquire(&store, "lock:cart", "w2", Duration::from_secs(5)).await;
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
    let again = LockCalls::acquire(&store, "lock:cart", "w1:task:0.39a0", Duration::from_secs(5)).await;
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
        let e = LockCalls::acquire(&store, name, "w", Duration::from_secs(1)).await.expect_err(name);
        assert_eq!(e.kind(), BackendErrorKind::MalformedRecord, "{name}: {e}");
        assert!(e.to_string().contains(name), "{e}");
    }
    let e = LockCalls::release(&store, "lock:nofence", "w").await.expect_err("release");
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
    tenure_conformance::inspect::inspection_lists_holders_and_leaders(&store).await;
}

#[tokio::test]
async fn holder_details_are_kept_beside_each_grant() {
    let (store, _) = open().await;
    tenure_conformance::inspect::holder_details_are_kept_beside_each_grant(&store).await;
    tenure_conformance::inspect::holder_details_follow_a_hand_off(&store, true).await;
}

#[tokio::test]
async fn inspection_lists_read_write_locks_and_semaphores() {
    let (store, _) = open().await;
    tenure_conformance::inspect::inspection_lists_read_write_locks_and_semaphores(&store).await;
    tenure_conformance::shared_details::read_write_holders_show_their_details(&store).await;
    tenure_conformance::shared_details::permit_holders_show_their_details(&store).await;
    tenure_conformance::shared_details::leaders_show_their_details(&store).await;
}

#[tokio::test]
async fn a_closed_backend_says_so() {
    let (store, _) = open().await;
    let clone = store.clone();
    store.close();
    let e = LockCalls::acquire(&clone, "lock:x", "w", Duration::from_secs(1)).await.expect_err("closed");
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
        .open(tenure_tokio::Tokio::current())
        .await
        .expect_err("nobody listens");
    assert!(start.elapsed() < Duration::from_secs(5), "took {:?}", start.elapsed());
    let text = e.to_string();
    assert!(text.contains(&format!("127.0.0.1:{port}")) && !text.contains("secret"), "{text}");
    for bad in ["http://h", "redis://h?command_timeout=0", "redis://h?prefix=%7Bx"] {
        let e = RedisBackend::open(bad, tenure_tokio::Tokio::current()).await.expect_err(bad);
        assert!(matches!(e, tenure_redis::OpenError::Settings(_)), "{bad}: {e}");
    }
    let e = RedisOptions::from_url("rediss://127.0.0.1:1")
        .expect("valid")
        .tls_root_certificate("/no/such/ca.pem")
        .open(tenure_tokio::Tokio::current())
        .await
        .expect_err("no CA file");
    assert!(e.to_string().contains("/no/such/ca.pem"), "{e}");
}

/// Two stores on the shared server, on separate connections on `runtime`, as two processes
/// would have.
async fn pair(runtime: impl tenure::net::Net + Clone) -> (Store, Store) {
    let prefix = common::fresh_prefix();
    let first = common::open_on(&url(), &prefix, runtime.clone()).await;
    (Store::of(first), Store::of(common::open_on(&url(), &prefix, runtime).await))
}

tenure_conformance::push_tests!(pair);
