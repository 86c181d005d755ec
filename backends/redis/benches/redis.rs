//! `cargo bench -p tenure-redis`: Tenure's locks and elections on the Redis server of this
//! machine (`TENURE_REDIS_URL`, default `redis://127.0.0.1:6379`), beside the client's own floor
//! (a round trip of the same `redis` crate connection). Prints medians and rates; asserts
//! nothing. scripts/bench-peer.sh puts the figures beside `redis-benchmark` and grelmicro 0.44.
#![allow(clippy::print_stdout, clippy::cast_precision_loss)]

use std::time::{Duration, Instant};

use tenure::backend::LockOperations;
use tenure_conformance::Store;
use tenure_conformance::bench::{self, BATCH, BATCHES, RUN, Step, TASKS, us};
use tenure_redis::{RedisBackend, RedisOptions};

fn url() -> String {
    std::env::var("TENURE_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

async fn open() -> (Store, RedisBackend) {
    let prefix = format!("tenure-bench-{}:", std::process::id());
    let backend = RedisOptions::from_url(&url())
        .expect("url")
        .prefix(prefix)
        .open(tenure_tokio::Tokio::current())
        .await
        .expect("open Redis");
    (Store::of(backend.clone()), backend)
}

/// The store's own calls, without the driver: acquire + release, per cycle.
fn backend_calls(backend: &RedisBackend) -> Step<'_> {
    Box::new(move || {
        Box::pin(async move {
            let fence = LockOperations::acquire(backend, "lock:calls", "bench", Duration::from_secs(5)).await;
            assert!(fence.expect("acquire").is_some());
            assert!(LockOperations::release(backend, "lock:calls", "bench").await.expect("release"));
        })
    })
}

/// A round trip of the client after the connection sat idle as long as a hand-off's waiter
/// does ([`bench::HANDOFF_IDLE`]): on a virtual machine, waking an idle CPU costs more than
/// the network, and the hand-off pays it too.
async fn idle_round_trip() -> Duration {
    let client = redis::Client::open(url()).expect("client");
    let mut con = client.get_multiplexed_async_connection().await.expect("connection");
    let mut samples = Vec::new();
    for _ in 0..200 {
        tokio::time::sleep(bench::HANDOFF_IDLE).await;
        let start = Instant::now();
        let _: String = redis::cmd("PING").query_async(&mut con).await.expect("ping");
        samples.push(start.elapsed());
    }
    bench::median(samples)
}

/// One round trip of the client library itself: `PING` on a multiplexed connection.
async fn client_round_trip<'a>() -> Step<'a> {
    let client = redis::Client::open(url()).expect("client");
    let con = client.get_multiplexed_async_connection().await.expect("connection");
    Box::new(move || {
        let mut con = con.clone();
        Box::pin(async move {
            let _: String = redis::cmd("PING").query_async(&mut con).await.expect("ping");
        })
    })
}

/// The client's round trip, the store's calls and the driver's cycle, their batches taking turns.
async fn round_trip_calls_and_cycle(store: &Store, backend: &RedisBackend) -> (Duration, Duration, Duration) {
    let mut steps: [Step<'_>; 3] = [client_round_trip().await, backend_calls(backend), bench::one_task_step(store)];
    let medians = bench::per_call_each(&mut steps).await;
    (medians[0], medians[1], medians[2])
}

/// How many scripts the server has run so far (`INFO commandstats`).
async fn scripts_run() -> u64 {
    let client = redis::Client::open(url()).expect("client");
    let mut con = client.get_multiplexed_async_connection().await.expect("connection");
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(&mut con).await.expect("info");
    info.lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// [`bench::many_tasks`], and the scripts the server ran per cycle.
async fn many_tasks(store: &Store, names: usize) -> (bench::Contention, f64) {
    let before = scripts_run().await;
    let run = bench::many_tasks(store, names).await;
    (run, (scripts_run().await - before) as f64 / run.cycles as f64)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("tokio");
    runtime.block_on(async {
        let ((store, backend), (other, _)) = (open().await, open().await);
        let (rtt, calls, one) = round_trip_calls_and_cycle(&store, &backend).await;
        let contended = many_tasks(&store, 1).await;
        let spread = many_tasks(&store, TASKS).await;
        let handoff = bench::handoff(&store, &other).await;
        let idle = idle_round_trip().await;
        let handover = bench::leader_handover(&store, &other).await;
        println!(
            "Redis, tenure on tokio, 2 worker threads (medians of {BATCHES} batches of {BATCH}, rates over {RUN:?}):"
        );
        println!("  client round trip (redis crate PING): {:>8.1} us", us(rtt));
        println!("  the store's calls, acquire + release:  {:>8.1} us", us(calls));
        println!("  one task, acquire + release:          {:>8.1} us", us(one));
        println!("  {TASKS} tasks on one name:                {:>8.0} cycles/s", contended.0.rate);
        println!("  fairness on one name (Jain's index):  {:>8.3}", contended.0.fairness);
        println!("  {TASKS} tasks on {TASKS} names:                 {:>8.0} cycles/s", spread.0.rate);
        println!(
            "  scripts the server ran per cycle: {:.2} on one name, {:.2} on {TASKS} names",
            contended.1, spread.1
        );
        println!("  client round trip after {:?} idle:      {:>8.1} us", bench::HANDOFF_IDLE, us(idle));
        println!("  release to next waiter's grant:       {:>8.1} us", us(handoff));
        println!("  leader hand-over after a clean stop:  {:>8.1} us", us(handover));
    });
    // The same client on one thread: no hop between threads per round trip.
    let single = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio");
    single.block_on(async {
        let ((store, backend), (other, _)) = (open().await, open().await);
        let (rtt, calls, one) = round_trip_calls_and_cycle(&store, &backend).await;
        let contended = bench::many_tasks(&store, 1).await;
        let spread = bench::many_tasks(&store, TASKS).await;
        let handoff = bench::handoff(&store, &other).await;
        let idle = idle_round_trip().await;
        println!("Redis, tenure on tokio, current thread:");
        println!("  client round trip (redis crate PING), current thread: {:>8.1} us", us(rtt));
        println!("  the store's calls, acquire + release, current thread:  {:>8.1} us", us(calls));
        println!("  one task, acquire + release, current thread:          {:>8.1} us", us(one));
        println!("  {TASKS} tasks on one name, current thread:                {:>8.0} cycles/s", contended.rate);
        println!("  fairness on one name (Jain's index), current thread:  {:>8.3}", contended.fairness);
        println!("  {TASKS} tasks on {TASKS} names, current thread:                 {:>8.0} cycles/s", spread.rate);
        println!("  client round trip after {:?} idle, current thread:      {:>8.1} us", bench::HANDOFF_IDLE, us(idle));
        println!("  release to next waiter's grant, current thread:       {:>8.1} us", us(handoff));
    });
}
