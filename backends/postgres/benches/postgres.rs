//! `cargo bench -p tenure-postgres`: Tenure's locks and elections on the PostgreSQL server of
//! this machine (`TENURE_POSTGRES_URL`, default `postgresql://postgres@127.0.0.1:5432/test`) on
//! fresh tables, beside the client's own floor: the same two statements (the acquire upsert and
//! the announcing release) prepared on one tokio-postgres connection and run in turn. Prints
//! medians and rates; asserts nothing. scripts/bench-peer.sh puts the figures beside `pgbench`
//! running the same statements and grelmicro 0.44.
#![allow(clippy::print_stdout, clippy::cast_precision_loss)]

use std::time::Duration;

use tenure_conformance::Store;
use tenure_conformance::bench::{self, BATCH, BATCHES, RUN, TASKS, per_call, us};
use tenure_postgres::PostgresOptions;

fn url() -> String {
    std::env::var("TENURE_POSTGRES_URL").unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/test".into())
}

fn stem() -> String {
    format!("bench_{}", std::process::id())
}

async fn open() -> Store {
    let options = PostgresOptions::from_url(&url())
        .expect("url")
        .lock_table(format!("{}_locks", stem()))
        .leader_table(format!("{}_leaders", stem()))
        .schedule_table(format!("{}_schedules", stem()));
    Store::of(options.open().await.expect("open PostgreSQL"))
}

async fn raw() -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(&url(), tokio_postgres::NoTls).await.expect("connect");
    tokio::spawn(connection);
    client
}

/// The floor: the acquire and the release statements Tenure runs, prepared on one connection.
async fn statements_floor() -> Duration {
    let client = raw().await;
    let t = format!("{}_locks", stem());
    let acquire = client
        .prepare(&format!(
            "INSERT INTO {t} (name, token, expire_at, fence) \
             VALUES ($1, $2, NOW() + $3::bigint * INTERVAL '1 microsecond', 1) \
             ON CONFLICT (name) DO UPDATE SET token = EXCLUDED.token, expire_at = EXCLUDED.expire_at, \
             fence = CASE WHEN {t}.token = EXCLUDED.token AND {t}.expire_at >= NOW() THEN {t}.fence \
             ELSE {t}.fence + 1 END \
             WHERE {t}.token = EXCLUDED.token OR {t}.token IS NULL OR {t}.expire_at IS NULL \
             OR {t}.expire_at < NOW() RETURNING fence"
        ))
        .await
        .expect("prepare acquire");
    let release = client
        .prepare(&format!(
            "WITH released AS (UPDATE {t} SET token = NULL, expire_at = NULL \
             WHERE name = $1 AND token = $2 AND expire_at >= NOW() RETURNING name) \
             SELECT count(*) FROM released, \
             LATERAL (SELECT pg_notify('tenure_released', '{t}:' || released.name)) AS announced"
        ))
        .await
        .expect("prepare release");
    let (name, token, micros) = ("lock:floor", "floor-token", 60_000_000_i64);
    per_call(|| async {
        client.query_opt(&acquire, &[&name, &token, &micros]).await.expect("acquire");
        client.query_one(&release, &[&name, &token]).await.expect("release");
    })
    .await
}

async fn drop_tables() {
    let t = stem();
    let sql = format!(
        "DROP TABLE IF EXISTS {t}_locks, {t}_leaders, {t}_schedules; \
         DROP FUNCTION IF EXISTS {t}_leaders_le_acquire_or_renew_v2"
    );
    raw().await.batch_execute(&sql).await.expect("drop the bench tables");
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("tokio");
    runtime.block_on(async {
        let (store, other) = (open().await, open().await);
        let floor = statements_floor().await;
        let one = bench::one_task(&store).await;
        let (contended, _) = bench::many_tasks(&store, 1).await;
        let (spread, _) = bench::many_tasks(&store, TASKS).await;
        let handoff = bench::handoff(&store, &other).await;
        let handover = bench::leader_handover(&store, &other).await;
        println!(
            "PostgreSQL, tenure on tokio, 2 worker threads (medians of {BATCHES} batches of {BATCH}, rates over {RUN:?}):"
        );
        println!("  floor (the same statements, tokio-postgres): {:>8.1} us", us(floor));
        println!("  one task, acquire + release:          {:>8.1} us", us(one));
        println!("  {TASKS} tasks on one name:                {contended:>8.0} cycles/s");
        println!("  {TASKS} tasks on {TASKS} names:                 {spread:>8.0} cycles/s");
        println!("  release to next waiter's grant:       {:>8.1} us", us(handoff));
        println!("  leader hand-over after a clean stop:  {:>8.1} us", us(handover));
        drop_tables().await;
    });
}
