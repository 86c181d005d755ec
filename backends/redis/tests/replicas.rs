//! `min_replicas`: grants confirmed by `WAIT`, on a master and replicas each test starts. A grant
//! fewer replicas confirm is a failed grant, given back; a renewal fails without being given back;
//! a fence handed out is on a replica before anyone sees it. Then the failover the option exists
//! for: a replica that missed the last grants is promoted — without `min_replicas` the fence goes
//! backwards and the holder's `Lock` reports `FenceRegression`; with it, every fence after the
//! failover is above every fence handed out before.

mod common;

use std::sync::Arc;
use std::time::Duration;

use tenure::backend::{LeaderElectionCalls, LockCalls, ReadWriteCalls, SemaphoreCalls};
use tenure::{BackendErrorKind, Lock, Metadata, ScheduleBackend};
use tenure_conformance::faults::Server as _;
use tenure_conformance::{Clock, Harness, Leases, Store};
use tenure_redis::{RedisBackend, RedisOptions};
use tenure_tokio::Tokio;

use common::fresh_prefix;
use common::sentinel::{Group, query};
use common::server::Server;

/// Grants wait for one replica, up to the default `replica_timeout` (1 s).
const WAITING: &str = "min_replicas=1";

async fn open(url: &str, prefix: &str) -> RedisBackend {
    let options = RedisOptions::from_url(url).expect("url").prefix(prefix).command_timeout(Duration::from_secs(2));
    options.open(Tokio::current()).await.unwrap_or_else(|e| panic!("cannot open {url}: {e}"))
}

fn lock(store: &RedisBackend, name: &str) -> Lock<Tokio> {
    Lock::builder(name, Tokio::current())
        .backend(store.clone())
        .lease_duration(Duration::from_secs(30))
        .env_load(false)
        .build()
        .expect("a lock")
}

/// The text stored at `key` on the server on `port`, if any.
fn stored(port: u16, key: &str) -> Option<String> {
    query(port, redis::cmd("GET").arg(key)).expect("get")
}

