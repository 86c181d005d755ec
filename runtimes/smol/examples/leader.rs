//! Three workers elect a leader; only the leader runs the job, and a clean stop hands over.
//!
//! `cargo run -p tenure-smol --example leader`
#![allow(clippy::print_stdout)]

use std::time::Duration;

use tenure_smol::{LeaderElection, MemoryBackend, Metadata, Smol, WorkerId};

fn main() -> Result<(), tenure_smol::Error> {
    smol::block_on(async {
        let backend = MemoryBackend::new();
        let mut workers = Vec::new();
        for name in ["alpha", "beta", "gamma"] {
            let election = LeaderElection::builder("scheduler", Smol::global())
                .backend(backend.clone())
                .worker(WorkerId::new(name)?)
                .metadata(Metadata::from_pairs([("pod", name)])?)
                .lease_duration(Duration::from_secs(3))
                .renew_deadline(Duration::from_secs(2))
                .retry_interval(Duration::from_millis(200))
                .backend_timeout(Duration::from_millis(500))
                .build()?;
            election.start();
            workers.push(election);
        }
        for _ in 0..2 {
            let leader = loop {
                if let Some(leader) = workers.iter().find(|e| e.is_leader()) {
                    break leader.clone();
                }
                smol::Timer::after(Duration::from_millis(5)).await;
            };
            let record = leader.record();
            let pod = record.as_ref().and_then(|r| r.metadata.get("pod").map(str::to_owned));
            // `lead` runs the job only while leading, and drops it if leadership is lost.
            let done = leader.lead(async { "nightly report sent" }).await;
            println!("leader {:?}: {done:?}", pod.unwrap_or_default());
            leader.stop().await; // releases at once: a follower takes over without waiting for expiry
        }
        for election in &workers {
            election.stop().await;
        }
        Ok(())
    })
}
