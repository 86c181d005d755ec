//! A chaos run through Redis Sentinel: three workers contend for one lock for 20 s while the
//! master is killed twice (each killed master restarted as a replica of the new one, as an
//! operator brings it back), and a protected resource accepts a write only with a fencing token
//! at least as high as the last it accepted (a token equal to it only from the same section).
//! Sections whose writes the resource accepted never overlap; the tokens it accepted strictly
//! increase; every worker has sections accepted; and the workers make progress after each
//! failover, once progress is possible: at once without `min_replicas`, and with
//! `min_replicas=1` once the master has a replica attached and in sync (until then every grant
//! is refused, by design). The run waits for that progress instead of hoping a fixed time is
//! enough. Run with and without `min_replicas=1`; prints what each run saw (grants, sections the
//! resource refused, tokens handed out twice, `FenceRegression` reports).

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tenure::{BackendErrorKind, Lock};
use tenure_conformance::faults::Server as _;
use tenure_redis::RedisOptions;
use tenure_tokio::Tokio;

use common::fresh_prefix;
use common::sentinel::Group;

const WORKERS: usize = 3;
const RUN: Duration = Duration::from_secs(20);
/// How long the workers may take to have a section accepted once a failover's new master can
/// grant: generous, for a loaded machine (they take one in well under a second).
const PROGRESS: Duration = Duration::from_secs(30);

/// A section a worker ran: its token, who ran it, when, and whether every write was accepted.
#[derive(Clone, Copy, Debug)]
struct Section {
    fence: u64,
    worker: usize,
    start: Instant,
    end: Instant,
    accepted: bool,
}

/// The protected resource: the highest token it accepted, and the section that wrote it.
#[derive(Default)]
struct Resource {
    last: Option<(u64, usize, Instant)>,
    accepted: Vec<u64>,
    /// When each section whose every write was accepted began, as they end.
    completed: Vec<Instant>,
}

impl Resource {
    /// A write by `section` (worker, start) with `fence`: accepted iff the token is above the
    /// last accepted, or is it and comes from the same section.
    fn write(&mut self, fence: u64, worker: usize, start: Instant) -> bool {
        let ok = match self.last {
            None => true,
            Some((last, w, s)) => fence > last || (fence == last && w == worker && s == start),
        };
        if ok {
            if self.last.is_none_or(|(last, _, _)| fence > last) {
                self.accepted.push(fence);
            }
            self.last = Some((fence, worker, start));
        }
        ok
    }
}

#[derive(Default)]
struct Seen {
    sections: Vec<Section>,
    regressions: usize,
    errors: usize,
}

