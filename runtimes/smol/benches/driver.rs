//! `cargo bench -p tenure-smol`: the driver benchmarks on smol.

use tenure_suite::bench::{Counting, run_all};

#[global_allocator]
static ALLOC: Counting = Counting;

fn main() {
    smol::block_on(run_all(tenure_smol::Smol::global(), "smol (global executor)"));
}
