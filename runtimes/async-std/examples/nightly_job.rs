//! A scheduled job that runs at most once per window across workers, with a task lock.
//!
//! `cargo run -p tenure-async-std --example nightly_job`
#![allow(clippy::print_stdout)]

use std::time::Duration;

use tenure_async_std::{AsyncStd, MemoryBackend, TaskLock};

fn main() -> Result<(), tenure_async_std::Error> {
    async_std::task::block_on(async {
        let backend = MemoryBackend::new();
        let workers: Vec<_> = (0..3)
            .map(|_| {
                TaskLock::builder("nightly-report", AsyncStd)
                    .backend(backend.clone())
                    .min_hold_duration(Duration::from_millis(300)) // one run per 300 ms window
                    .lease_duration(Duration::from_secs(5))
                    .build()
            })
            .collect::<Result<_, _>>()?;
        for tick in 0..3 {
            for (worker, lock) in workers.iter().enumerate() {
                match lock.run(async { format!("report {tick}") }).await? {
                    Some(report) => println!("tick {tick}: worker {worker} ran the job ({report})"),
                    None => println!("tick {tick}: worker {worker} skipped (already run in this window)"),
                }
            }
            async_std::task::sleep(Duration::from_millis(320)).await;
        }
        Ok(())
    })
}
