//! `cargo bench -p tenure-etcd`: Tenure's locks and elections on etcd members the bench starts
//! itself (`etcd` from Debian's `etcd-server`), first one member, then a cluster of three on
//! loopback ports, beside the client's own floor measured in the same run: the fewest requests
//! a lock with a lease of its own takes on etcd — `LeaseGrant`, a `Txn` putting the contender's
//! key if the name has none, and `LeaseRevoke` (which deletes the key) — on the same
//! client the store uses (its own, over tonic), the requests Tenure's store sends for a cycle, sent raw, and one write's commit
//! (a `Put`, in a tight loop and after the idle a hand-off's waiter sees). Prints medians and
//! rates; asserts nothing.
#![allow(clippy::print_stdout, clippy::cast_precision_loss)]

#[path = "../tests/common/mod.rs"]
mod common;
// The store's own client, compiled into the bench (it is not public).
#[allow(dead_code, unreachable_pub, unused_imports)]
#[path = "../src/client/mod.rs"]
mod client;
#[path = "../src/pb/mod.rs"]
mod pb;

use std::time::{Duration, Instant};

use client::{Client, Compare, CompareOp, ConnectOptions, PutOptions, Txn, TxnOp};
use tenure::backend::LockOperations;
use tenure_conformance::Store;
use tenure_conformance::bench::{self, BATCH, BATCHES, RUN, Step, TASKS, us};
use tenure_etcd::EtcdBackend;
use tenure_tokio::{LeaderElection, Tokio, WorkerId};

/// How long a leader hand-over's follower waits before the leader stops
/// ([`bench::leader_handover`]).
const IDLE: Duration = Duration::from_millis(250);

/// The floor of a lock cycle: grant, put if the name has no contender, revoke.
fn floor_cycle(client: &Client) -> Step<'_> {
    Box::new(move || {
        let client = client.clone();
        Box::pin(async move {
            let lease = client.lease_grant(60).await.expect("grant");
            let prefix = "floor/lock:floor/";
            let free = Compare::create_revision(prefix, CompareOp::Equal, 0).with_prefix();
            let put = TxnOp::put(format!("{prefix}{lease:x}"), "floor", Some(PutOptions::new().with_lease(lease)));
            assert!(client.txn(Txn::new().when([free]).and_then([put])).await.expect("txn").succeeded());
            client.lease_revoke(lease).await.expect("revoke");
        })
    })
}

/// Tenure's own requests for a cycle, sent raw: a refresh of a spare lease beside a `Txn`
/// putting the contender's key on it if the name has none, then a `Txn` deleting that key guarded
/// on its revision and lease (the lease stays spare).
fn same_requests(client: &Client, lease: i64) -> Step<'_> {
    Box::new(move || {
        let (refreshing, client) = (client.clone(), client.clone());
        Box::pin(async move {
            let prefix = "floor/lock:same/";
            let key = format!("{prefix}{lease:x}");
            let free = Compare::create_revision(prefix, CompareOp::Equal, 0).with_prefix();
            let put = TxnOp::put(key.clone(), "same", Some(PutOptions::new().with_lease(lease)));
            let (refreshed, taken) =
                tokio::join!(refreshing.lease_keep_alive(lease), client.txn(Txn::new().when([free]).and_then([put])));
            refreshed.expect("keep-alive");
            let taken = taken.expect("txn");
            assert!(taken.succeeded());
            let revision = taken.revision();
            let held = [
                Compare::create_revision(key.clone(), CompareOp::Equal, revision),
                Compare::lease(key.clone(), CompareOp::Equal, lease),
            ];
            let deleted = client.txn(Txn::new().when(held).and_then([TxnOp::delete(key)])).await;
            assert!(deleted.expect("txn").succeeded());
        })
    })
}

/// One write's commit: a `Put` of one small key.
fn one_write(client: &Client) -> Step<'_> {
    Box::new(move || {
        let client = client.clone();
        Box::pin(async move {
            client.put("floor/write", "v").await.expect("put");
        })
    })
}

/// One write's commit after the client sat idle for `idle` (as a waiter or a follower does
/// before a hand-off: on a virtual machine, waking idle CPUs costs a write more than it does in
/// a tight loop).
async fn idle_write(client: &Client, idle: Duration) -> Duration {
    let client = client.clone();
    let mut samples = Vec::new();
    for _ in 0..if idle > Duration::from_millis(50) { 21 } else { 200 } {
        tokio::time::sleep(idle).await;
        let start = Instant::now();
        client.put("floor/write", "v").await.expect("put");
        samples.push(start.elapsed());
    }
    bench::median(samples)
}

/// One linearizable read: a `Range` of one key.
fn one_read(client: &Client) -> Step<'_> {
    Box::new(move || {
        let client = client.clone();
        Box::pin(async move {
            client.get("floor/write", None).await.expect("get");
        })
    })
}

/// One refresh of a lease (`LeaseKeepAlive`, answered by the cluster's leader without consensus).
fn one_refresh(client: &Client, lease: i64) -> Step<'_> {
    Box::new(move || {
        let client = client.clone();
        Box::pin(async move {
            client.lease_keep_alive(lease).await.expect("keep-alive");
        })
    })
}

/// The store's own calls, without the driver: acquire + release, per cycle.
fn store_calls(backend: &EtcdBackend) -> Step<'_> {
    Box::new(move || {
        Box::pin(async move {
            let fence = LockOperations::acquire(backend, "lock:calls", "bench", Duration::from_secs(60)).await;
            assert!(fence.expect("acquire").is_some());
            assert!(LockOperations::release(backend, "lock:calls", "bench").await.expect("release"));
        })
    })
}

