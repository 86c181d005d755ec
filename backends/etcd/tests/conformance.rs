//! The backend conformance suite on etcd members the tests start, adapted where etcd differs by
//! design (and nowhere else):
//!
//! - Fences are create revisions: strictly increasing for every name, but counted over every
//!   write of the cluster, so neither 1, 2, 3… nor per name ([`Fences::Increasing`]; the random
//!   sequences compare them with the model's through an order-keeping map).
//! - A lease is held for whole seconds, rounded up, and at least the cluster's minimum TTL (2 s
//!   with etcd's default heartbeat and election timeout), and etcd deletes an ended lease's keys
//!   up to ~0.5 s after its end (its expiry check runs every 500 ms): the random sequences run
//!   on a 2 s grid whose leases are odd whole seconds, so the store and the model always end a
//!   lease between the same two operations, and the fixed cases' leases are ones etcd holds
//!   exactly ([`Leases`]).
//! - etcd keeps no queue of waiters: a queued acquire is a plain one (as on SQLite).
//! - Read-write locks (Tenure's own layout, docs/etcd.md) number their writes 1, 2, 3… per name,
//!   and their leases are etcd leases as the locks' are: the same grid and lateness.
//!
//! Also here: the push cases (a watch wakes waiters of another store), and the fault and chaos
//! cases on a member the test kills, freezes and restarts.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::Member;
use common::cluster::Cluster;
use tenure_conformance::{Clock, Harness, Leases, Store, chaos, faults};
use tenure_etcd::EtcdBackend;

/// How etcd keeps leases (Debian's etcd 3.4 with its default timings).
const ETCD_LEASES: Leases =
    Leases { unit: Duration::from_secs(1), minimum: Duration::from_secs(2), late: Duration::from_millis(700) };

/// A store on `url` under a prefix no other store of the test uses.
async fn open(url_of: impl Fn(&str) -> String) -> EtcdBackend {
    static STORES: AtomicU64 = AtomicU64::new(0);
    let prefix = format!("c{}/", STORES.fetch_add(1, Ordering::SeqCst));
    EtcdBackend::open_url(&url_of(&prefix)).await.unwrap_or_else(|e| panic!("the etcd member does not answer: {e}"))
}

fn etcd() -> Harness {
    let member = Arc::new(Member::start());
    Harness {
        name: "etcd",
        clock: Clock::Real { quantum: Duration::from_secs(2) },
        leases: ETCD_LEASES,
        make: Box::new(move || {
            let member = member.clone();
            Box::pin(async move {
                let store = open(|prefix| member.url(prefix)).await;
                Store::of(store).increasing_fences().keeping(member)
            })
        }),
    }
}

tenure_conformance::conformance_tests!(etcd());
tenure_conformance::rw_conformance_tests!(etcd());
tenure_conformance::sem_conformance_tests!(etcd());

/// Two stores on one member the pair keeps alive, as two processes would open them.
async fn pair<R>(_runtime: R) -> (Store, Store) {
    let member = Arc::new(Member::start());
    let url = member.url("push/");
    let a = EtcdBackend::open_url(&url).await.expect("a");
    let b = EtcdBackend::open_url(&url).await.expect("b");
    (Store::of(a).increasing_fences().keeping(member.clone()), Store::of(b).increasing_fences().keeping(member))
}

tenure_conformance::push_tests!(pair);

/// A one-member cluster as the fault cases' server: frozen, killed and restarted on its data.
struct Single(Cluster);

impl faults::Server for Single {
    fn freeze(&self) {
        self.0.freeze(0);
    }

    fn thaw(&self) {
        self.0.thaw(0);
    }

    fn kill9(&mut self) {
        self.0.kill9(0);
    }

    fn restart(&mut self) {
        self.0.restart(0);
        self.0.wait_healthy();
    }
}

async fn faulty() -> (Single, Store) {
    let cluster = Cluster::start(1);
    let store = open(|prefix| cluster.url(prefix)).await;
    (Single(cluster), Store::of(store).increasing_fences())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_member_fails_calls_within_their_timeouts_then_recovers() {
    let (server, store) = faulty().await;
    faults::a_frozen_server_fails_calls_within_their_timeouts(&server, &store, Duration::from_secs(1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_lease_is_renewed_and_lost_when_the_member_freezes() {
    let (server, store) = faulty().await;
    faults::a_kept_lease_is_renewed_and_lost_when_the_server_freezes(&server, &store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_and_restarted_member_keeps_leases_and_fences_and_the_store_reconnects() {
    let (mut server, store) = faulty().await;
    faults::a_crashed_server_keeps_leases_and_fences(&mut server, &store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_kills_restarts_and_freezes_no_two_valid_holders_overlap() {
    let cluster = Cluster::start(1);
    let mut stores = Vec::new();
    for _ in 0..3 {
        let url = cluster.url("chaos/");
        stores.push(Store::of(EtcdBackend::open_url(&url).await.expect("open")).increasing_fences());
    }
    let server = Mutex::new(Single(cluster));
    chaos::under_crashes_and_freezes_no_two_valid_holders_overlap(&server, stores).await;
}
