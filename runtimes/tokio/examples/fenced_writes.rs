//! Workers writing to a shared resource under a lock, each write fenced with the lock's token.
//!
//! `cargo run -p tenure-tokio --example fenced_writes`
#![allow(clippy::print_stdout)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tenure_tokio::{Lock, MemoryBackend, Tokio};

/// A resource that refuses writes carrying a fencing token older than one it has seen.
#[derive(Default)]
struct Ledger {
    highest: u64,
    entries: Vec<String>,
}

impl Ledger {
    fn write(&mut self, fence: u64, entry: String) -> Result<(), String> {
        if fence < self.highest {
            return Err(format!("stale fencing token {fence} < {}", self.highest));
        }
        self.highest = fence;
        self.entries.push(entry);
        Ok(())
    }
}

#[tokio::main]
async fn main() -> Result<(), tenure_tokio::Error> {
    let backend = MemoryBackend::new(); // the store; Redis, PostgreSQL, SQLite and etcd plug in the same way
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let mut workers = Vec::new();
    for worker in 0..3 {
        let lock = Lock::builder("ledger", Tokio::current())
            .backend(backend.clone())
            .lease_duration(Duration::from_secs(5))
            .build()?;
        let ledger = ledger.clone();
        workers.push(tokio::spawn(async move {
            for round in 0..2 {
                let guard = lock.acquire().await?;
                let fence = guard.fencing_token().get();
                let entry = format!("worker {worker}, round {round}");
                let accepted = ledger.lock().is_ok_and(|mut l| l.write(fence, entry.clone()).is_ok());
                println!("{entry:<20} fencing token {fence}  accepted: {accepted}");
                tokio::time::sleep(Duration::from_millis(5)).await;
                guard.release().await?;
            }
            Ok::<(), tenure_tokio::Error>(())
        }));
    }
    for worker in workers {
        worker.await.map_err(|e| tenure_tokio::Error::NotOpen { what: e.to_string() })??;
    }
    let entries = ledger.lock().map(|l| l.entries.len()).unwrap_or(0);
    println!("{entries} writes, one holder at a time, fencing tokens strictly increasing");
    Ok(())
}
