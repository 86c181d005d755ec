//! What the PostgreSQL store adds to the contract (the conformance suite checks the contract):
//! grelmicro 0.44's tables, function and rows, an older grelmicro lock table upgraded, pushed
//! wake-ups for locks and elections on every runtime, malformed rows, inspection, a closed
//! backend, unreachable servers and bad URLs.

mod common;

use std::time::{Duration, Instant};

use tenure::backend::{LockBackend, ScheduleBackend};
use tenure::{BackendErrorKind, Metadata};
use tenure_conformance::Store;
use tenure_postgres::{PostgresBackend, PostgresOptions};

use common::{open, open_at, psql, url};
use tenure::backend::{LeaderElectionCalls, LockCalls};

#[tokio::test]
async fn the_layout_is_grelmicro_044s() {
    let (store, t) = open().await;
    let fence = LockCalls::acquire(&store, "lock:cart", "w1:task:0.ab", Duration::from_micros(1_500_001)).await;
    assert_eq!(fence.ok().flatten().map(|f| f.get()), Some(1));
    let meta = Metadata::from_pairs([("pod", "p1")]).expect("metadata");
    store.acquire_or_renew("leader:svc", "w9", Duration::from_micros(15_500_000), &meta).await.expect("leader");
    assert!(store.claim("nightly", 1_767_229_200.25).await.expect("claim"));

    let db = url();
    let columns = psql(
        &db,
        &format!(
            "SELECT string_agg(column_name || ' ' || data_type || ' ' || is_nullable, ', ' ORDER BY ordinal_position) \
             FROM information_schema.columns WHERE table_name = '{t}_locks'"
        ),
    );
    assert_eq!(
        columns, "name text NO, token text YES, expire_at timestamp with time zone YES, fence bigint NO",
        "grelmicro 0.44's lock table"
    );
    let row = psql(
        &db,
        &format!(
            "SELECT token, fence, round(extract(epoch FROM expire_at - now()) * 1000) FROM {t}_locks \
             WHERE name = 'lock:cart'"
        ),
    );
    let parts: Vec<&str> = row.split('|').collect();
    assert_eq!(&parts[..2], ["w1:task:0.ab", "1"]);
    let left: f64 = parts[2].parse().expect("ms left");
    assert!((1000.0..=1501.0).contains(&left), "1.500001 s from the statement's NOW(): {left} ms left");
    let leader = psql(
        &db,
        &format!(
            "SELECT holder, lease_duration, transitions, metadata::text, acquired_at = renewed_at FROM {t}_leaders"
        ),
    );
    assert_eq!(leader, r#"w9|15.5|0|{"pod": "p1"}|t"#);
    let function = psql(
        &db,
        &format!(
            "SELECT pg_get_function_identity_arguments(oid) FROM pg_proc \
             WHERE proname = '{t}_leaders_le_acquire_or_renew_v2'"
        ),
    );
    assert_eq!(function, "p_name text, p_token text, p_duration_us bigint, p_metadata jsonb");
    assert_eq!(psql(&db, &format!("SELECT last_fired FROM {t}_schedules WHERE name = 'nightly'")), "1767229200.25");

    // Released: the row and its fence stay, the holder goes; the next holder gets fence 2.
    assert!(LockCalls::release(&store, "lock:cart", "w1:task:0.ab").await.expect("release"));
    assert_eq!(psql(&db, &format!("SELECT coalesce(token, 'NULL'), fence FROM {t}_locks")), "NULL|1");
    let fence = LockCalls::acquire(&store, "lock:cart", "w2", Duration::from_secs(5)).await;
    assert_eq!(fence.ok().flatten().map(|f| f.get()), Some(2));
}

#[tokio::test]
async fn rows_written_by_grelmicro_are_read_and_an_old_lock_table_is_upgraded() {
    let t = common::fresh_tables();
    let db = url();
    // The lock table of a grelmicro before 0.44: TIMESTAMP expiry, NOT NULL holder, no fence.
    psql(
        &db,
        &format!(
            "CREATE TABLE {t}_locks (name TEXT PRIMARY KEY, token TEXT NOT NULL, expire_at TIMESTAMP NOT NULL); \
             INSERT INTO {t}_locks VALUES ('lock:old', 'w1:task:0.39a0', LOCALTIMESTAMP + interval '30 s')"
        ),
    );
    let store = open_at(&db, &t).await;
    let columns = psql(
        &db,
        &format!(
            "SELECT string_agg(column_name || ' ' || data_type || ' ' || is_nullable, ', ' ORDER BY ordinal_position) \
             FROM information_schema.columns WHERE table_name = '{t}_locks'"
        ),
    );
    assert_eq!(columns, "name text NO, token text YES, expire_at timestamp with time zone YES, fence bigint NO");
    assert!(store.owned("lock:old", "w1:task:0.39a0").await.expect("owned"), "the old lease is still live");
    let rival = LockCalls::acquire(&store, "lock:old", "w2", Duration::from_secs(5)).await;
    assert_eq!(rival.expect("refused"), None, "the old holder keeps its lease");
    assert_eq!(psql(&db, &format!("SELECT fence FROM {t}_locks")), "0", "the upgrade's fence for old rows");

    // A leader row as grelmicro's function writes it, live.
    psql(
        &db,
        &format!("INSERT INTO {t}_leaders VALUES ('leader:svc', 'w9', 15, now(), now(), 3, '{{\"pod\": \"p1\"}}')"),
    );
    let record = store.get("leader:svc").await.expect("get").expect("live");
    assert_eq!((record.holder.as_str(), record.transitions), ("w9", 3));
    assert_eq!(record.lease_duration, Duration::from_secs(15));
    assert_eq!(record.metadata.get("pod"), Some("p1"));
    let other = store.acquire_or_renew("leader:svc", "w1", Duration::from_secs(1), &Metadata::new()).await;
    assert_eq!(other.expect("refused").holder, "w9", "a live grelmicro leader keeps the record");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_starting_together_all_open() {
    // Each creates the tables under the advisory lock grelmicro takes: none trips over another's
    // CREATE TABLE IF NOT EXISTS (which alone races on the row type it creates).
    let t = common::fresh_tables();
    let opening: Vec<_> = (0..6)
        .map(|_| {
            let options = common::options(&url(), &t);
            tokio::spawn(async move { options.open(tenure_tokio::Tokio::current()).await })
        })
        .collect();
    for replica in opening {
        let store = replica.await.expect("task").expect("every replica opens");
        assert!(!store.locked("lock:x").await.expect("usable"));
    }
}

#[tokio::test]
async fn an_expiry_column_whose_table_lock_is_not_granted_is_converted_at_the_next_start() {
    let t = common::fresh_tables();
    let db = url();
    psql(
        &db,
        &format!(
            "CREATE TABLE {t}_locks (name TEXT PRIMARY KEY, token TEXT, expire_at TIMESTAMP, \
                                     fence BIGINT NOT NULL DEFAULT 0)"
        ),
    );
    // Another session reads the table in an open transaction: the conversion cannot have it.
    let (reader, connection) = tokio_postgres::connect(&db, tokio_postgres::NoTls).await.expect("connect");
    tokio::spawn(connection);
    reader.batch_execute(&format!("BEGIN; SELECT count(*) FROM {t}_locks")).await.expect("read");
    let start = Instant::now();
    let store = open_at(&db, &t).await;
    assert!(start.elapsed() >= Duration::from_millis(1900), "waited {:?} for the table lock", start.elapsed());
    let column = format!(
        "SELECT data_type FROM information_schema.columns WHERE table_name = '{t}_locks' AND column_name = 'expire_at'"
    );
    assert_eq!(psql(&db, &column), "timestamp without time zone", "kept for this start");
    assert!(LockCalls::acquire(&store, "lock:x", "w", Duration::from_secs(5)).await.expect("works").is_some());
    reader.batch_execute("COMMIT").await.expect("commit");
    drop(store);
    let _again = open_at(&db, &t).await;
    assert_eq!(psql(&db, &column), "timestamp with time zone", "converted at the next start");
}

#[tokio::test]
async fn malformed_rows_are_reported_as_such() {
    let (store, t) = open().await;
    let db = url();
    psql(&db, &format!("INSERT INTO {t}_locks VALUES ('lock:zero', 'w', now() + interval '1 min', -4)"));
    psql(&db, &format!("INSERT INTO {t}_leaders VALUES ('leader:neg', 'w9', -15, now(), now(), 0, '{{}}')"));
    psql(
        &db,
        &format!(
            "INSERT INTO {t}_leaders VALUES ('leader:meta', 'w9', 15, now(), now(), 0, '{{\"n\": 1}}'), \
                                            ('leader:inf', 'w9', 15, 'infinity', now(), 0, '{{}}')"
        ),
    );
    let e = LockCalls::acquire(&store, "lock:zero", "w", Duration::from_secs(1)).await.expect_err("fence -4");
    assert_eq!(e.kind(), BackendErrorKind::MalformedRecord, "{e}");
    assert!(e.to_string().contains("lock:zero"), "{e}");
    for name in ["leader:meta", "leader:inf"] {
        let e = store.get(name).await.expect_err(name);
        assert_eq!(e.kind(), BackendErrorKind::MalformedRecord, "{name}: {e}");
        assert!(e.to_string().contains(name), "{e}");
    }
    let e = store.acquire_or_renew("leader:meta", "w", Duration::from_secs(1), &Metadata::new()).await;
    assert_eq!(e.expect_err("metadata").kind(), BackendErrorKind::MalformedRecord);
    // A negative lease is an expired record: taken over, not trusted.
    let taken = store.acquire_or_renew("leader:neg", "w1", Duration::from_secs(1), &Metadata::new()).await;
    assert_eq!(taken.expect("taken over").holder, "w1");
    let e = store.claim("x", f64::NAN).await.expect_err("NaN");
    assert_eq!(e.kind(), BackendErrorKind::Rejected, "{e}");
    // A table dropped under the backend: a clear error, nothing else breaks.
    psql(&db, &format!("DROP TABLE {t}_schedules"));
    let e = store.claim("nightly", 1.0).await.expect_err("no table");
    assert!(e.to_string().contains(&format!("{t}_schedules")), "{e}");
    assert!(store.locked("lock:zero").await.expect("the connection still works"));
}

#[tokio::test]
async fn inspection_lists_holders_and_leaders() {
    let (store, _) = open().await;
    tenure_conformance::inspect::inspection_lists_holders_and_leaders(&store).await;
}

#[tokio::test]
async fn holder_details_are_kept_beside_each_grant() {
    let (store, _) = open().await;
    tenure_conformance::inspect::holder_details_are_kept_beside_each_grant(&store).await;
    tenure_conformance::inspect::holder_details_follow_a_hand_off(&store, true).await;
}

#[tokio::test]
async fn inspection_lists_read_write_locks_and_semaphores() {
    let (store, _) = open().await;
    tenure_conformance::inspect::inspection_lists_read_write_locks_and_semaphores(&store).await;
    tenure_conformance::shared_details::read_write_holders_show_their_details(&store).await;
    tenure_conformance::shared_details::permit_holders_show_their_details(&store).await;
    tenure_conformance::shared_details::leaders_show_their_details(&store).await;
}

#[tokio::test]
async fn a_closed_backend_says_so() {
    let (store, _) = open().await;
    let clone = store.clone();
    store.close();
    let e = LockCalls::acquire(&clone, "lock:x", "w", Duration::from_secs(1)).await.expect_err("closed");
    assert_eq!(e.kind(), BackendErrorKind::Closed, "{e}");
}

#[tokio::test]
async fn unreachable_servers_and_bad_urls_fail_fast_naming_the_problem() {
    // A port nobody listens on: refused at once.
    let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("port").port();
    let start = Instant::now();
    let e = PostgresOptions::from_url(&format!("postgresql://u:secret@127.0.0.1:{port}/db"))
        .expect("valid URL")
        .connect_timeout(Duration::from_millis(500))
        .open(tenure_tokio::Tokio::current())
        .await
        .expect_err("nobody listens");
    assert!(start.elapsed() < Duration::from_secs(5), "took {:?}", start.elapsed());
    let text = e.to_string();
    assert!(text.contains(&format!("127.0.0.1:{port}")) && !text.contains("secret"), "{text}");
    // A server that accepts and never answers: the connect timeout.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("listener");
    let url = format!("postgresql://127.0.0.1:{}/db", silent.local_addr().expect("addr").port());
    let start = Instant::now();
    let e = PostgresOptions::from_url(&url)
        .expect("valid")
        .connect_timeout(Duration::from_millis(300))
        .open(tenure_tokio::Tokio::current())
        .await
        .expect_err("silent");
    assert!(start.elapsed() < Duration::from_secs(3), "took {:?}", start.elapsed());
    assert!(e.to_string().contains("within"), "{e}");
    // A database that does not exist, a user refused: rejected, named.
    let e = PostgresBackend::open("postgresql://postgres@127.0.0.1:5432/no_such_db", tenure_tokio::Tokio::current())
        .await
        .expect_err("no db");
    assert!(e.to_string().contains("no_such_db"), "{e}");
    for bad in ["http://h", "postgres://h?command_timeout=0", "postgres://h?sslmode=sometimes", "postgres://h?x=1"] {
        let e = PostgresBackend::open(bad, tenure_tokio::Tokio::current()).await.expect_err(bad);
        assert!(matches!(e, tenure_postgres::OpenError::Settings(_)), "{bad}: {e}");
    }
    let e = PostgresBackend::open(
        "postgres://127.0.0.1/db?sslmode=verify-full&sslrootcert=/no/such/ca.pem",
        tenure_tokio::Tokio::current(),
    )
    .await
    .expect_err("no CA file");
    assert!(e.to_string().contains("/no/such/ca.pem"), "{e}");
}

/// A compile-time check: the future of `open` can be spawned on a multi-threaded runtime.
#[test]
fn opening_is_a_send_future() {
    fn send<T: Send>(_: &T) {}
    let open = PostgresBackend::open("postgres://h/db", tenure_smol::Smol::global());
    send(&open);
}

/// Two stores on the shared server, on separate connections on `runtime`, as two processes
/// would have.
async fn pair(runtime: impl tenure::net::Net + Clone) -> (Store, Store) {
    let stem = common::fresh_tables();
    let first = common::open_on(&url(), &stem, runtime.clone()).await;
    (Store::of(first), Store::of(common::open_on(&url(), &stem, runtime).await))
}

tenure_conformance::push_tests!(pair);

#[tokio::test]
async fn a_statement_blocked_past_statement_timeout_is_cancelled_by_the_server() {
    let t = common::fresh_tables();
    let store = common::options(&url(), &t)
        .statement_timeout(Duration::from_millis(300))
        .open(tenure_tokio::Tokio::current())
        .await
        .expect("open");
    LockCalls::acquire(&store, "lock:row", "w1", Duration::from_secs(30)).await.expect("acquire");
    // Another session holds the row's lock in an open transaction: the release waits for it.
    let (blocker, connection) = tokio_postgres::connect(&url(), tokio_postgres::NoTls).await.expect("connect");
    tokio::spawn(connection);
    blocker
        .batch_execute(&format!("BEGIN; SELECT * FROM {t}_locks WHERE name = 'lock:row' FOR UPDATE"))
        .await
        .expect("lock");
    let start = Instant::now();
    let e = LockCalls::release(&store, "lock:row", "w1").await.expect_err("cancelled");
    assert_eq!(e.kind(), BackendErrorKind::Timeout, "{e}");
    assert!(e.to_string().contains("statement timeout"), "{e}");
    assert!(start.elapsed() < Duration::from_secs(3), "took {:?}", start.elapsed());
    blocker.batch_execute("ROLLBACK").await.expect("rollback");
    assert!(LockCalls::release(&store, "lock:row", "w1").await.expect("release once free"));
}

#[tokio::test]
async fn without_notify_waiters_poll() {
    let t = common::fresh_tables();
    let quiet = common::options(&url(), &t).notify(false).open(tenure_tokio::Tokio::current()).await.expect("open");
    assert!(LockBackend::wakeup(&quiet, "lock:x").is_none(), "no push behind a pooler");
    assert!(LockCalls::acquire(&quiet, "lock:x", "w", Duration::from_secs(1)).await.expect("acquire").is_some());
    assert!(LockCalls::release(&quiet, "lock:x", "w").await.expect("release"));
}
