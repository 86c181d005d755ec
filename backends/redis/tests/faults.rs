//! The Redis store under faults, on a server each test starts for itself: frozen (`SIGSTOP`),
//! killed (`kill -9`) and restarted while locks are held and waiters wait. Calls fail within
//! their timeouts with the right errors, the backend recovers by itself, and no two holders of a
//! name ever overlap while both hold valid leases, with fencing tokens climbing throughout.

mod common;

use std::sync::Mutex;
use std::time::Duration;

use tenure_conformance::{Store, chaos, faults};
use tenure_redis::RedisOptions;

use common::server::Server;

async fn open(url: &str, command_timeout: Duration) -> Store {
    let options = RedisOptions::from_url(url).expect("url").command_timeout(command_timeout);
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
async fn under_kills_restarts_and_freezes_no_two_valid_holders_overlap() {
    let server = Mutex::new(Server::start());
    let url = server.lock().expect("server").url();
    let mut stores = Vec::new();
    for _ in 0..3 {
        stores.push(open(&url, Duration::from_millis(500)).await);
    }
    chaos::under_crashes_and_freezes_no_two_valid_holders_overlap(&server, stores).await;
}