fn election(store: &Store, worker: &str, lease: Duration) -> LeaderElection {
    LeaderElection::builder("killed", Tokio::current())
        .shared_backend(store.leader.clone())
        .worker(WorkerId::new(worker).expect("worker"))
        .lease_duration(lease)
        .renew_deadline(lease * 2 / 3)
        .retry_interval(lease / 4)
        .backend_timeout(lease / 4)
        .env_load(false)
        .build()
        .expect("election")
}

/// From the moment a leader's process stops answering (its store closed: no renewal, no
/// release) to the moment a follower on `other` leads: bounded by the lease (`lease`, whole
/// seconds on etcd) and etcd's expiry check (every 500 ms).
async fn handover_after_a_kill(
    store_of: impl Fn() -> std::pin::Pin<Box<dyn Future<Output = (Store, EtcdBackend)>>>,
    other: &Store,
) -> Duration {
    let lease = Duration::from_secs(2);
    let mut samples = Vec::new();
    for round in 0..5 {
        let (store, backend) = store_of().await;
        let (leader, follower) =
            (election(&store, &format!("a{round}"), lease), election(other, &format!("b{round}"), lease));
        leader.start();
        leader.wait_for_leader().await;
        follower.start();
        tokio::time::sleep(Duration::from_millis(250)).await; // the follower was refused
        let killed = Instant::now();
        backend.close();
        follower.wait_for_leader().await;
        samples.push(killed.elapsed());
        follower.stop().await;
        drop(leader);
    }
    bench::median(samples)
}

async fn run(label: &str, url: &str) {
    let open = || {
        let url = url.to_owned();
        Box::pin(async move {
            let backend = EtcdBackend::open_url(&url).await.expect("open etcd");
            (Store::of(backend.clone()).increasing_fences(), backend)
        }) as std::pin::Pin<Box<dyn Future<Output = (Store, EtcdBackend)>>>
    };
    let ((store, backend), (other, _)) = (open().await, open().await);
    let endpoints: Vec<String> = tenure_etcd::EtcdOptions::from_url(url).expect("url").endpoints().to_vec();
    let client = Client::connect(endpoints, ConnectOptions::new()).await.expect("a raw client");
    let lease = client.lease_grant(600).await.expect("grant");
    let mut steps = [
        one_write(&client),
        one_read(&client),
        one_refresh(&client, lease),
        floor_cycle(&client),
        same_requests(&client, lease),
        store_calls(&backend),
        bench::one_task_step(&store),
    ];
    let medians = bench::per_call_each(&mut steps).await;
    let (write, read, refresh, floor, same, calls, one) =
        (medians[0], medians[1], medians[2], medians[3], medians[4], medians[5], medians[6]);
    let (idle_short, idle_long) = (idle_write(&client, bench::HANDOFF_IDLE).await, idle_write(&client, IDLE).await);
    let contended = bench::many_tasks(&store, 1).await;
    let spread = bench::many_tasks(&store, TASKS).await;
    let handoff = bench::handoff(&store, &other).await;
    let handover = bench::leader_handover(&store, &other).await;
    let killed = handover_after_a_kill(open, &other).await;
    println!(
        "etcd, {label}, tenure on tokio, 2 worker threads (medians of {BATCHES} batches of {BATCH}, rates over {RUN:?}):"
    );
    println!("  one write's commit (Put):                   {:>8.1} us", us(write));
    println!("  one read (Get):                             {:>8.1} us", us(read));
    println!("  one lease refresh (keep-alive):             {:>8.1} us", us(refresh));
    println!("  floor (grant, put if free, revoke):         {:>8.1} us", us(floor));
    println!("  Tenure's requests, raw (refresh | put, del): {:>8.1} us", us(same));
    let against_floors = |label: &str, took: Duration| {
        let (x, y) = (us(took) / us(floor), us(took) / us(same));
        println!("  {label:<43} {:>8.1} us = {x:.2}x floor = {y:.2}x the same requests raw", us(took));
    };
    against_floors("the store's calls, acquire + release:", calls);
    against_floors("one task, acquire + release:", one);
    println!("  {TASKS} tasks on one name:                      {:>8.0} cycles/s", contended.rate);
    println!("  fairness on one name (Jain's index):        {:>8.3}", contended.fairness);
    println!("  {TASKS} tasks on {TASKS} names:                       {:>8.0} cycles/s", spread.rate);
    println!("  one write after {:?} idle:                 {:>8.1} us", bench::HANDOFF_IDLE, us(idle_short));
    println!("  one write after {IDLE:?} idle:               {:>8.1} us", us(idle_long));
    let against_writes = |label: &str, took: Duration, idle: Duration| {
        let (x, y) = (us(took) / us(write), us(took) / us(idle));
        println!("  {label:<43} {:>8.1} us = {x:.2} writes = {y:.2} writes after the same idle", us(took));
    };
    against_writes("release to next waiter's grant:", handoff, idle_short);
    against_writes("leader hand-over after a clean stop:", handover, idle_long);
    println!("  leader hand-over after a kill (2 s lease):  {:>8.1} ms", killed.as_secs_f64() * 1e3);
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("tokio");
    runtime.block_on(async {
        let member = common::Member::start();
        run("one member", &member.url("bench/")).await;
        drop(member);
        let cluster = common::cluster::Cluster::start(3);
        run("three members", &cluster.url("bench/")).await;
    });
}
