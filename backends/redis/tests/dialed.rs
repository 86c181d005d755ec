//! A backend whose connection is dialed through a runtime of the test's own ([`Net`], as the
//! Python package dials onto its event loop), one that opens tokio sockets and can declare its
//! connection dead: the whole
//! conformance suite, a redial when the host's loop is gone (a waiter still hears releases
//! afterwards), and a redial after the server was killed and restarted.

mod common;

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tenure::BackendErrorKind;
use tenure::backend::LockCalls;
use tenure::net::{Net, NetFuture, Socket};
use tenure_conformance::faults::Server as _;
use tenure_conformance::{Clock, Harness, Leases, Store};
use tenure_redis::{RedisBackend, RedisOptions};

use common::server::Server;

/// Opens tokio sockets; every connection it made dies when `kill` is called.
#[derive(Default)]
struct TestDial {
    dials: AtomicUsize,
    generation: Arc<AtomicUsize>,
}

impl TestDial {
    /// Declares every connection made so far dead (as a closed event loop would be).
    fn kill(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
    }
}

impl Net for TestDial {
    fn connect_tcp(&self, host: &str, port: u16, timeout: Duration) -> NetFuture<io::Result<Socket>> {
        self.dials.fetch_add(1, Ordering::SeqCst);
        let address = (host.to_owned(), port);
        let generation = self.generation.clone();
        let born = generation.load(Ordering::SeqCst);
        Box::pin(async move {
            let stream = tokio::time::timeout(timeout, tokio::net::TcpStream::connect(address))
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "connect timed out"))??;
            let spawn = |driver| drop(tokio::spawn(driver));
            Ok(Socket::new(stream, spawn, move || generation.load(Ordering::SeqCst) == born))
        })
    }

    fn connect_unix(&self, _: &std::path::Path, _: Duration) -> NetFuture<io::Result<Socket>> {
        Box::pin(async { Err(io::Error::new(io::ErrorKind::Unsupported, "the test dials TCP only")) })
    }

    fn sleep(&self, duration: Duration) -> NetFuture<()> {
        Box::pin(tokio::time::sleep(duration))
    }
}

async fn open(url: &str, prefix: &str, dial: Arc<TestDial>) -> RedisBackend {
    let options = RedisOptions::from_url(url).expect("url").prefix(prefix).command_timeout(Duration::from_millis(500));
    options.open(dial).await.unwrap_or_else(|e| panic!("cannot reach Redis at {url}: {e}"))
}

fn dialed() -> Harness {
    Harness {
        name: "redis dialed",
        clock: Clock::Real { quantum: Duration::from_millis(100) },
        leases: Leases::AS_ASKED,
        make: Box::new(|| {
            Box::pin(async {
                let store = open(&common::url(), &common::fresh_prefix(), Arc::default()).await;
                Store::of(store)
            })
        }),
    }
}

tenure_conformance::conformance_tests!(dialed());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_connection_is_dialed_again_and_waiters_still_hear_releases() {
    let dial = Arc::new(TestDial::default());
    let prefix = common::fresh_prefix();
    let store = open(&common::url(), &prefix, dial.clone()).await;
    let other = common::open_at(&common::url(), &prefix).await;
    assert_eq!(dial.dials.load(Ordering::SeqCst), 1, "one dial at open");
    common::pushed_handoff(&other, &store).await;

    dial.kill();
    assert!(!store.locked("lock:x").await.expect("answers on a new connection"));
    assert_eq!(dial.dials.load(Ordering::SeqCst), 2, "dialed again once");
    // The new connection subscribes afresh: a waiter on it is woken by a release.
    common::pushed_handoff(&other, &store).await;
    assert_eq!(dial.dials.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_and_restarted_server_is_dialed_again() {
    let mut server = Server::start();
    let dial = Arc::new(TestDial::default());
    let store = open(&server.url(), "", dial.clone()).await;
    assert!(store.acquire("lock:crash", "t1", Duration::from_secs(30)).await.expect("acquire").is_some());
    server.kill9();
    let e = store.locked("lock:crash").await.expect_err("down");
    assert!(matches!(e.kind(), BackendErrorKind::Unavailable | BackendErrorKind::Timeout), "{e}");
    server.restart();
    let mut answer = store.owned("lock:crash", "t1").await;
    for _ in 0..100 {
        if answer.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        answer = store.owned("lock:crash", "t1").await;
    }
    assert!(answer.expect("answers after the restart"), "the lease survived the crash");
    assert!(dial.dials.load(Ordering::SeqCst) >= 2, "dialed again");
    assert!(store.release("lock:crash", "t1").await.expect("release"));
}
