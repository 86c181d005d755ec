//! `cargo bench -p tenure-redis`: Tenure's locks and elections on the Redis server of this
//! machine (`TENURE_REDIS_URL`, default `redis://127.0.0.1:6379`), beside the client's own floor
//! (a round trip of the same `redis` crate connection). Prints medians and rates; asserts
//! nothing. scripts/bench-peer.sh puts the figures beside `redis-benchmark` and grelmicro 0.44.
#![allow(clippy::print_stdout, clippy::cast_precision_loss)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tenure_redis::{RedisBackend, RedisOptions};
use tenure_tokio::{LeaderElection, Lock, Tokio, WorkerId};

const BATCH: u32 = 200;
const BATCHES: usize = 11;
const TASKS: usize = 8;
const RUN: Duration = Duration::from_secs(2);

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

async fn open() -> RedisBackend {
    let url = std::env::var("TENURE_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let prefix = format!("tenure-bench-{}:", std::process::id());
    RedisOptions::from_url(&url).expect("url").prefix(prefix).open().await.expect("open Redis")
}

fn lock(store: &RedisBackend, name: &str) -> Lock {
    Lock::builder(name, Tokio::current()).backend(store.clone()).env_load(false).build().expect("lock")
}

/// One round trip of the client library itself: `PING` on a multiplexed connection.
async fn client_round_trip() -> Duration {
    let url = std::env::var("TENURE_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let client = redis::Client::open(url).expect("client");
    let mut con = client.get_multiplexed_async_connection().await.expect("connection");
    let mut samples = Vec::new();
    for batch in 0..=BATCHES {
        let start = Instant::now();
        for _ in 0..BATCH {
            let _: String = redis::cmd("PING").query_async(&mut con).await.expect("ping");
        }
        if batch > 0 {
            samples.push(start.elapsed() / BATCH);
        }
    }
    median(samples)
}

/// One task: acquire + release.
async fn one_task(store: &RedisBackend) -> Duration {
    let lock = lock(store, "one");
    let mut samples = Vec::new();
    for batch in 0..=BATCHES {
        let start = Instant::now();
        for _ in 0..BATCH {
            let guard = lock.acquire().await.expect("acquire");
            guard.release().await.expect("release");
        }
        if batch > 0 {
            samples.push(start.elapsed() / BATCH);
        }
    }
    median(samples)
}

/// How many scripts the server has run so far (`INFO commandstats`).
async fn scripts_run() -> u64 {
    let url = std::env::var("TENURE_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let client = redis::Client::open(url).expect("client");
    let mut con = client.get_multiplexed_async_connection().await.expect("connection");
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(&mut con).await.expect("info");
    info.lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// `TASKS` tasks, each acquiring and releasing in a loop for `RUN`, on one name or on one name
/// each. Returns cycles per second and the scripts the server ran per cycle.
async fn many_tasks(store: &RedisBackend, names: usize) -> (f64, f64) {
    let scripts_before = scripts_run().await;
    let cycles = Arc::new(AtomicU64::new(0));
    let locks: Vec<Lock> = (0..names).map(|i| lock(store, &format!("many-{names}-{i}"))).collect();
    let start = Instant::now();
    let tasks: Vec<_> = (0..TASKS)
        .map(|i| {
            let lock = locks[i % names].clone();
            let cycles = cycles.clone();
            tokio::spawn(async move {
                while start.elapsed() < RUN {
                    let guard = lock.acquire().await.expect("acquire");
                    guard.release().await.expect("release");
                    cycles.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("task");
    }
    let elapsed = start.elapsed().as_secs_f64();
    let cycles = cycles.load(Ordering::Relaxed) as f64;
    let scripts = (scripts_run().await - scripts_before) as f64;
    (cycles / elapsed, scripts / cycles)
}

/// From the start of a release to the grant of the waiter it wakes (another connection, a
/// retry interval far longer than the run: only the push hands over).
async fn handoff(store: &RedisBackend) -> Duration {
    let other = open().await;
    let slow = |store: &RedisBackend| {
        Lock::builder("handoff", Tokio::current())
            .backend(store.clone())
            .retry_interval(Duration::from_secs(5))
            .env_load(false)
            .build()
            .expect("lock")
    };
    let (holder, waiter) = (slow(store), slow(&other));
    let mut samples = Vec::new();
    for _ in 0..200 {
        let guard = holder.acquire().await.expect("holder");
        let waiting = waiter.clone();
        let task = tokio::spawn(async move {
            let guard = waiting.acquire().await.expect("waiter");
            (Instant::now(), guard)
        });
        tokio::time::sleep(Duration::from_millis(2)).await; // the waiter's attempt was refused
        let released = Instant::now();
        guard.release().await.expect("release");
        let (granted, guard) = task.await.expect("waiter task");
        samples.push(granted.saturating_duration_since(released));
        guard.release().await.expect("release");
    }
    median(samples)
}

/// From the start of a leader's clean stop to the moment a follower leads.
async fn leader_handover(store: &RedisBackend) -> Duration {
    let other = open().await;
    let election = |store: &RedisBackend, worker: &str| {
        LeaderElection::builder("handover", Tokio::current())
            .backend(store.clone())
            .worker(WorkerId::new(worker).expect("worker"))
            .retry_interval(Duration::from_millis(200))
            .env_load(false)
            .build()
            .expect("election")
    };
    let mut samples = Vec::new();
    for round in 0..21 {
        let leader = election(store, &format!("a{round}"));
        let follower = election(&other, &format!("b{round}"));
        leader.start();
        leader.wait_for_leader().await;
        follower.start();
        tokio::time::sleep(Duration::from_millis(250)).await; // the follower was refused
        let stopping = Instant::now();
        leader.stop().await;
        follower.wait_for_leader().await;
        samples.push(stopping.elapsed());
        follower.stop().await;
    }
    median(samples)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("tokio");
    runtime.block_on(async {
        let store = open().await;
        let rtt = client_round_trip().await;
        let one = one_task(&store).await;
        let contended = many_tasks(&store, 1).await;
        let spread = many_tasks(&store, TASKS).await;
        let handoff = handoff(&store).await;
        let handover = leader_handover(&store).await;
        println!(
            "Redis, tenure on tokio, 2 worker threads (medians of {BATCHES} batches of {BATCH}, rates over {RUN:?}):"
        );
        println!("  client round trip (redis crate PING): {:>8.1} us", us(rtt));
        println!("  one task, acquire + release:          {:>8.1} us", us(one));
        println!("  {TASKS} tasks on one name:                {:>8.0} cycles/s", contended.0);
        println!("  {TASKS} tasks on {TASKS} names:                 {:>8.0} cycles/s", spread.0);
        println!(
            "  scripts the server ran per cycle: {:.2} on one name, {:.2} on {TASKS} names",
            contended.1, spread.1
        );
        println!("  release to next waiter's grant:       {:>8.1} us", us(handoff));
        println!("  leader hand-over after a clean stop:  {:>8.1} us", us(handover));
    });
    // The same client on one thread: no hop between threads per round trip.
    let single = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio");
    single.block_on(async {
        let store = open().await;
        let rtt = client_round_trip().await;
        let one = one_task(&store).await;
        let handoff = handoff(&store).await;
        println!("Redis, tenure on tokio, current thread:");
        println!("  client round trip (redis crate PING), current thread: {:>8.1} us", us(rtt));
        println!("  one task, acquire + release, current thread:          {:>8.1} us", us(one));
        println!("  release to next waiter's grant, current thread:       {:>8.1} us", us(handoff));
    });
}
