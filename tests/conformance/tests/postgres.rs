//! The conformance suite on PostgreSQL: the server of this machine (`TENURE_POSTGRES_URL`,
//! default `postgresql://postgres@127.0.0.1:5432/test`), fresh tables per store, leases judged by
//! the server's clock.

use std::time::Duration;

use tenure_conformance::{Clock, Harness, Leases, Store};
use tenure_postgres::PostgresOptions;

fn url() -> String {
    std::env::var("TENURE_POSTGRES_URL").unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/test".into())
}

async fn open() -> Store {
    let tables = format!("conformance_{:016x}", rand_suffix());
    let options = match PostgresOptions::from_url(&url()) {
        Ok(options) => options
            .lock_table(format!("{tables}_locks"))
            .leader_table(format!("{tables}_leaders"))
            .schedule_table(format!("{tables}_schedules"))
            .rwlock_table(format!("{tables}_rwlocks"))
            .semaphore_table(format!("{tables}_semaphores")),
        Err(e) => panic!("bad TENURE_POSTGRES_URL: {e}"),
    };
    let store = match options.open(tenure_tokio::Tokio::current()).await {
        Ok(store) => store,
        Err(e) => panic!("cannot reach the PostgreSQL server (start it as TOOLCHAIN.md says): {e}"),
    };
    Store::of(store)
}

/// A suffix no other store of any run has used.
fn rand_suffix() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now())
}

fn postgres() -> Harness {
    Harness {
        name: "postgres",
        clock: Clock::Real { quantum: Duration::from_millis(100) },
        leases: Leases::AS_ASKED,
        make: Box::new(|| Box::pin(open())),
    }
}

tenure_conformance::conformance_tests!(postgres());
tenure_conformance::rw_conformance_tests!(postgres());
tenure_conformance::sem_conformance_tests!(postgres());
