//! Mutual exclusion under a store's faults, written once: workers on separate connections take
//! one lock over and over while the test crashes, freezes and restarts the store; afterwards no
//! two critical sections whose holder believed its lease valid at both ends may overlap, their
//! fences must climb, and the workers must have recovered once the store is calm.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tenure_tokio::{Lock, Tokio};

use crate::Store;
use crate::faults::Server;

/// One critical section as its holder saw it.
#[derive(Clone, Copy, Debug)]
struct Section {
    start: Instant,
    end: Instant,
    fence: u64,
    /// The lease was valid (locally, by the holder's conservative clock) at both ends.
    valid: bool,
}

/// Runs a worker per store (leases of 800 ms, backend timeout 300 ms) while the server crashes
/// and restarts (at 1.0 and 1.4 s), freezes for longer than a lease (3.0 to 4.2 s), and crashes
/// with an immediate restart (5.0 s), and until the workers have recovered (at least until 9 s);
/// then checks the sections.
pub async fn under_crashes_and_freezes_no_two_valid_holders_overlap<S: Server>(server: &Mutex<S>, stores: Vec<Store>) {
    let begin = Instant::now();
    let at = |s: f64| tokio::time::sleep_until((begin + Duration::from_secs_f64(s)).into());
    let chaos = async {
        at(1.0).await;
        server.lock().expect("server").kill9();
        at(1.4).await;
        server.lock().expect("server").restart();
        at(3.0).await;
        server.lock().expect("server").freeze();
        at(4.2).await;
        server.lock().expect("server").thaw();
        at(5.0).await;
        server.lock().expect("server").restart();
    };
    no_two_valid_holders_overlap(stores, begin, Duration::from_secs(9), chaos).await;
}

/// Sections that began after `calm`.
fn after(sections: &Mutex<Vec<Section>>, calm: Instant) -> usize {
    sections.lock().expect("sections").iter().filter(|s| s.valid && s.start > calm).count()
}

/// Runs a worker per store from `begin` (leases of 800 ms, backend timeout 300 ms), while
/// `chaos` does its harm and returns when the store is calm again, until `run_for` has passed and
/// three sections began after the calm (up to 30 s after it: a restarted store on a loaded
/// machine may take seconds to serve again, and the leases it kept to end); then checks the
/// sections.
async fn no_two_valid_holders_overlap(
    stores: Vec<Store>,
    begin: Instant,
    run_for: Duration,
    chaos: impl Future<Output = ()>,
) {
    let sections = Arc::new(Mutex::new(Vec::<Section>::new()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let workers: Vec<_> = stores
        .into_iter()
        .map(|store| {
            let (sections, stop) = (sections.clone(), stop.clone());
            let lock = Lock::builder("chaos", Tokio::current())
                .shared_backend(store.lock)
                .lease_duration(Duration::from_millis(800))
                .backend_timeout(Duration::from_millis(300))
                .retry_interval(Duration::from_millis(100))
                .env_load(false)
                .build()
                .expect("a lock");
            tokio::spawn(async move {
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    match lock.acquire_timeout(Duration::from_secs(2)).await {
                        Ok(guard) => {
                            let start = Instant::now();
                            let valid_at_start = guard.is_valid();
                            tokio::time::sleep(Duration::from_millis(20)).await;
                            let end = Instant::now();
                            let valid = valid_at_start && guard.is_valid();
                            let fence = guard.fencing_token().get();
                            sections.lock().expect("sections").push(Section { start, end, fence, valid });
                            let _ = guard.release().await;
                        }
                        Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                    }
                }
            })
        })
        .collect();
    chaos.await;
    let calm = Instant::now();
    // (a condition, polled: the workers run on until it holds or the slack is spent)
    while (begin.elapsed() < run_for || after(&sections, calm) < 3) && calm.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    for worker in workers {
        worker.await.expect("worker");
    }

    let mut valid: Vec<Section> = sections.lock().expect("sections").iter().copied().filter(|s| s.valid).collect();
    valid.sort_by_key(|s| s.start);
    assert!(valid.len() >= 10, "only {} valid sections", valid.len());
    for pair in valid.windows(2) {
        assert!(pair[0].end <= pair[1].start, "overlapping valid holders: {:?} and {:?}", pair[0], pair[1]);
        assert!(pair[0].fence < pair[1].fence, "fences not increasing: {:?} then {:?}", pair[0], pair[1]);
    }
    let after = after(&sections, calm);
    assert!(
        after >= 3,
        "only {after} sections in the {:?} after the store was calm: the workers did not recover",
        calm.elapsed()
    );
}
