//! Shared by the PostgreSQL tests: the server of this machine, fresh tables, raw statements,
//! and a server of the test's own.

#![allow(dead_code, unreachable_pub)]

pub mod server;

use std::hash::{BuildHasher, RandomState};

use tenure::net::Net;
use tenure_postgres::{PostgresBackend, PostgresOptions};
use tenure_tokio::Tokio;

/// The shared server (`TENURE_POSTGRES_URL`, default `postgresql://postgres@127.0.0.1:5432/test`).
pub fn url() -> String {
    std::env::var("TENURE_POSTGRES_URL").unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/test".into())
}

/// A table-name stem no other test or run uses.
pub fn fresh_tables() -> String {
    format!("t{:016x}", RandomState::new().hash_one(std::time::SystemTime::now()))
}

/// Options on `url` using the tables named after `stem`.
pub fn options(url: &str, stem: &str) -> PostgresOptions {
    PostgresOptions::from_url(url)
        .unwrap_or_else(|e| panic!("bad URL {url}: {e}"))
        .lock_table(format!("{stem}_locks"))
        .leader_table(format!("{stem}_leaders"))
        .schedule_table(format!("{stem}_schedules"))
        .rwlock_table(format!("{stem}_rwlocks"))
        .semaphore_table(format!("{stem}_semaphores"))
}

/// A backend on `url` with the tables of `stem`, on `runtime`.
pub async fn open_on(url: &str, stem: &str, runtime: impl Net) -> PostgresBackend {
    match options(url, stem).open(runtime).await {
        Ok(store) => store,
        Err(e) => panic!("cannot reach PostgreSQL at {url} (start it as TOOLCHAIN.md says): {e}"),
    }
}

/// A backend on `url` with the tables of `stem`, on the tokio runtime of the caller.
pub async fn open_at(url: &str, stem: &str) -> PostgresBackend {
    open_on(url, stem, Tokio::current()).await
}

/// A backend on the shared server with fresh tables, and their stem.
pub async fn open() -> (PostgresBackend, String) {
    let stem = fresh_tables();
    (open_at(&url(), &stem).await, stem)
}

/// Runs `sql` with `psql` on `url` and returns what it printed (unaligned, tuples only).
pub fn psql(url: &str, sql: &str) -> String {
    let out = std::process::Command::new("psql")
        .args([url, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .output()
        .expect("psql (apt-get install postgresql-client)");
    assert!(out.status.success(), "psql {sql}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}
