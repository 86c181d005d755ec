//! `cargo bench -p tenure-conformance --bench details`: what holder details cost a cycle (a fresh
//! grant and its release) of a lock, a semaphore's permit and a read-write lock's read, on SQLite,
//! Redis and PostgreSQL, against the same cycle without them, in one run. Counts where the store gives them — Redis's own accounting (`INFO
//! commandstats`: commands and server CPU per cycle) and PostgreSQL's WAL bytes per cycle — and
//! medians of interleaved batches for time. Asserts nothing. Needs `redis-cli` and `psql`, and
//! the servers of `TENURE_REDIS_URL` / `TENURE_POSTGRES_URL` (defaults: this machine's).
#![allow(clippy::print_stdout, clippy::cast_precision_loss)]

use std::process::Command;
use std::time::{Duration, Instant};

use tenure::backend::{LockBackend, LockCalls, ReadWriteCalls, ReadWriteLockBackend, SemaphoreBackend, SemaphoreCalls};
use tenure_conformance::bench::{median, us};
use tenure_core::{HolderDetails, Key, StoreOp, Token};

/// A store serving every kind measured.
trait Store: LockBackend + SemaphoreBackend + ReadWriteLockBackend {}
impl<T: LockBackend + SemaphoreBackend + ReadWriteLockBackend> Store for T {}

/// What a cycle takes.
#[derive(Clone, Copy)]
enum Kind {
    Lock,
    Permit,
    Read,
}

const KINDS: [Kind; 3] = [Kind::Lock, Kind::Permit, Kind::Read];

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Self::Lock => "lock:details",
            Self::Permit => "semaphore:details",
            Self::Read => "rwlock:details",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::Lock => "lock",
            Self::Permit => "permit",
            Self::Read => "read",
        }
    }
}

const CYCLES: u32 = 2_000;
const BATCH: u32 = 200;

fn details() -> HolderDetails {
    let text =
        r#"{"host":"web-3.example.internal","pid":424242,"program":"python3 worker.py","purpose":"nightly export"}"#;
    HolderDetails::new(text).expect("details")
}

/// One cycle: a fresh grant (with or without details) and its release.
async fn cycle<S: Store>(store: &S, kind: Kind, with: bool) {
    const TOKEN: &str = "w1:task:1.aa";
    let (name, lease, details) = (kind.name(), Duration::from_secs(30), with.then(details));
    let (key, token) = (Key::parse(name).expect("key"), Token::new(TOKEN).expect("token"));
    let released = match kind {
        Kind::Lock => {
            LockBackend::execute(store, StoreOp::LockAcquire { key, token, lease, details }).await.expect("acquire");
            LockCalls::release(store, name, TOKEN).await
        }
        Kind::Permit => {
            let op = StoreOp::SemAcquire { key, token, lease, permits: 4, wait: None, details };
            SemaphoreBackend::execute(store, op).await.expect("acquire");
            SemaphoreCalls::release(store, name, TOKEN).await
        }
        Kind::Read => {
            ReadWriteLockBackend::execute(store, StoreOp::RwAcquireRead { key, token, lease, details })
                .await
                .expect("acquire");
            ReadWriteCalls::release_read(store, name, TOKEN).await
        }
    };
    assert!(released.expect("release"), "{name}: released");
}

/// Median µs per cycle of each variant, over interleaved batches (so drift hits both alike).
async fn timed<S: Store>(store: &S, kind: Kind) -> (f64, f64) {
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for round in 0..(CYCLES / BATCH) * 2 {
        let details = round % 2 == 1;
        let start = Instant::now();
        for _ in 0..BATCH {
            cycle(store, kind, details).await;
        }
        let per = start.elapsed() / BATCH;
        if details { with.push(per) } else { without.push(per) }
    }
    (us(median(without)), us(median(with)))
}

