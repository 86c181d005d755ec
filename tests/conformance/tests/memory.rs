//! The conformance suite on the in-process memory backend (real time).

use std::time::Duration;

use tenure::MemoryBackend;
use tenure_conformance::{Clock, Harness, Leases, Store};

fn memory() -> Harness {
    Harness {
        name: "memory",
        clock: Clock::Real { quantum: Duration::from_millis(100) },
        leases: Leases::AS_ASKED,
        make: Box::new(|| {
            Box::pin(async {
                let store = MemoryBackend::new();
                Store::of(store)
            })
        }),
    }
}

tenure_conformance::conformance_tests!(memory());
tenure_conformance::rw_conformance_tests!(memory());
tenure_conformance::sem_conformance_tests!(memory());
