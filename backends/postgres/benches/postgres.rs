//! `cargo bench -p tenure-postgres`: Tenure's locks and elections on the PostgreSQL server of
//! this machine (`TENURE_POSTGRES_URL`, default `postgresql://postgres@127.0.0.1:5432/test`) on
//! fresh tables, beside the client's own floor: the same two statements (the acquire upsert and
//! the announcing release) run in turn by `pgbench` (one client, prepared) and on one
//! tokio-postgres connection. Prints medians and rates; asserts nothing. scripts/bench-peer.sh
//! puts the figures beside grelmicro 0.44's.
#![allow(clippy::print_stdout, clippy::cast_precision_loss)]

use std::time::Duration;

use tenure_conformance::Store;
use tenure_conformance::bench::{self, BATCH, BATCHES, RUN, TASKS, per_call, us};
use tenure_postgres::{PostgresBackend, PostgresOptions};

fn url() -> String {
    std::env::var("TENURE_POSTGRES_URL").unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/test".into())
}

fn stem() -> String {
    format!("bench_{}", std::process::id())
}

async fn open() -> PostgresBackend {
    let options = PostgresOptions::from_url(&url())
        .expect("url")
        .lock_table(format!("{}_locks", stem()))
        .leader_table(format!("{}_leaders", stem()))
        .schedule_table(format!("{}_schedules", stem()))
        .rwlock_table(format!("{}_rwlocks", stem()));
    options.open(tenure_tokio::Tokio::current()).await.expect("open PostgreSQL")
}

async fn raw() -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(&url(), tokio_postgres::NoTls).await.expect("connect");
    tokio::spawn(connection);
    client
}

/// The floor: the acquire and the release statements Tenure runs, prepared on one connection.
async fn statements_floor(store: &PostgresBackend) -> Duration {
    let client = raw().await;
    let (acquire, release) = store.lock_statements();
    let acquire = client.prepare(acquire).await.expect("prepare acquire");
    let release = client.prepare(release).await.expect("prepare release");
    let (name, token, micros, details) = ("lock:floor", "floor-token", 60_000_000_i64, None::<&str>);
    per_call(|| async {
        client.query_opt(&acquire, &[&name, &token, &micros, &details]).await.expect("acquire");
        client.query_one(&release, &[&name, &token]).await.expect("release");
    })
    .await
}

/// The same statements run by `pgbench` (one client, prepared, 5 s): its average latency per
/// cycle, if pgbench is installed.
fn pgbench_floor(store: &PostgresBackend) -> Option<Duration> {
    let (acquire, release) = store.lock_statements();
    // pgbench reads `:word` as a variable, even inside a string: constants without colons.
    let constants = |sql: &str| {
        sql.replace("$3::bigint", "CAST(60000000 AS bigint)")
            .replace("$4::text", "CAST(NULL AS text)")
            .replace("$1", "'pgbench_lock'")
            .replace("$2", "'pgbench-token'")
    };
    let script = std::env::temp_dir().join(format!("tenure-pgbench-{}.sql", std::process::id()));
    std::fs::write(&script, format!("{};\n{};\n", constants(acquire), constants(release))).ok()?;
    let bindir = std::process::Command::new("pg_config").arg("--bindir").output().ok()?;
    let pgbench = std::path::PathBuf::from(String::from_utf8_lossy(&bindir.stdout).trim()).join("pgbench");
    let out = std::process::Command::new(pgbench)
        .args(["-n", "-c", "1", "-j", "1", "-T", "5", "-M", "prepared", "-f"])
        .arg(&script)
        .arg(url())
        .output()
        .ok()?;
    let _ = std::fs::remove_file(&script);
    let text = String::from_utf8_lossy(&out.stdout);
    let ms: f64 = text.lines().find_map(|l| l.strip_prefix("latency average = ")?.strip_suffix(" ms")?.parse().ok())?;
    Some(Duration::from_secs_f64(ms / 1000.0))
}

async fn drop_tables() {
    let t = stem();
    let sql = format!(
        "DROP TABLE IF EXISTS {t}_locks, {t}_locks_queue, {t}_locks_details, {t}_leaders, {t}_schedules; \
         DROP FUNCTION IF EXISTS {t}_leaders_le_acquire_or_renew_v2, {t}_locks_queue_acquire, \
             {t}_locks_queue_release, {t}_locks_queue_hand_over"
    );
    raw().await.batch_execute(&sql).await.expect("drop the bench tables");
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("tokio");
    runtime.block_on(async {
        let backend = open().await;
        let floor = statements_floor(&backend).await;
        let pgbench = pgbench_floor(&backend);
        let (store, other) = (Store::of(backend), Store::of(open().await));
        let one = bench::one_task(&store).await;
        let contended = bench::many_tasks(&store, 1).await;
        let spread = bench::many_tasks(&store, TASKS).await;
        let handoff = bench::handoff(&store, &other).await;
        let handover = bench::leader_handover(&store, &other).await;
        println!(
            "PostgreSQL, tenure on tokio, 2 worker threads (medians of {BATCHES} batches of {BATCH}, rates over {RUN:?}):"
        );
        match pgbench {
            Some(p) => println!("  floor (the same statements, pgbench):        {:>8.1} us", us(p)),
            None => println!("  floor (the same statements, pgbench):        not measured (no pgbench)"),
        }
        println!("  floor (the same statements, tokio-postgres): {:>8.1} us", us(floor));
        println!("  one task, acquire + release:          {:>8.1} us", us(one));
        println!("  {TASKS} tasks on one name:                {:>8.0} cycles/s", contended.rate);
        println!("  fairness on one name (Jain's index):  {:>8.3}", contended.fairness);
        println!("  {TASKS} tasks on {TASKS} names:                 {:>8.0} cycles/s", spread.rate);
        println!("  release to next waiter's grant:       {:>8.1} us", us(handoff));
        println!("  leader hand-over after a clean stop:  {:>8.1} us", us(handover));
        drop_tables().await;
    });
}
