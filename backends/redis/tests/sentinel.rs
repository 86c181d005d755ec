//! The store behind Redis Sentinel, on a master, replicas and sentinels each test starts for
//! itself: the conformance suite through a `redis+sentinel://` URL; locks, task locks and
//! elections with pushed wake-ups; a master killed (`kill -9`) or frozen (`SIGSTOP`) past the
//! lease while a lock is held and kept alive — the sentinels promote a replica, the backend finds
//! it, and no two holders ever believe they hold at one instant.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tenure::backend::LockCalls;
use tenure::{BackendErrorKind, Inspect, TaskLock};
use tenure_conformance::faults::{self, Server as _};
use tenure_conformance::{Clock, Harness, Leases, Store, push};
use tenure_redis::{RedisBackend, RedisOptions};
use tenure_tokio::Tokio;

use common::fresh_prefix;
use common::sentinel::{Group, MASTER, query};

async fn open(url: &str, prefix: &str, command_timeout: Duration) -> RedisBackend {
    let options = RedisOptions::from_url(url).expect("url").prefix(prefix).command_timeout(command_timeout);
    options.open(Tokio::current()).await.unwrap_or_else(|e| panic!("cannot reach the master through {url}: {e}"))
}

fn sentinel_harness() -> Harness {
    let group = Arc::new(Group::start(0, 1));
    Harness {
        name: "redis sentinel",
        clock: Clock::Real { quantum: Duration::from_millis(100) },
        leases: Leases::AS_ASKED,
        make: Box::new(move || {
            let url = group.url();
            Box::pin(async move { Store::of(open(&url, &fresh_prefix(), Duration::from_secs(5)).await) })
        }),
    }
}

