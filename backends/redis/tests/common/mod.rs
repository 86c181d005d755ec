//! Shared by the Redis tests: the server of this machine, fresh key prefixes, raw commands.

#![allow(dead_code, unreachable_pub)]

use std::hash::{BuildHasher, RandomState};
use std::time::Duration;

use tenure_redis::{RedisBackend, RedisOptions};

/// The shared server (`TENURE_REDIS_URL`, default `redis://127.0.0.1:6379`).
pub fn url() -> String {
    std::env::var("TENURE_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// A key prefix no other test or run uses.
pub fn fresh_prefix() -> String {
    format!("tenure-test:{:016x}:", RandomState::new().hash_one(std::time::SystemTime::now()))
}

/// A backend on `url` with the key prefix `prefix`.
pub async fn open_at(url: &str, prefix: &str) -> RedisBackend {
    let options = RedisOptions::from_url(url).unwrap_or_else(|e| panic!("bad URL {url}: {e}"));
    match options.prefix(prefix).open().await {
        Ok(store) => store,
        Err(e) => panic!("cannot reach Redis at {url} (start it as TOOLCHAIN.md says): {e}"),
    }
}

/// A backend on the shared server with a fresh prefix, and the prefix.
pub async fn open() -> (RedisBackend, String) {
    let prefix = fresh_prefix();
    (open_at(&url(), &prefix).await, prefix)
}

/// A plain synchronous connection for looking at (and spoiling) what the backend stored.
pub fn raw(url: &str) -> redis::Connection {
    redis::Client::open(url).and_then(|c| c.get_connection()).unwrap_or_else(|e| panic!("raw connection: {e}"))
}
pub mod server;

/// A lock on `store` named `name` that retries only once a minute: past its first attempt, only
/// a pushed wake-up makes it try again within a test's patience.
pub fn patient_lock(store: &RedisBackend, name: &str) -> tenure_tokio::Lock {
    tenure_tokio::Lock::builder(name, tenure_tokio::Tokio::current())
        .backend(store.clone())
        .retry_interval(Duration::from_secs(60))
        .env_load(false)
        .build()
        .expect("a lock")
}

/// `first` holds a fresh lock while `second` (another connection) waits; the release must wake
/// `second` through the server, which gets the next fence.
pub async fn pushed_handoff(first: &RedisBackend, second: &RedisBackend) {
    let (holder, waiter) = (patient_lock(first, "handoff"), patient_lock(second, "handoff"));
    let held = holder.acquire().await.expect("first");
    let fence = held.fencing_token().get();
    let waiting =
        tokio::spawn(
            async move { waiter.acquire_timeout(Duration::from_secs(5)).await.map(|g| g.fencing_token().get()) },
        );
    tokio::time::sleep(Duration::from_millis(200)).await; // the waiter made its failing attempt
    held.release().await.expect("release");
    let next = waiting.await.expect("the waiter task").expect("the waiter was not woken");
    assert_eq!(next, fence + 1);
}
