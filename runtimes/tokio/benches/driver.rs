//! `cargo bench -p tenure-tokio`: the driver benchmarks on a 2-worker tokio runtime.
#![allow(clippy::print_stdout)]

use tenure_suite::bench::{Counting, run_all};

#[global_allocator]
static ALLOC: Counting = Counting;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
    let runtime = runtime.expect("a tokio runtime");
    runtime.block_on(run_all(
        tenure_tokio::Tokio::from_handle(runtime.handle().clone()),
        "tokio (multi-thread, 2 workers)",
    ));
    let metrics = runtime.metrics();
    println!("  tasks alive at the end:             {:>10}", metrics.num_alive_tasks());
}
