//! The README's Rust quick start: a lock with a fencing token, a task lock and a leader election.
//!
//! `cargo run -p tenure-tokio --example quickstart`
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::Duration;
use tenure_tokio::{Coordination, MemoryBackend, Tokio};

#[tokio::main]
async fn main() -> Result<(), tenure_tokio::Error> {
    let coordination = Coordination::new(Tokio::current()).source(&MemoryBackend::new());

    // A lock with a fencing token: send the token with every write it protects.
    let lock = coordination.lock("orders")?.lease_duration(Duration::from_secs(30)).build()?;
    let guard = lock.acquire_timeout(Duration::from_secs(5)).await?;
    println!("fencing token {}", guard.fencing_token());
    tokio::select! {
        _ = guard.lost() => eprintln!("lease lost: stop writing"),
        _ = tokio::time::sleep(Duration::from_millis(10)) => {}
    }
    guard.release().await?; // dropping the guard releases it in the background too

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
    Ok(())
}