tenure_conformance::conformance_tests!(sequential sentinel_harness());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_task_locks_and_elections_run_through_the_sentinels_with_pushed_wakeups() {
    let group = Group::start(2, 3);
    let prefix = fresh_prefix();
    let (a, b) = (
        open(&group.url(), &prefix, Duration::from_secs(2)).await,
        open(&group.url(), &prefix, Duration::from_secs(2)).await,
    );
    common::pushed_handoff(&a, &b).await;
    push::a_follower_takes_over_as_soon_as_the_leader_releases(&Store::of(a.clone()), &Store::of(b.clone())).await;

    let task = |store: &RedisBackend| {
        TaskLock::builder("nightly", Tokio::current())
            .backend(store.clone())
            .min_hold_duration(Duration::from_secs(30))
            .lease_duration(Duration::from_secs(60))
            .env_load(false)
            .build()
            .expect("a task lock")
    };
    assert_eq!(task(&a).run(async { 7 }).await.expect("ran"), Some(7));
    assert_eq!(task(&b).run(async { 8 }).await.expect("refused within the min hold"), None);

    // The status a `tenure status` shows, read through the sentinels' master.
    LockCalls::acquire(&a, "lock:listed", "w1:task:0.1", Duration::from_secs(30)).await.expect("acquire");
    let states = b.lock_states(Vec::new()).await.expect("inspection");
    let keys: Vec<&str> = states.iter().map(|s| s.key.as_str()).collect();
    assert!(keys.contains(&"lock:listed"), "{keys:?}");
    // It is on the master the sentinels name, in grelmicro's layout.
    let value: String = query(group.master_port(), redis::cmd("GET").arg(format!("{prefix}lock:listed"))).expect("get");
    assert!(value.ends_with(":w1:task:0.1"), "{value}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_sentinel_settings_fail_to_open_with_a_clear_error() {
    let group = Group::start(0, 1);
    let unknown = group.url().replace(MASTER, "nosuchmaster");
    let options = RedisOptions::from_url(&unknown).expect("url").connect_timeout(Duration::from_millis(500));
    let e = options.open(Tokio::current()).await.expect_err("no such master");
    assert!(e.to_string().contains("nosuchmaster"), "{e}");
    // Sentinels that run with requirepass: refused without their password, reached with it.
    let guarded = Group::with_sentinel_password(0, 1, "s3cret");
    let options = RedisOptions::from_url(&guarded.url()).expect("url").connect_timeout(Duration::from_millis(500));
    let e = options.open(Tokio::current()).await.expect_err("no sentinel password");
    assert!(e.to_string().contains("no sentinel named the master"), "{e}");
    let store =
        open(&format!("{}?sentinel_password=s3cret", guarded.url()), &fresh_prefix(), Duration::from_secs(2)).await;
    let fence = LockCalls::acquire(&store, "lock:guarded", "w1", Duration::from_secs(5)).await.expect("acquire");
    assert_eq!(fence.map(|f| f.get()), Some(1));
    let wrong = RedisOptions::from_url(&format!("{}?sentinel_password=n0tThis", guarded.url())).expect("url");
    let e =
        wrong.connect_timeout(Duration::from_millis(500)).open(Tokio::current()).await.expect_err("a wrong password");
    assert!(!e.to_string().contains("n0tThis"), "the password is not shown: {e}");

    let nobody = "redis+sentinel://:hunter2@127.0.0.1:1/mymaster?sentinel_password=s3cret";
    let options = RedisOptions::from_url(nobody).expect("url").connect_timeout(Duration::from_millis(500));
    let e = options.open(Tokio::current()).await.expect_err("no sentinel");
    let text = e.to_string();
    assert!(text.contains("127.0.0.1:1"), "{text}");
    assert!(!text.contains("hunter2") && !text.contains("s3cret"), "{text}");
}

/// Kills the master while `kept` holds a lease kept alive and a rival keeps trying: the sentinels
/// promote a replica, the backend finds it, and the rival is granted only once the holder's
/// validity has run out (if the promoted replica missed the lease) or never (if it has it, the
/// holder renews there). Prints the timeline: killed → new master named → first grant after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_master_is_failed_over_and_no_two_holders_overlap() {
    let mut group = Group::start(2, 3);
    let lease = Duration::from_secs(2);
    let (_holder, rival, kept) = kept_beside_a_rival(&group, "failover", lease, Duration::from_millis(400)).await;
    let fence = kept.fencing_token().get();

    let old = group.master_port();
    let killed = Instant::now();
    group.server(old).kill9();
    let probe = {
        let rival = rival.lock.clone();
        tokio::spawn(async move {
            loop {
                if LockCalls::acquire(rival.as_ref(), "lock:probe", "probe", Duration::from_secs(5)).await.is_ok() {
                    return Instant::now();
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };
    let new = group.wait_for_new_master(old, Duration::from_secs(30));
    let promoted = Instant::now();
    let first_grant = tokio::time::timeout(Duration::from_secs(30), probe).await.expect("a grant").expect("probe");
    eprintln!(
        "failover: master {old} killed; {new} named master after {:?}; first grant through the backend after {:?}",
        promoted - killed,
        first_grant - killed
    );

    match rival_takes_over_only_from_a_holder_that_lost(&rival, "failover", lease, &kept).await {
        None => {
            assert_eq!(kept.fencing_token().get(), fence);
            kept.stop().release().await.expect("released on the new master");
        }
        Some(next) => {
            eprintln!(
                "the holder lost the lease over the failover: fence {} after {fence}",
                next.fencing_token().get()
            );
        }
    }
}

/// Freezes the master past the lease: the sentinels promote a replica; calls through the
/// backend fail within the command timeout while no master answers, then reach the new one; the
/// old master, thawed, is made a replica — and the holder it froze with never overlaps another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_master_is_replaced_and_comes_back_as_a_replica() {
    let mut group = Group::start(2, 3);
    let (command_timeout, lease) = (Duration::from_millis(300), Duration::from_millis(1500));
    let (holder, rival, kept) = kept_beside_a_rival(&group, "frozen", lease, command_timeout).await;
    let lost = Arc::new(AtomicBool::new(false));
    let watch = {
        let (lost, ended) = (lost.clone(), kept.lost());
        tokio::spawn(async move {
            ended.await;
            lost.store(true, Ordering::SeqCst);
        })
    };

    let old = group.master_port();
    group.server(old).freeze();
    let start = Instant::now();
    let e = rival.lock.locked("lock:frozen").await.expect_err("no master answers");
    assert!(matches!(e.kind(), BackendErrorKind::Timeout | BackendErrorKind::Unavailable), "{e}");
    assert!(start.elapsed() < command_timeout + Duration::from_millis(700), "failed after {:?}", start.elapsed());

    let new = group.wait_for_new_master(old, Duration::from_secs(30));
    let granted = rival_takes_over_only_from_a_holder_that_lost(&rival, "frozen", lease, &kept).await;

    group.server(old).thaw();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let role: Vec<redis::Value> = query(old, &redis::cmd("ROLE")).unwrap_or_default();
        let role = role.first().and_then(|v| redis::from_redis_value_ref::<String>(v).ok());
        if role.as_deref() == Some("slave") {
            break;
        }
        assert!(Instant::now() < deadline, "the old master did not come back as a replica: {role:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The holder's connection to the old master, now a replica, is dropped; calls reach the new one.
    assert!(faults::until_answering(holder.lock.as_ref()).await < Duration::from_secs(20));
    // …and writes from it land on the new master.
    let fence = LockCalls::acquire(holder.lock.as_ref(), "lock:after-thaw", "t", Duration::from_secs(5)).await;
    assert!(fence.expect("a write after the thaw").is_some());
    match granted {
        Some(next) => {
            tokio::time::timeout(Duration::from_secs(5), watch)
                .await
                .expect("the holder learned it lost")
                .expect("watch");
            assert!(lost.load(Ordering::SeqCst));
            drop(next);
        }
        None => {
            let token = kept.guard().handle().token.clone();
            assert!(holder.lock.owned("lock:frozen", token.as_str()).await.expect("owned"), "renewed on {new}");
            kept.stop().release().await.expect("released on the new master");
        }
    }
}

/// Two stores on `group` (the holder's and a rival's, one prefix), and `name` held by the holder
/// with a lease of `lease`, kept alive; `timeout` bounds each command and each lock call.
async fn kept_beside_a_rival(
    group: &Group,
    name: &str,
    lease: Duration,
    timeout: Duration,
) -> (Store, Store, tenure::KeepAlive<tenure_tokio::LockGuard>) {
    let (url, prefix) = (group.url(), fresh_prefix());
    let holder = Store::of(open(&url, &prefix, timeout).await);
    let rival = Store::of(open(&url, &prefix, timeout).await);
    let guard = faults::lock(&holder, name, lease, timeout).acquire().await.expect("held");
    let kept = guard.keep_alive(Duration::from_secs(3600));
    (holder, rival, kept)
}

/// A rival tries `name` for three leases: if it is granted, `kept` no longer believes it holds
/// (the promoted replica missed the lease, or the holder could not renew in time); if not, `kept`
/// is still valid, renewing on the new master. The rival's guard, if it was granted.
async fn rival_takes_over_only_from_a_holder_that_lost<G: tenure::Keepable>(
    rival: &Store,
    name: &str,
    lease: Duration,
    kept: &tenure::KeepAlive<G>,
) -> Option<tenure_tokio::LockGuard> {
    let rival_lock = faults::lock(rival, name, lease, Duration::from_millis(400));
    let until = Instant::now() + lease * 3;
    while Instant::now() < until {
        match rival_lock.acquire_nowait().await {
            Ok(guard) => {
                let now = tenure::runtime::clock::now();
                assert!(
                    !kept.is_valid(),
                    "two holders at once: the rival was granted fence {} at {now:?} while the holder, fence {}, is valid until {:?}",
                    guard.fencing_token().get(),
                    kept.fencing_token().get(),
                    kept.valid_until()
                );
                assert!(guard.fencing_token() > kept.fencing_token(), "the rival's fence is above the holder's");
                return Some(guard);
            }
            Err(e) => assert!(e.is_would_block() || e.backend_error().is_some(), "{e}"),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(kept.is_valid(), "nobody was granted, so the holder kept renewing");
    None
}

/// `rediss+sentinel://`: sentinels and servers that speak only TLS (replication and the
/// sentinels' own links too). The master is found and used over TLS, checked against a private
/// root (`tls_root_cert=`) or not at all (`#insecure`); a plain URL, a root that did not sign
/// the certificates, or a missing root file fail with an error that says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_master_is_found_and_used_over_tls() {
    let certs = std::env::temp_dir().join(format!("tenure-sentinel-tls-{}", std::process::id()));
    std::fs::create_dir_all(&certs).expect("certs dir");
    let group = Group::with_tls(1, 1, &certs);
    let ca = certs.join("ca.pem").display().to_string();
    for url in [format!("{}?tls_root_cert={ca}", group.url()), format!("{}#insecure", group.url())] {
        let prefix = fresh_prefix();
        let store = open(&url, &prefix, Duration::from_secs(2)).await;
        for expected in 1..=2 {
            let fence = LockCalls::acquire(&store, "lock:tls", "w", Duration::from_secs(5)).await.expect("acquire");
            assert_eq!(fence.map(|f| f.get()), Some(expected), "{url}");
            assert!(LockCalls::release(&store, "lock:tls", "w").await.expect("release"));
        }
        let other = open(&url, &prefix, Duration::from_secs(2)).await;
        common::pushed_handoff(&store, &other).await;
    }

    let refused = |url: String| async move {
        let options = RedisOptions::from_url(&url).expect("url").connect_timeout(Duration::from_millis(800));
        options.open(Tokio::current()).await.expect_err(&url).to_string()
    };
    let plain = refused(group.url().replacen("rediss+sentinel", "redis+sentinel", 1)).await;
    assert!(plain.contains("no sentinel named the master"), "{plain}");
    let stranger = std::env::temp_dir().join(format!("tenure-sentinel-tls-other-{}", std::process::id()));
    std::fs::create_dir_all(&stranger).expect("other certs dir");
    tenure_conformance::tls::certificates(&stranger);
    let untrusted = refused(format!("{}?tls_root_cert={}", group.url(), stranger.join("ca.pem").display())).await;
    assert!(untrusted.to_lowercase().contains("certificate"), "{untrusted}");
    let missing = RedisOptions::from_url(&format!("{}?tls_root_cert=/nonexistent/ca.pem", group.url())).expect("url");
    match missing.open(Tokio::current()).await.expect_err("no such root file") {
        tenure_store::OpenError::Settings(e) => {
            assert_eq!(e.field_name(), Some("tls_root_cert"));
            assert!(e.to_string().contains("/nonexistent/ca.pem"), "{e}");
        }
        other => panic!("not a settings error: {other}"),
    }
    let _ = std::fs::remove_dir_all(&stranger);
    drop(group);
    let _ = std::fs::remove_dir_all(&certs);
}
