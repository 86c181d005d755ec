//! The PostgreSQL store under faults, on a cluster each test makes for itself (`initdb`, its own
//! port): frozen (`SIGSTOP` to every server process), stopped, killed (`kill -9`) and restarted
//! while locks are held and waiters wait. Calls fail within their timeouts with the right
//! errors, the backend reconnects by itself, and no two holders of a name ever overlap while
//! both hold valid leases, with fencing tokens climbing throughout. Also: TLS, checked and not.

mod common;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use tenure::BackendErrorKind;
use tenure_conformance::faults::Server as _;
use tenure_conformance::{Store, chaos, faults};
use tenure_postgres::{PostgresBackend, PostgresOptions};
use tenure_tokio::Tokio;

use common::server::Server;
use tenure::backend::LockCalls;

async fn open(url: &str, command_timeout: Duration) -> Store {
    let options = PostgresOptions::from_url(url)
        .expect("url")
        .command_timeout(command_timeout)
        .connect_timeout(Duration::from_millis(700));
    Store::of(options.open(tenure_tokio::Tokio::current()).await.expect("open"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_server_fails_calls_within_their_timeouts_then_recovers() {
    let server = Server::start();
    let store = open(&server.url(), Duration::from_millis(700)).await;
    faults::a_frozen_server_fails_calls_within_their_timeouts(&server, &store, Duration::from_millis(700)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_lease_is_renewed_and_lost_when_the_server_freezes() {
    let server = Server::start();
    let store = open(&server.url(), Duration::from_millis(300)).await;
    faults::a_kept_lease_is_renewed_and_lost_when_the_server_freezes(&server, &store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_and_restarted_server_keeps_leases_and_fences_and_the_backend_reconnects() {
    let mut server = Server::start();
    let store = open(&server.url(), Duration::from_millis(500)).await;
    faults::a_crashed_server_keeps_leases_and_fences(&mut server, &store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_server_is_reported_and_a_waiter_hears_releases_after_it_is_back() {
    let mut server = Server::start();
    let url = server.url();
    let (store, other) = (open(&url, Duration::from_millis(500)).await, open(&url, Duration::from_millis(500)).await);
    server.stop();
    let e = store.lock.locked("lock:x").await.expect_err("stopped");
    assert_eq!(e.kind(), BackendErrorKind::Unavailable, "{e}");
    let start = Instant::now();
    let e = store.lock.locked("lock:x").await.expect_err("still stopped");
    assert!(e.to_string().contains("127.0.0.1"), "a failed reconnection names the server: {e}");
    assert!(start.elapsed() < Duration::from_secs(2), "reconnecting took {:?}", start.elapsed());
    server.restart();
    faults::until_answering(store.lock.as_ref()).await;
    faults::until_answering(other.lock.as_ref()).await;
    // Both connections LISTEN again: a release still wakes a waiter at once.
    tenure_conformance::push::handoff(&store, &other, Tokio::current()).await;
}

#[tokio::test]
async fn tls_is_used_and_checked_as_sslmode_says() {
    let server = Server::with_tls();
    let ca = server.ca().display().to_string();
    let at = |host: &str, params: &str| server.url().replace("127.0.0.1", host) + params;
    let ssl_in_use = async |url: String| {
        let store =
            PostgresBackend::open(&url, tenure_tokio::Tokio::current()).await.unwrap_or_else(|e| panic!("{url}: {e}"));
        assert!(LockCalls::acquire(&store, "lock:tls", "w", Duration::from_secs(1)).await.expect("call").is_some());
        LockCalls::release(&store, "lock:tls", "w").await.expect("release");
        let ssl = common::psql(&server.url(), "SELECT count(*) FROM pg_stat_ssl WHERE ssl AND pid <> pg_backend_pid()");
        ssl.parse::<u32>().expect("count")
    };
    assert!(ssl_in_use(at("127.0.0.1", "?sslmode=require")).await >= 1, "require: encrypted");
    assert!(ssl_in_use(at("localhost", &format!("?sslmode=verify-full&sslrootcert={ca}"))).await >= 1);
    assert!(ssl_in_use(at("127.0.0.1", &format!("?sslmode=verify-ca&sslrootcert={ca}"))).await >= 1);
    // The system's roots do not know the test's authority: refused, and said so; `require` with
    // a root certificate checks the chain too (libpq's rule).
    let e = PostgresBackend::open(&at("localhost", "?sslmode=verify-full"), tenure_tokio::Tokio::current())
        .await
        .expect_err("unknown authority");
    assert!(e.to_string().to_lowercase().contains("certificate"), "{e}");
    let other_roots = "/etc/ssl/certs/ca-certificates.crt";
    let e = PostgresBackend::open(
        &at("127.0.0.1", &format!("?sslmode=require&sslrootcert={other_roots}")),
        tenure_tokio::Tokio::current(),
    )
    .await
    .expect_err("require with other roots");
    assert!(e.to_string().to_lowercase().contains("certificate"), "{e}");
    // Without TLS on the server, `require` refuses and `prefer` goes on in the clear.
    let plain = Server::start();
    let e = PostgresBackend::open(&format!("{}?sslmode=require", plain.url()), tenure_tokio::Tokio::current())
        .await
        .expect_err("no TLS");
    assert!(e.to_string().to_lowercase().contains("tls"), "{e}");
    PostgresBackend::open(&format!("{}?sslmode=prefer", plain.url()), tenure_tokio::Tokio::current())
        .await
        .expect("prefer without TLS");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_kills_restarts_and_freezes_no_two_valid_holders_overlap() {
    let server = Mutex::new(Server::start());
    let url = server.lock().expect("server").url();
    let mut stores = Vec::new();
    for _ in 0..3 {
        stores.push(open(&url, Duration::from_millis(500)).await);
    }
    chaos::under_crashes_and_freezes_no_two_valid_holders_overlap(&server, stores).await;
}