async fn worker(id: usize, url: String, prefix: String, resource: Arc<Mutex<Resource>>, stop: Arc<AtomicBool>) -> Seen {
    let options = RedisOptions::from_url(&url).expect("url").prefix(prefix).command_timeout(Duration::from_secs(1));
    let store = options.open(Tokio::current()).await.expect("open through the sentinels");
    let lock = Lock::builder("chaos", Tokio::current())
        .backend(store)
        .lease_duration(Duration::from_secs(2))
        .retry_interval(Duration::from_millis(50))
        .backend_timeout(Duration::from_millis(1500))
        .env_load(false)
        .build()
        .expect("a lock");
    let mut seen = Seen::default();
    while !stop.load(Ordering::SeqCst) {
        match lock.acquire_timeout(Duration::from_secs(1)).await {
            Ok(guard) => {
                let fence = guard.fencing_token().get();
                let start = Instant::now();
                let first = resource.lock().expect("resource").write(fence, id, start);
                tokio::time::sleep(Duration::from_millis(20)).await;
                let second = resource.lock().expect("resource").write(fence, id, start);
                let end = Instant::now();
                if first && second {
                    resource.lock().expect("resource").completed.push(start);
                }
                seen.sections.push(Section { fence, worker: id, start, end, accepted: first && second });
                let _ = guard.release().await;
            }
            Err(e) => {
                seen.errors += 1;
                if e.backend_error().is_some_and(|b| b.kind() == BackendErrorKind::FenceRegression) {
                    seen.regressions += 1;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
    seen
}

async fn chaos(params: &str) {
    let mut group = Group::start(2, 3);
    let url = format!("{}{params}", group.url());
    let (prefix, resource, stop) =
        (fresh_prefix(), Arc::new(Mutex::new(Resource::default())), Arc::new(AtomicBool::new(false)));
    let started = Instant::now();
    let workers: Vec<_> = (0..WORKERS)
        .map(|id| tokio::spawn(worker(id, url.clone(), prefix.clone(), resource.clone(), stop.clone())))
        .collect();

    let replicas = usize::from(params.contains("min_replicas=1"));
    for (i, at) in [Duration::from_secs(5), Duration::from_secs(12)].into_iter().enumerate() {
        tokio::time::sleep((started + at).saturating_duration_since(Instant::now())).await;
        let old = group.master_port();
        let killed = Instant::now();
        group.server(old).kill9();
        let new = tokio::task::block_in_place(|| group.wait_for_new_master(old, Duration::from_secs(30)));
        let promoted = killed.elapsed();
        group.server(old).restart_as_replica_of(new);
        // With min_replicas=1 a grant needs a replica to acknowledge it: none can be made
        // before one is attached to the master and in sync.
        let granting = tokio::task::block_in_place(|| group.wait_for_synced_master(replicas, Duration::from_secs(60)));
        let possible = Instant::now();
        eprintln!(
            "chaos{params}: master {old} killed at {:?}, {new} master {promoted:?} later, {granting} granting {:?} later",
            killed - started,
            killed.elapsed()
        );
        let deadline = possible + PROGRESS;
        while !resource.lock().expect("resource").completed.iter().any(|s| *s > possible) {
            assert!(
                Instant::now() < deadline,
                "no section accepted within {PROGRESS:?} once failover {} could grant",
                i + 1
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    tokio::time::sleep((started + RUN).saturating_duration_since(Instant::now())).await;
    stop.store(true, Ordering::SeqCst);
    let mut seen = Vec::new();
    for w in workers {
        seen.push(w.await.expect("a worker"));
    }

    let sections: Vec<Section> = seen.iter().flat_map(|s| s.sections.iter().copied()).collect();
    let mut accepted: Vec<Section> = sections.iter().copied().filter(|s| s.accepted).collect();
    accepted.sort_by_key(|s| s.start);
    for pair in accepted.windows(2) {
        assert!(pair[0].end <= pair[1].start, "accepted sections overlap: {pair:?}");
        assert!(pair[0].fence < pair[1].fence, "accepted fences go back: {pair:?}");
    }
    let tokens = resource.lock().expect("resource").accepted.clone();
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
    let per_worker: Vec<usize> = (0..WORKERS).map(|w| accepted.iter().filter(|s| s.worker == w).count()).collect();
    let mut fences: Vec<u64> = sections.iter().map(|s| s.fence).collect();
    fences.sort_unstable();
    let handed = fences.len();
    fences.dedup();
    eprintln!(
        "chaos{params}: {} sections ({} accepted, {} refused by the resource), {} tokens handed out twice, {} \
         FenceRegression reports, {} failed acquires; accepted per worker {:?}",
        sections.len(),
        accepted.len(),
        sections.len() - accepted.len(),
        handed - fences.len(),
        seen.iter().map(|s| s.regressions).sum::<usize>(),
        seen.iter().map(|s| s.errors).sum::<usize>(),
        per_worker
    );
    assert!(per_worker.iter().all(|&n| n > 0), "every worker had sections accepted: {per_worker:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workers_through_two_failovers_never_overlap_in_what_the_resource_accepts() {
    chaos("").await;
    chaos("?min_replicas=1").await;
}
