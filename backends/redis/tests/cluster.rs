//! The store on a Redis Cluster of three primaries the test starts itself: the whole conformance
//! suite, a pushed hand-off between two connections, inspection across primaries, and the
//! hash-tag rule for the key prefix.

mod common;

use std::sync::Arc;
use std::time::Duration;

use tenure::Inspect;
use tenure_conformance::{Clock, Harness, Leases, Store};
use tenure_redis::{RedisBackend, RedisOptions};

use common::server::Cluster;
use tenure::backend::LockCalls;

async fn open(url: &str, prefix: &str) -> RedisBackend {
    let options = RedisOptions::from_url(url).expect("url").prefix(prefix);
    options.open(tenure_tokio::Tokio::current()).await.unwrap_or_else(|e| panic!("cannot reach the cluster: {e}"))
}

/// A tagged prefix no other store uses.
fn tagged() -> String {
    format!("{{{}}}:", common::fresh_prefix().trim_end_matches(':'))
}

fn cluster_harness() -> Harness {
    let cluster = Arc::new(Cluster::start());
    Harness {
        name: "redis cluster",
        clock: Clock::Real { quantum: Duration::from_millis(100) },
        leases: Leases::AS_ASKED,
        make: Box::new(move || {
            let url = cluster.url();
            Box::pin(async move {
                let store = open(&url, &tagged()).await;
                Store::of(store)
            })
        }),
    }
}

tenure_conformance::conformance_tests!(sequential cluster_harness());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_hands_over_by_push_lists_its_locks_and_requires_a_hash_tag() {
    let cluster = Cluster::start();
    let prefix = tagged();
    let (store, other) = (open(&cluster.url(), &prefix).await, open(&cluster.url(), &prefix).await);
    common::pushed_handoff(&store, &other).await;

    LockCalls::acquire(&store, "lock:listed", "w1:task:0.1", Duration::from_secs(30)).await.expect("acquire");
    let states = store.lock_states(Vec::new()).await.expect("inspection across primaries");
    let keys: Vec<&str> = states.iter().map(|s| s.key.as_str()).collect();
    assert_eq!(keys, ["lock:handoff", "lock:listed"]);

    let e = RedisOptions::from_url(&cluster.url())
        .expect("url")
        .prefix("app:")
        .open(tenure_tokio::Tokio::current())
        .await
        .expect_err("no tag");
    assert!(e.to_string().contains("hash tag"), "{e}");
}
