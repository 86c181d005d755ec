//! Shared by the Redis tests: the server of this machine, fresh key prefixes, raw commands.

#![allow(dead_code, unreachable_pub)]

use std::hash::{BuildHasher, RandomState};
use tenure::net::Net;
use tenure_conformance::Store;
use tenure_redis::{RedisBackend, RedisOptions};
use tenure_tokio::Tokio;

/// The shared server (`TENURE_REDIS_URL`, default `redis://127.0.0.1:6379`).
pub fn url() -> String {
    std::env::var("TENURE_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// A key prefix no other test or run uses.
pub fn fresh_prefix() -> String {
    format!("tenure-test:{:016x}:", RandomState::new().hash_one(std::time::SystemTime::now()))
}

/// A backend on `url` with the key prefix `prefix`, on `runtime`.
pub async fn open_on(url: &str, prefix: &str, runtime: impl Net) -> RedisBackend {
    let options = RedisOptions::from_url(url).unwrap_or_else(|e| panic!("bad URL {url}: {e}"));
    match options.prefix(prefix).open(runtime).await {
        Ok(store) => store,
        Err(e) => panic!("cannot reach Redis at {url} (start it as TOOLCHAIN.md says): {e}"),
    }
}

/// A backend on `url` with the key prefix `prefix`, on the tokio runtime of the caller.
pub async fn open_at(url: &str, prefix: &str) -> RedisBackend {
    open_on(url, prefix, Tokio::current()).await
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
pub mod sentinel;
pub mod server;

/// `first` holds a fresh lock while `second` (another connection) waits; the release must wake
/// `second` through the server, which gets the next fence.
pub async fn pushed_handoff(first: &RedisBackend, second: &RedisBackend) {
    let (first, second) = (Store::of(first.clone()), Store::of(second.clone()));
    tenure_conformance::push::handoff(&first, &second, tenure_tokio::Tokio::current()).await;
}
