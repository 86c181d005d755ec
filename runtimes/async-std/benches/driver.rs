//! `cargo bench -p tenure-async-std`: the driver benchmarks on async-std.

use tenure_suite::bench::{Counting, run_all};

#[global_allocator]
static ALLOC: Counting = Counting;

fn main() {
    async_std::task::block_on(run_all(tenure_async_std::AsyncStd, "async-std"));
}
