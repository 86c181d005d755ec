//! The Redis store under faults, on a server each test starts for itself: frozen (`SIGSTOP`),
//! killed (`kill -9`) and restarted while locks are held and waiters wait. Calls fail within
//! their timeouts with the right errors, the backend recovers by itself, and no two holders of a
//! name ever overlap while both hold valid leases, with fencing tokens climbing throughout.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tenure::BackendErrorKind;
use tenure::backend::LockBackend;
use tenure_redis::{RedisBackend, RedisOptions};
use tenure_tokio::{Lock, Tokio};

use common::server::Server;

async fn open(server: &Server, command_timeout: Duration) -> RedisBackend {
    let options = RedisOptions::from_url(&server.url()).expect("url").command_timeout(command_timeout);
    options.open().await.expect("open")
}

fn lock(store: &RedisBackend, name: &str, lease: Duration, backend_timeout: Duration) -> Lock {
    Lock::builder(name, Tokio::current())
        .backend(store.clone())
        .lease_duration(lease)
        .backend_timeout(backend_timeout)
        .retry_interval(Duration::from_millis(100))
        .env_load(false)
        .build()
        .expect("a lock")
}

/// Retries `locked` until the store answers again, for up to 10 s.
async fn until_answering(store: &RedisBackend) -> Duration {
    let start = Instant::now();
    loop {
        match store.locked("lock:probe").await {
            Ok(_) => return start.elapsed(),
            Err(e) if start.elapsed() < Duration::from_secs(10) => {
                assert!(
                    matches!(e.kind(), BackendErrorKind::Timeout | BackendErrorKind::Unavailable),
                    "while recovering: {e}"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("the store did not come back: {e}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_server_fails_calls_within_their_timeouts_then_recovers() {
    let server = Server::start();
    let store = open(&server, Duration::from_millis(700)).await;
    let backend_timeout = Duration::from_millis(300);
    let held = lock(&store, "frozen", Duration::from_secs(30), backend_timeout).acquire().await.expect("held");
    server.freeze();

    // Through a lock: bounded by its backend_timeout, reported as a timeout.
    let start = Instant::now();
    let e =
        lock(&store, "frozen", Duration::from_secs(30), backend_timeout).acquire_nowait().await.expect_err("frozen");
    let took = start.elapsed();
    assert!(took < backend_timeout + Duration::from_millis(700), "failed after {took:?}");
    let kind = e.backend_error().map(tenure::BackendError::kind);
    assert_eq!(kind, Some(BackendErrorKind::Timeout), "{e}");

    // Straight to the backend: bounded by the command timeout.
    let start = Instant::now();
    let e = store.locked("lock:frozen").await.expect_err("frozen");
    assert_eq!(e.kind(), BackendErrorKind::Timeout, "{e}");
    assert!(start.elapsed() < Duration::from_millis(700 + 700), "failed after {:?}", start.elapsed());

    server.thaw();
    until_answering(&store).await;
    assert!(store.owned("lock:frozen", held.handle().token.as_str()).await.expect("owned"), "still held");
    held.release().await.expect("released after the thaw");
    assert!(!store.locked("lock:frozen").await.expect("locked"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_and_restarted_server_keeps_leases_and_fences_and_the_backend_reconnects() {
    let mut server = Server::start();
    let store = open(&server, Duration::from_millis(500)).await;
    let held =
        lock(&store, "crash", Duration::from_secs(30), Duration::from_millis(400)).acquire().await.expect("held");
    let fence = held.fencing_token().get();
    server.kill9();
    let e = store.locked("lock:crash").await.expect_err("down");
    assert!(matches!(e.kind(), BackendErrorKind::Unavailable | BackendErrorKind::Timeout), "{e}");
    server.restart();
    until_answering(&store).await;
    // The lease survived (written with fsync), so a rival is refused and the holder still owns it.
    let rival = lock(&store, "crash", Duration::from_secs(30), Duration::from_millis(400));
    assert!(matches!(rival.acquire_nowait().await, Err(tenure::Error::WouldBlock { .. })));
    held.release().await.expect("released after the restart");
    let next = rival.acquire_nowait().await.expect("free after release");
    assert_eq!(next.fencing_token().get(), fence + 1, "the fence counter survived the crash");
}

/// One critical section as its holder saw it.
#[derive(Clone, Copy, Debug)]
struct Section {
    start: Instant,
    end: Instant,
    fence: u64,
    /// The lease was valid (locally, by the holder's conservative clock) at both ends.
    valid: bool,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_kills_restarts_and_freezes_no_two_valid_holders_overlap() {
    let server = Arc::new(Mutex::new(Server::start()));
    let url = server.lock().expect("server").url();
    let sections = Arc::new(Mutex::new(Vec::<Section>::new()));
    let begin = Instant::now();
    let run_for = Duration::from_secs(7);
    let mut workers = Vec::new();
    for _ in 0..3 {
        let options = RedisOptions::from_url(&url).expect("url").command_timeout(Duration::from_millis(500));
        let store = options.open().await.expect("open");
        let sections = sections.clone();
        workers.push(tokio::spawn(async move {
            let lock = lock(&store, "chaos", Duration::from_millis(800), Duration::from_millis(300));
            while begin.elapsed() < run_for {
                match lock.acquire_timeout(Duration::from_secs(2)).await {
                    Ok(guard) => {
                        let start = Instant::now();
                        let valid_at_start = guard.is_valid();
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        let end = Instant::now();
                        let valid = valid_at_start && guard.is_valid();
                        let fence = guard.fencing_token().get();
                        sections.lock().expect("sections").push(Section { start, end, fence, valid });
                        let _ = guard.release().await;
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                }
            }
        }));
    }
    // The chaos: a crash with a restart, a freeze longer than the lease, a crash with an
    // immediate restart; then calm, to see the workers recover.
    let at = |s: f64| tokio::time::sleep_until((begin + Duration::from_secs_f64(s)).into());
    at(1.0).await;
    server.lock().expect("server").kill9();
    at(1.4).await;
    server.lock().expect("server").restart();
    at(2.5).await;
    server.lock().expect("server").freeze();
    at(3.7).await;
    server.lock().expect("server").thaw();
    at(4.5).await;
    server.lock().expect("server").restart();
    let calm = begin.elapsed();
    for worker in workers {
        worker.await.expect("worker");
    }

    let mut valid: Vec<Section> = sections.lock().expect("sections").iter().copied().filter(|s| s.valid).collect();
    valid.sort_by_key(|s| s.start);
    assert!(valid.len() >= 10, "only {} valid sections", valid.len());
    for pair in valid.windows(2) {
        assert!(pair[0].end <= pair[1].start, "overlapping valid holders: {:?} and {:?}", pair[0], pair[1]);
        assert!(pair[0].fence < pair[1].fence, "fences not increasing: {:?} then {:?}", pair[0], pair[1]);
    }
    let after = valid.iter().filter(|s| s.start.duration_since(begin) > calm).count();
    assert!(after >= 3, "only {after} sections after the last restart: the workers did not recover");
}