fn run(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(out.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Redis's own count of commands and µs of server CPU since the last reset.
fn redis_counts(url: &str) -> (u64, f64) {
    let info = run("redis-cli", &["-u", url, "INFO", "commandstats"]);
    let (mut calls, mut usec) = (0u64, 0.0);
    for line in info.lines().filter(|l| l.starts_with("cmdstat_")) {
        // (the INFO and CONFIG calls themselves are not the cycle's)
        if line.starts_with("cmdstat_info") || line.starts_with("cmdstat_config") {
            continue;
        }
        for field in line.split(':').nth(1).unwrap_or_default().split(',') {
            match field.split_once('=') {
                Some(("calls", n)) => calls += n.parse::<u64>().unwrap_or(0),
                Some(("usec", n)) => usec += n.parse::<f64>().unwrap_or(0.0),
                _ => {}
            }
        }
    }
    (calls, usec)
}

async fn redis(url: &str) {
    let prefix = format!("tenure-bench-details-{}:", std::process::id());
    let store = tenure_redis::RedisOptions::from_url(url)
        .expect("url")
        .prefix(prefix)
        .open(tenure_tokio::Tokio::current())
        .await
        .expect("open Redis");
    for kind in KINDS {
        let mut counted = Vec::new();
        for with in [false, true] {
            cycle(&store, kind, with).await; // (scripts loaded)
            run("redis-cli", &["-u", url, "CONFIG", "RESETSTAT"]);
            for _ in 0..CYCLES {
                cycle(&store, kind, with).await;
            }
            let (calls, usec) = redis_counts(url);
            counted.push((calls as f64 / f64::from(CYCLES), usec / f64::from(CYCLES)));
        }
        let (without, with) = timed(&store, kind).await;
        println!(
            "redis {}: per cycle, commands {:.1} -> {:.1}, server CPU {:.1} -> {:.1} us ({:.2}x); time {without:.1} -> {with:.1} us ({:.2}x)",
            kind.label(),
            counted[0].0,
            counted[1].0,
            counted[0].1,
            counted[1].1,
            counted[1].1 / counted[0].1,
            with / without
        );
    }
}

async fn postgres(url: &str) {
    let table = format!("bench_details_{}", std::process::id());
    let full = format!(
        "{url}?lock_table={table}_locks&leader_table={table}_leaders&schedule_table={table}_schedules\
         &rwlock_table={table}_rw&semaphore_table={table}_sem"
    );
    let options = tenure_postgres::PostgresOptions::from_url(&full).expect("url");
    let store = options.open(tenure_tokio::Tokio::current()).await.expect("open PostgreSQL");
    let lsn = || run("psql", &[url, "-Atc", "SELECT pg_current_wal_lsn()"]).trim().to_owned();
    for kind in KINDS {
        let mut wal = Vec::new();
        for with in [false, true] {
            cycle(&store, kind, with).await;
            let before = lsn();
            for _ in 0..CYCLES {
                cycle(&store, kind, with).await;
            }
            let after = lsn();
            let bytes = run("psql", &[url, "-Atc", &format!("SELECT pg_wal_lsn_diff('{after}', '{before}')")]);
            wal.push(bytes.trim().parse::<f64>().unwrap_or(f64::NAN) / f64::from(CYCLES));
        }
        let (without, with) = timed(&store, kind).await;
        println!(
            "postgres {}: per cycle, WAL {:.0} -> {:.0} bytes; time {without:.1} -> {with:.1} us ({:.2}x)",
            kind.label(),
            wal[0],
            wal[1],
            with / without
        );
    }
    let drop = format!(
        "DROP TABLE IF EXISTS {table}_locks, {table}_locks_details, {table}_locks_queue, {table}_leaders, \
         {table}_leaders_fences, {table}_schedules, {table}_rw, {table}_rw_holders, {table}_rw_details, \
         {table}_sem, {table}_sem_holders, {table}_sem_details CASCADE"
    );
    run("psql", &[url, "-qAtc", &drop]);
}

async fn sqlite() {
    let dir = std::env::temp_dir().join(format!("tenure-bench-details-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let store = tenure_sqlite::SqliteOptions::new(dir.join("locks.db")).open().await.expect("open SQLite");
    for kind in KINDS {
        let (without, with) = timed(&store, kind).await;
        println!("sqlite {}: per cycle, time {without:.1} -> {with:.1} us ({:.2}x)", kind.label(), with / without);
    }
    let _ = std::fs::remove_dir_all(dir);
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let redis_url = std::env::var("TENURE_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let pg_url =
        std::env::var("TENURE_POSTGRES_URL").unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/test".into());
    println!("holder details: a cycle (fresh grant + release) without -> with them, {CYCLES} cycles each");
    runtime.block_on(async {
        sqlite().await;
        redis(&redis_url).await;
        postgres(&pg_url).await;
    });
}
