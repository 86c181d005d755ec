//! `cargo bench -p tenure-sqlite`: one task's acquire + release through a `Lock` on a SQLite
//! file, beside the floor (the same two transactions run directly on a rusqlite connection).
//! Prints medians; asserts nothing. scripts/bench-peer.sh puts it beside grelmicro 0.44.
#![allow(clippy::print_stdout, clippy::cast_precision_loss)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use rusqlite::Connection;
use tenure_sqlite::{SqliteOptions, Synchronous};
use tenure_tokio::{Lock, Tokio};

const BATCH: u32 = 100;
const BATCHES: usize = 11;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tenure-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir.join(name)
}

async fn through_lock(synchronous: Synchronous, file: &str) -> Duration {
    let store = SqliteOptions::new(path(file)).synchronous(synchronous).open().await.expect("open");
    let lock = Lock::builder("bench", Tokio::current()).backend(store.clone()).env_load(false).build().expect("lock");
    let mut samples = Vec::new();
    for batch in 0..=BATCHES {
        let start = Instant::now();
        for _ in 0..BATCH {
            let guard = lock.acquire().await.expect("acquire");
            guard.release().await.expect("release");
        }
        if batch > 0 {
            samples.push(start.elapsed() / BATCH); // the first batch warms up
        }
    }
    store.close().await.expect("close");
    median(samples)
}

/// The same statements grelmicro and tenure run, on one connection, no driver, no thread hop.
fn floor(synchronous: &str, file: &str) -> Duration {
    let db = Connection::open(path(file)).expect("open");
    db.execute_batch(&format!(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = {synchronous};
         CREATE TABLE IF NOT EXISTS locks (name TEXT PRIMARY KEY, token TEXT, expire_at TEXT, fence INTEGER NOT NULL DEFAULT 0);"
    ))
    .expect("prepare");
    let acquire = "INSERT INTO locks (name, token, expire_at, fence) VALUES ('lock:bench', ?1, strftime('%Y-%m-%d %H:%M:%f', 'now', '+60 seconds'), 1) \
        ON CONFLICT (name) DO UPDATE SET token = excluded.token, expire_at = excluded.expire_at, fence = locks.fence + 1 \
        WHERE locks.token IS NULL OR substr(locks.expire_at || '.999', 1, 23) < strftime('%Y-%m-%d %H:%M:%f', 'now') RETURNING fence";
    let release =
        "UPDATE locks SET token = NULL, expire_at = NULL WHERE name = 'lock:bench' AND token = ?1 RETURNING 1";
    let mut samples = Vec::new();
    for batch in 0..=BATCHES {
        let start = Instant::now();
        for i in 0..BATCH {
            let token = format!("t{batch}.{i}");
            db.execute_batch("BEGIN IMMEDIATE").expect("begin");
            let _: i64 = db.query_row(acquire, [&token], |r| r.get(0)).expect("acquire");
            db.execute_batch("COMMIT").expect("commit");
            db.execute_batch("BEGIN IMMEDIATE").expect("begin");
            let _: i64 = db.query_row(release, [&token], |r| r.get(0)).expect("release");
            db.execute_batch("COMMIT").expect("commit");
        }
        if batch > 0 {
            samples.push(start.elapsed() / BATCH);
        }
    }
    median(samples)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("tokio");
    let full = runtime.block_on(through_lock(Synchronous::Full, "full.db"));
    let normal = runtime.block_on(through_lock(Synchronous::Normal, "normal.db"));
    let floor_full = floor("FULL", "floor-full.db");
    let floor_normal = floor("NORMAL", "floor-normal.db");
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!("SQLite file, one task, acquire + release (median of {BATCHES} batches of {BATCH}):");
    println!(
        "  synchronous=full:   tenure {:>8.1} us   floor {:>8.1} us   ratio {:.2}",
        us(full),
        us(floor_full),
        us(full) / us(floor_full)
    );
    println!(
        "  synchronous=normal: tenure {:>8.1} us   floor {:>8.1} us   ratio {:.2}",
        us(normal),
        us(floor_normal),
        us(normal) / us(floor_normal)
    );
    let _ = std::fs::remove_dir_all(path("x").parent().expect("the directory"));
}
