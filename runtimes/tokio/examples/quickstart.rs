//! The README's Rust quick start: a store opened from a URL, a lock with a fencing token, a long
//! job under a lease the driver keeps alive, a task lock and a leader election.
//!
//! `cargo run -p tenure-tokio --example quickstart` (on `memory:`; set `TENURE_BACKEND` to a
//! store URL, such as `sqlite:///tmp/quickstart.db`, to use that store)
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::Duration;
use tenure_tokio::{Coordination, Tokio};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("TENURE_BACKEND").unwrap_or_else(|_| "memory:".into());
    let store = tenure_open::open(&url, Tokio::current()).await?; // sqlite:///…, redis://…, postgresql://…, etcd://…, memory:
    let coordination = Coordination::new(Tokio::current()).source(&store);

    // A lock with a fencing token: send the token with every write it protects.
    let lock = coordination.lock("orders")?.lease_duration(Duration::from_secs(30)).build()?;
    let guard = lock.acquire_timeout(Duration::from_secs(5)).await?;
    println!("fencing token {}", guard.fencing_token());
    guard.release().await?; // dropping the guard releases it in the background too

    // A long job: the driver renews the lease every third of it, and releases it after an hour
    // at most; the job stops the moment the lease is lost.
    let kept = lock.acquire().await?.keep_alive(Duration::from_secs(3600));
    tokio::select! {
        () = kept.lost() => eprintln!("lease lost: the job stops"),
        () = tokio::time::sleep(Duration::from_millis(10)) => {
            println!("job done under fencing token {}", kept.fencing_token());
        }
    }
    kept.stop().release().await?;

    // A task lock: at most one run per window across every replica.
    let report = coordination.task_lock("nightly-report")?.min_hold_duration(Duration::from_secs(60)).build()?;
    if let Some(rows) = report.run(async { 42 }).await? {
        println!("ran the report: {rows} rows");
    }

    // Leader election: run work only while leading; it is dropped the moment leadership is lost.
    let election = coordination.leader_election("scheduler")?.build()?;
    election.start();
    let done = election.lead(async { "leader work done" }).await;
    println!("{done:?}");
    election.stop().await; // releases at once: a follower takes over without waiting for expiry
    store.close().await?;
    Ok(())
}
