//! The conformance suite on Redis: the server of this machine (`TENURE_REDIS_URL`, default
//! `redis://127.0.0.1:6379`), a fresh random key prefix per store, leases judged by the server's
//! clock.

use std::time::Duration;

use tenure_conformance::{Clock, Harness, Leases, Store};
use tenure_redis::RedisOptions;

fn url() -> String {
    std::env::var("TENURE_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

async fn open() -> Store {
    let prefix = format!("tenure-conformance:{:016x}:", rand_prefix());
    let options = match RedisOptions::from_url(&url()) {
        Ok(options) => options.prefix(prefix),
        Err(e) => panic!("bad TENURE_REDIS_URL: {e}"),
    };
    let store = match options.open(tenure_tokio::Tokio::current()).await {
        Ok(store) => store,
        Err(e) => panic!("cannot reach the Redis server (start it as TOOLCHAIN.md says): {e}"),
    };
    Store::of(store)
}

/// A prefix no other store of any run has used.
fn rand_prefix() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now())
}

fn redis() -> Harness {
    Harness {
        name: "redis",
        clock: Clock::Real { quantum: Duration::from_millis(100) },
        leases: Leases::AS_ASKED,
        make: Box::new(|| Box::pin(open())),
    }
}

tenure_conformance::conformance_tests!(redis());
tenure_conformance::rw_conformance_tests!(redis());
tenure_conformance::sem_conformance_tests!(redis());