/// Waits until the server on `port` holds `value` at `key` (a replica catching up).
fn wait_for(port: u16, key: &str, value: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while stored(port, key).as_deref() != Some(value) {
        assert!(std::time::Instant::now() < deadline, "{key} never reached {value} on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The conformance suite with every grant confirmed by a replica.
fn replicated_harness() -> Harness {
    let master = Server::start();
    let replica = Server::replica_of(master.port());
    wait_for_link(master.port());
    let url = format!("{}/0?{WAITING}", master.url());
    let servers = Arc::new((master, replica));
    Harness {
        name: "redis min_replicas=1",
        clock: Clock::Real { quantum: Duration::from_millis(100) },
        leases: Leases::AS_ASKED,
        make: Box::new(move || {
            let (url, _servers) = (url.clone(), servers.clone());
            Box::pin(async move { Store::of(open(&url, &fresh_prefix()).await) })
        }),
    }
}

tenure_conformance::conformance_tests!(sequential replicated_harness());

/// The read-write lock and semaphore contracts, in turn on one master and replica, every grant
/// confirmed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_write_locks_and_semaphores_keep_their_contracts_with_min_replicas() {
    use tenure_conformance::{rw, sem};
    let h = replicated_harness();
    rw::readers_share_and_a_refused_writer_holds_new_readers_out(&h).await;
    rw::a_nowait_writer_keeps_no_intent_and_a_withdrawn_one_lets_readers_in(&h).await;
    rw::generations_grow_per_write_and_readers_read_the_last(&h).await;
    rw::an_expired_writer_poisons_the_next_grant_and_expired_readers_go(&h).await;
    rw::a_downgrade_leaves_the_writer_reading(&h).await;
    rw::many_readers_at_once_are_answered_each(&h).await;
    rw::rw_sequences_match_the_store_model(&h).await;
    sem::permits_go_up_to_the_count_with_increasing_fences(&h).await;
    sem::waiters_keep_their_places_in_arrival_order(&h).await;
    sem::another_count_is_refused_while_the_name_is_in_use(&h).await;
    sem::expired_permits_and_places_go(&h).await;
    sem::many_contenders_at_once_get_the_count_exactly(&h).await;
    sem::a_place_left_while_others_wait_wakes_them(&h).await;
    sem::sem_sequences_match_the_store_model(&h).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grants_wait_for_a_replica_and_unconfirmed_ones_are_given_back() {
    let master = Server::start();
    let replica = Server::replica_of(master.port());
    wait_for_link(master.port());
    let prefix = fresh_prefix();
    let store = open(&format!("{}/0?{WAITING}", master.url()), &prefix).await;

    // Confirmed: the fence is on the replica by the time the holder sees it.
    let l = lock(&store, "cart");
    for expected in 1..=3 {
        let guard = l.acquire().await.expect("acquire");
        assert_eq!(guard.fencing_token().get(), expected);
        assert_eq!(stored(replica.port(), &format!("{prefix}fence:lock:cart")), Some(expected.to_string()));
        guard.release().await.expect("release");
    }
    LockCalls::acquire(&store, "lock:kept", "w-kept", Duration::from_secs(30)).await.expect("a confirmed grant");
    // Leases that lapse before the replica stops: asked again with the same token, they are new
    // grants (given back below), not renewals.
    let short = Duration::from_millis(100);
    ReadWriteCalls::acquire_read(&store, "rwlock:lapsed-read", "w-lapsed", short).await.expect("a read");
    ReadWriteCalls::acquire_write(&store, "rwlock:lapsed-write", "w-lapsed", short, false).await.expect("a write");
    SemaphoreCalls::acquire(&store, "semaphore:lapsed", "w-lapsed", short, 2, None).await.expect("a permit");
    tokio::time::sleep(Duration::from_millis(300)).await;

    // The replica stops acknowledging.
    replica.freeze();
    let e = LockCalls::acquire(&store, "lock:new", "w-new", Duration::from_secs(30)).await.expect_err("unconfirmed");
    assert_eq!(e.kind(), BackendErrorKind::Unavailable, "{e}");
    assert!(e.to_string().contains("min_replicas") && e.to_string().contains("given back"), "{e}");
    assert_eq!(stored(master.port(), &format!("{prefix}lock:new")), None, "the new grant was given back");

    let e = LockCalls::acquire(&store, "lock:kept", "w-kept", Duration::from_secs(30)).await.expect_err("a renewal");
    assert!(e.to_string().contains("renewal is not counted"), "{e}");
    let held = stored(master.port(), &format!("{prefix}lock:kept")).expect("the renewed lease is kept");
    assert!(held.ends_with(":w-kept"), "{held}");

    let lead = || {
        LeaderElectionCalls::acquire_or_renew(&store, "leader:app", "w-lead", Duration::from_secs(30), &Metadata::new())
    };
    let e = lead().await.expect_err("an unconfirmed lead");
    assert!(e.to_string().contains("given back"), "{e}");
    let record: Option<String> =
        query(master.port(), redis::cmd("HGET").arg(format!("{prefix}le_us:leader:app")).arg("holder")).expect("hget");
    assert_eq!(record, None, "the lead was given back");

    let e = ReadWriteCalls::acquire_write(&store, "rwlock:doc", "w-write", Duration::from_secs(30), false)
        .await
        .expect_err("an unconfirmed write");
    assert!(e.to_string().contains("given back"), "{e}");
    let e = ReadWriteCalls::acquire_read(&store, "rwlock:doc", "w-read", Duration::from_secs(30))
        .await
        .expect_err("an unconfirmed read");
    assert!(e.to_string().contains("given back"), "{e}");
    let writer: Option<String> =
        query(master.port(), redis::cmd("HGET").arg(format!("{prefix}rwlock:doc")).arg("w")).expect("hget");
    let readers: usize = query(master.port(), redis::cmd("ZCARD").arg(format!("{prefix}rwlock:doc:r"))).expect("zcard");
    assert_eq!((writer, readers), (None, 0), "the write and the read were given back");
    let e = SemaphoreCalls::acquire(&store, "semaphore:pool", "w-permit", Duration::from_secs(30), 2, None)
        .await
        .expect_err("an unconfirmed permit");
    assert!(e.to_string().contains("given back"), "{e}");
    let holders: usize =
        query(master.port(), redis::cmd("ZCARD").arg(format!("{prefix}semaphore:pool:h"))).expect("zcard");
    assert_eq!(holders, 0, "the permit was given back");

    let lapsed = [
        ReadWriteCalls::acquire_read(&store, "rwlock:lapsed-read", "w-lapsed", short).await.map(drop),
        ReadWriteCalls::acquire_write(&store, "rwlock:lapsed-write", "w-lapsed", short, false).await.map(drop),
        SemaphoreCalls::acquire(&store, "semaphore:lapsed", "w-lapsed", short, 2, None).await.map(drop),
    ];
    for answer in lapsed {
        let e = answer.expect_err("an unconfirmed grant after a lapse");
        assert!(e.to_string().contains("given back"), "a lapsed lease taken again is new: {e}");
    }

    let e = store.claim("task:nightly", 1_700_000_000.0).await.expect_err("an unconfirmed claim");
    assert!(e.to_string().contains("skipped"), "{e}");

    // Back: grants are confirmed again, and the given-back name is free.
    replica.thaw();
    let fence = LockCalls::acquire(&store, "lock:new", "w-new", Duration::from_secs(30)).await.expect("confirmed");
    assert_eq!(fence.map(|f| f.get()), Some(2), "above the fence of the grant given back");
    let record = lead().await.expect("a confirmed lead");
    assert_eq!(record.holder, "w-lead");
    // The unconfirmed claim stands on the master: that run stays skipped, never run twice.
    assert!(!store.claim("task:nightly", 1_700_000_000.0).await.expect("the same run"));
    assert!(store.claim("task:nightly", 1_700_000_060.0).await.expect("a confirmed claim"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_that_cannot_hold_are_refused_by_name() {
    let e = RedisOptions::from_url("redis://h/0?min_replicas=one").expect_err("not a number");
    assert_eq!(e.field_name(), Some("min_replicas"));
    let e = RedisOptions::from_url("redis://h/0?min_replicas=1&replica_timeout=5").expect_err("not below the command");
    assert_eq!(e.field_name(), Some("replica_timeout"));
    let e = RedisOptions::from_url("redis://h/0?replica_timeout=0").expect_err("zero");
    assert_eq!(e.field_name(), Some("replica_timeout"));
    let e = RedisOptions::from_url("redis+cluster://h1:7000,h2:7001?prefix=%7Bapp%7D:&min_replicas=1")
        .expect_err("cluster");
    assert_eq!(e.field_name(), Some("min_replicas"));
    assert!(RedisOptions::from_url("redis://h/0?min_replicas=2&replica_timeout=0.25&command_timeout=1").is_ok());
    // Unset, it stays below a short command timeout.
    let short =
        RedisOptions::from_url("redis://h/0?min_replicas=1").expect("url").command_timeout(Duration::from_millis(600));
    assert!(short.validate().is_ok(), "{:?}", short.validate());
}

/// Fences across a failover to a replica that missed the last grants (frozen and cut off while
/// they were made, so deterministic): without `min_replicas` the promoted replica's counter is behind, the
/// fence goes backwards and the holder's `Lock` reports `FenceRegression`; with it, the grants
/// the replica missed were refused, and the first fence after the failover is above every one
/// handed out before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_regresses_fences_only_without_min_replicas() {
    for waiting in [false, true] {
        let mut group = Group::start(2, 3);
        let prefix = fresh_prefix();
        let params = if waiting { format!("?{WAITING}") } else { String::new() };
        let store = open(&format!("{}{params}", group.url()), &prefix).await;
        let l = lock(&store, "ledger");
        let fence_key = format!("{prefix}fence:lock:ledger");

        let first = l.acquire().await.expect("acquire");
        first.release().await.expect("release");
        let old = group.master_port();
        let replicas: Vec<u16> = group.servers.iter().map(|s| s.port()).filter(|&p| p != old).collect();
        for &replica in &replicas {
            wait_for(replica, &fence_key, "1");
        }

        // The replicas stop, and the master drops their links: what it writes from now on (and
        // what was on its way) never reaches them.
        for &replica in &replicas {
            group.server(replica).freeze();
        }
        let _: redis::Value =
            query(old, redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("replica")).expect("kill links");
        let mut highest = 1;
        for _ in 0..2 {
            match l.acquire().await {
                Ok(guard) => {
                    highest = guard.fencing_token().get();
                    guard.release().await.expect("release");
                }
                Err(e) => assert!(waiting && cause(&e).contains("min_replicas"), "{e}: {}", cause(&e)),
            }
        }
        assert_eq!(highest, if waiting { 1 } else { 3 }, "grants no replica confirmed");

        group.server(old).kill9();
        for &replica in &replicas {
            group.server(replica).thaw();
        }
        let promoted = group.wait_for_new_master(old, Duration::from_secs(30));
        assert!(replicas.contains(&promoted), "{promoted}");

        let after = acquire_after_failover(&l).await;
        if waiting {
            let fence = after.expect("a grant on the promoted replica");
            assert!(fence > highest, "fence {fence} after the failover, {highest} before");
        } else {
            let e = after.expect_err("the fence went backwards");
            let kind = e.backend_error().map(|b| b.kind());
            assert_eq!(kind, Some(BackendErrorKind::FenceRegression), "{e}: {}", cause(&e));
            assert!(cause(&e).contains("fencing token 2 after 3"), "{}", cause(&e));
            assert_eq!(stored(promoted, &fence_key).as_deref(), Some("2"), "the promoted replica's counter");
        }
    }
}

/// The first acquire through `l` that is not refused for the failover itself (a connection the
/// old master dropped, a replica still read-only): its fence, or the error that ended it.
async fn acquire_after_failover(l: &Lock<Tokio>) -> Result<u64, tenure::Error> {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        match l.acquire_timeout(Duration::from_secs(2)).await {
            Ok(guard) => {
                let fence = guard.fencing_token().get();
                guard.release().await.expect("release");
                return Ok(fence);
            }
            Err(e) if e.backend_error().is_some_and(|b| b.kind() == BackendErrorKind::FenceRegression) => {
                return Err(e);
            }
            Err(e) => assert!(std::time::Instant::now() < deadline, "no grant after the failover: {e}: {}", cause(&e)),
        }
    }
}

/// What the store said, under the error the caller sees.
fn cause(e: &tenure::Error) -> String {
    e.backend_error().map(ToString::to_string).unwrap_or_default()
}

/// Waits until the master on `port` has a replica online.
fn wait_for_link(port: u16) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let info: String = query(port, redis::cmd("INFO").arg("replication")).unwrap_or_default();
        if info.lines().any(|l| l.starts_with("slave") && l.contains("state=online")) {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "the replica never came online");
        std::thread::sleep(Duration::from_millis(20));
    }
}
