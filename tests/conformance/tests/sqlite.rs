//! The conformance suite on SQLite: a file per store, judged by a clock the test drives (exact
//! boundaries), and once more by the system clock.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tenure_conformance::{Clock, Harness, Leases, ManualClock, Store};
use tenure_sqlite::SqliteOptions;

/// A fresh database file under the target directory's temporary folder.
fn fresh_path() -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!("tenure-conformance-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    dir.join(format!("store-{}.db", NEXT.fetch_add(1, Ordering::SeqCst)))
}

async fn open(options: SqliteOptions) -> Store {
    let store = match options.open().await {
        Ok(store) => store,
        Err(e) => panic!("cannot open the SQLite store: {e}"),
    };
    Store::of(store)
}

fn sqlite_manual() -> Harness {
    let clock = ManualClock::new();
    let store_clock = clock.clone();
    Harness {
        name: "sqlite (driven clock)",
        clock: Clock::Manual(clock),
        leases: Leases::AS_ASKED,
        make: Box::new(move || {
            let clock = store_clock.clone();
            Box::pin(open(SqliteOptions::new(fresh_path()).clock(move || clock.now())))
        }),
    }
}

fn sqlite_real() -> Harness {
    Harness {
        name: "sqlite (system clock)",
        clock: Clock::Real { quantum: Duration::from_millis(100) },
        leases: Leases::AS_ASKED,
        make: Box::new(|| Box::pin(open(SqliteOptions::new(fresh_path())))),
    }
}

mod driven_clock {
    use super::*;
    tenure_conformance::conformance_tests!(sqlite_manual());
    tenure_conformance::rw_conformance_tests!(sqlite_manual());
    tenure_conformance::sem_conformance_tests!(sqlite_manual());
}

mod system_clock {
    use super::*;
    tenure_conformance::conformance_tests!(sqlite_real());
    tenure_conformance::rw_conformance_tests!(sqlite_real());
    tenure_conformance::sem_conformance_tests!(sqlite_real());
}

#[tokio::test]
async fn holder_details_are_kept_beside_each_grant() {
    let store = SqliteOptions::new(fresh_path()).open().await.expect("open");
    tenure_conformance::inspect::holder_details_are_kept_beside_each_grant(&store).await;
    tenure_conformance::inspect::holder_details_follow_a_hand_off(&store, false).await;
}

#[tokio::test]
async fn inspection_lists_read_write_locks_and_semaphores() {
    let store = SqliteOptions::new(fresh_path()).open().await.expect("open");
    tenure_conformance::inspect::inspection_lists_read_write_locks_and_semaphores(&store).await;
    tenure_conformance::shared_details::read_write_holders_show_their_details(&store).await;
    tenure_conformance::shared_details::permit_holders_show_their_details(&store).await;
    tenure_conformance::shared_details::leaders_show_their_details(&store).await;
}
