//! What the SQLite store adds to the contract (the conformance suite checks the contract):
//! grelmicro 0.44's layout, many connections on one file, durability across reopen, cleanup on
//! close, busy files, malformed rows, and a closed backend.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use tenure::backend::{LeaderElectionCalls, LockCalls, ReadWriteCalls};
use tenure::{BackendErrorKind, Inspect, Metadata};
use tenure_sqlite::{SqliteBackend, SqliteOptions};

fn fresh_path() -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!("tenure-sqlite-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    dir.join(format!("t{}.db", NEXT.fetch_add(1, Ordering::SeqCst)))
}

async fn open(path: &PathBuf) -> SqliteBackend {
    match SqliteBackend::open(path).await {
        Ok(store) => store,
        Err(e) => panic!("open {}: {e}", path.display()),
    }
}

fn raw(path: &PathBuf) -> Connection {
    Connection::open(path).expect("a second connection")
}

const LONG: Duration = Duration::from_secs(30);

#[tokio::test]
async fn the_layout_is_grelmicro_044s() {
    let path = fresh_path();
    let store = open(&path).await;
    let fence = LockCalls::acquire(&store, "lock:cart", "w1:task:0.ab", Duration::from_millis(30_001_500)).await;
    assert_eq!(fence.ok().flatten().map(|f| f.get()), Some(1));
    let meta = Metadata::from_pairs([("pod", "p1")]).expect("metadata");
    store.acquire_or_renew("leader:svc", "w9", Duration::from_micros(15_000_500), &meta).await.expect("leader");
    let db = raw(&path);
    let journal: String = db.query_row("PRAGMA journal_mode", [], |r| r.get(0)).expect("journal");
    assert_eq!(journal, "wal");
    let (token, expire, fence): (String, String, i64) = db
        .query_row("SELECT token, expire_at, fence FROM locks WHERE name = 'lock:cart'", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .expect("lock row");
    assert_eq!((token.as_str(), fence), ("w1:task:0.ab", 1));
    assert_eq!(expire.len(), 23, "millisecond text: {expire}");
    let (holder, lease_ms, acquired, expire, transitions, metadata): (String, i64, String, String, i64, String) = db
        .query_row(
            "SELECT holder, lease_ms, acquired_at, expire_at, transitions, metadata FROM grelmicro_leader_election",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
        )
        .expect("leader row");
    assert_eq!((holder.as_str(), lease_ms, transitions), ("w9", 15_001, 0), "lease rounded up to the ms");
    assert_eq!((acquired.len(), expire.len()), (23, 23));
    assert_eq!(metadata, r#"{"pod":"p1"}"#);
    let tables: Vec<String> = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .and_then(|mut s| s.query_map([], |r| r.get(0)).and_then(Iterator::collect))
        .expect("tables");
    // grelmicro 0.44's tables, and Tenure's own for semaphores, leaders' terms and holder details
    // (grelmicro has none of them).
    let expected = [
        "grelmicro_leader_election",
        "grelmicro_leader_election_fences",
        "locks",
        "locks_details",
        "rwlocks",
        "rwlocks_details",
        "rwlocks_holders",
        "schedules",
        "semaphores",
        "semaphores_details",
        "semaphores_holders",
    ];
    assert_eq!(tables, expected);
}

#[tokio::test]
async fn read_write_locks_keep_grelmicro_044s_rows() {
    let path = fresh_path();
    let store = open(&path).await;
    let lease = Duration::from_micros(10_000_500);
    let grant = ReadWriteCalls::acquire_write(&store, "rwlock:doc", "wt", lease, true).await.expect("write");
    assert_eq!(grant.map(|g| (g.fence.get(), g.poisoned)), Some((1, false)));
    ReadWriteCalls::downgrade(&store, "rwlock:doc", "wt", lease).await.expect("downgrade");
    ReadWriteCalls::acquire_write(&store, "rwlock:doc", "w2", lease, true).await.expect("a refused writer's intent");
    let db = raw(&path);
    let (writer, generation): (Option<String>, i64) = db
        .query_row("SELECT writer, generation FROM rwlocks WHERE name = 'rwlock:doc'", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .expect("lock row");
    assert_eq!((writer, generation), (None, 1), "a downgrade clears the writer and keeps the generation");
    let holders: Vec<(String, String, i64)> = db
        .prepare("SELECT token, kind, length(expire_at) FROM rwlocks_holders WHERE name = 'rwlock:doc' ORDER BY kind")
        .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).and_then(Iterator::collect))
        .expect("holder rows");
    assert_eq!(holders, [("w2".to_owned(), "i".to_owned(), 23), ("wt".to_owned(), "r".to_owned(), 23)]);
}

#[tokio::test]
async fn a_legacy_whole_second_expiry_holds_through_that_second() {
    let path = fresh_path();
    let store = open(&path).await;
    // A row written in whole seconds, far in the future: held; in the past: free.
    raw(&path)
        .execute_batch(
            "INSERT INTO locks VALUES ('lock:old', 'legacy', '2999-01-01 00:00:00', 4);
             INSERT INTO locks VALUES ('lock:gone', 'legacy', '2000-01-01 00:00:00', 9);",
        )
        .expect("legacy rows");
    assert_eq!(store.locked("lock:old").await.ok(), Some(true));
    assert_eq!(LockCalls::acquire(&store, "lock:old", "t", LONG).await.ok(), Some(None));
    let taken = LockCalls::acquire(&store, "lock:gone", "t", LONG).await.ok().flatten();
    assert_eq!(taken.map(|f| f.get()), Some(10), "the legacy fence continues");
}

#[tokio::test]
async fn connections_on_one_file_exclude_each_other_and_see_commits_at_once() {
    let path = fresh_path();
    let (a, b) = (open(&path).await, open(&path).await);
    let first = LockCalls::acquire(&a, "lock:x", "ta", LONG).await.ok().flatten();
    assert_eq!(first.map(|f| f.get()), Some(1));
    assert_eq!(LockCalls::acquire(&b, "lock:x", "tb", LONG).await.ok(), Some(None));
    assert_eq!(b.owned("lock:x", "ta").await.ok(), Some(true));
    assert_eq!(LockCalls::release(&a, "lock:x", "ta").await.ok(), Some(true));
    let second = LockCalls::acquire(&b, "lock:x", "tb", LONG).await.ok().flatten();
    assert_eq!(second.map(|f| f.get()), Some(2));
}

#[tokio::test]
async fn fences_survive_reopening_and_close_vacates_expired_leases() {
    let path = fresh_path();
    let store = open(&path).await;
    LockCalls::acquire(&store, "lock:x", "t1", Duration::from_millis(20)).await.expect("acquire");
    LockCalls::acquire(&store, "lock:live", "t1", LONG).await.expect("acquire");
    tokio::time::sleep(Duration::from_millis(60)).await;
    store.close().await.expect("close");
    let after_close = LockCalls::locked(&store, "lock:x").await.expect_err("a closed store answered");
    assert_eq!(after_close.kind(), BackendErrorKind::Closed);
    let rows: Vec<(String, Option<String>, i64)> = raw(&path)
        .prepare("SELECT name, token, fence FROM locks ORDER BY name")
        .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).and_then(Iterator::collect))
        .expect("rows");
    assert_eq!(rows, [("lock:live".into(), Some("t1".into()), 1), ("lock:x".into(), None, 1)]);
    let reopened = open(&path).await;
    let fence = LockCalls::acquire(&reopened, "lock:x", "t2", LONG).await.ok().flatten();
    assert_eq!(fence.map(|f| f.get()), Some(2), "the counter survived the restart");
}

#[tokio::test]
async fn sub_second_leases_expire_to_the_millisecond() {
    let store = open(&fresh_path()).await;
    let lease = Duration::from_millis(300);
    let start = Instant::now();
    LockCalls::acquire(&store, "lock:quick", "t1", lease).await.expect("acquire");
    assert_eq!(LockCalls::acquire(&store, "lock:quick", "t2", lease).await.ok(), Some(None));
    tokio::time::sleep(Duration::from_millis(400).saturating_sub(start.elapsed())).await;
    let next = LockCalls::acquire(&store, "lock:quick", "t2", lease).await.ok().flatten();
    assert_eq!(next.map(|f| f.get()), Some(2), "a 300 ms lease was still held after 400 ms");
}

#[tokio::test]
async fn a_busy_file_fails_within_the_busy_timeout_and_recovers() {
    let path = fresh_path();
    let options = SqliteOptions::new(&path).busy_timeout(Duration::from_millis(200));
    let store = options.open().await.expect("open");
    let blocker = raw(&path);
    blocker.execute_batch("BEGIN IMMEDIATE").expect("hold the write lock");
    let start = Instant::now();
    let err = LockCalls::acquire(&store, "lock:x", "t1", LONG).await.expect_err("acquired through a held file");
    let waited = start.elapsed();
    assert_eq!(err.kind(), BackendErrorKind::Unavailable, "{err}");
    assert!(err.message().contains("busy timeout"), "{err}");
    assert!(waited >= Duration::from_millis(150) && waited < Duration::from_secs(3), "waited {waited:?}");
    blocker.execute_batch("ROLLBACK").expect("let go");
    let fence = LockCalls::acquire(&store, "lock:x", "t1", LONG).await.ok().flatten();
    assert_eq!(fence.map(|f| f.get()), Some(1), "the connection was left in a transaction");
}

#[tokio::test]
async fn malformed_rows_are_reported_naming_the_column() {
    let path = fresh_path();
    let store = open(&path).await;
    raw(&path)
        .execute_batch(
            "INSERT INTO grelmicro_leader_election VALUES ('leader:bad', 'w1', 1000, 'yesterday', '2999-01-01 00:00:00.000', '2999-01-01 00:00:01.000', 0, '{}');
             INSERT INTO grelmicro_leader_election VALUES ('leader:meta', 'w1', 1000, '2999-01-01 00:00:00.000', '2999-01-01 00:00:00.000', '2999-01-01 00:00:01.000', 0, '[1,2]');
             INSERT INTO locks VALUES ('lock:neg', 't', '2999-01-01 00:00:00.000', -5);",
        )
        .expect("bad rows");
    let err = store.get("leader:bad").await.expect_err("a bad time was accepted");
    assert_eq!(err.kind(), BackendErrorKind::MalformedRecord);
    assert!(err.message().contains("acquired_at"), "{err}");
    let err = store.get("leader:meta").await.expect_err("bad metadata was accepted");
    assert!(err.message().contains("metadata"), "{err}");
    let err = store.lock_states(vec!["lock:neg".into()]).await.expect_err("a negative fence was accepted");
    assert!(err.message().contains("fence"), "{err}");
    // The store still works for everything else.
    assert!(LockCalls::acquire(&store, "lock:fine", "t", LONG).await.is_ok());
}

#[tokio::test]
async fn a_dropped_table_is_an_error_and_leaves_no_transaction_open() {
    let path = fresh_path();
    let store = open(&path).await;
    raw(&path).execute_batch("DROP TABLE locks").expect("drop");
    let err = LockCalls::acquire(&store, "lock:x", "t", LONG).await.expect_err("acquired without a table");
    assert!(err.message().contains("no such table"), "{err}");
    raw(&path)
        .execute_batch(
            "CREATE TABLE locks (name TEXT PRIMARY KEY, token TEXT, expire_at TEXT, fence INTEGER NOT NULL DEFAULT 0)",
        )
        .expect("recreate");
    assert!(LockCalls::acquire(&store, "lock:x", "t", LONG).await.is_ok(), "the connection stayed in a transaction");
}

#[tokio::test]
async fn inspection_lists_holders_and_leaders() {
    let path = fresh_path();
    let store = open(&path).await;
    LockCalls::acquire(&store, "lock:a", "w1:task:0.aa", LONG).await.expect("a");
    LockCalls::acquire(&store, "lock:b", "w2:task:0.bb", LONG).await.expect("b");
    LockCalls::release(&store, "lock:b", "w2:task:0.bb").await.expect("release b");
    store.acquire_or_renew("leader:svc", "w9", LONG, &Metadata::default()).await.expect("leader");
    let locks = store.lock_states(Vec::new()).await.expect("locks");
    let summary: Vec<_> =
        locks.iter().map(|l| (l.key.as_str(), l.holder.as_deref(), l.fence.map(|f| f.get()))).collect();
    assert_eq!(summary, [("lock:a", Some("w1:task:0.aa"), Some(1)), ("lock:b", None, Some(1))]);
    assert!(locks[0].expires_at.is_some() && locks[1].expires_at.is_none());
    let one = store.lock_states(vec!["lock:b".into(), "lock:none".into()]).await.expect("one");
    assert_eq!(one.len(), 1);
    let leaders = store.leader_states(Vec::new()).await.expect("leaders");
    assert_eq!(
        leaders.iter().map(|l| (l.key.as_str(), l.record.holder.as_str())).collect::<Vec<_>>(),
        [("leader:svc", "w9")]
    );
}

#[tokio::test]
async fn bad_options_and_unopenable_files_name_the_problem() {
    let err = SqliteOptions::in_memory().lock_table("locks;").open().await.expect_err("bad table name");
    assert!(err.to_string().contains("not a valid SQL identifier"), "{err}");
    let err = SqliteBackend::open("/proc/no/such/dir/x.db").await.expect_err("opened the impossible");
    assert!(err.to_string().contains("/proc/no/such/dir/x.db"), "{err}");
}

#[tokio::test]
async fn a_release_wakes_a_waiter_of_the_same_process_at_once() {
    use tenure_tokio::{Lock, Tokio};
    let store = open(&fresh_path()).await;
    // A retry interval far beyond the test's patience: only the push wake-up can hand over.
    let lock = |store: &SqliteBackend| {
        Lock::builder("handoff", Tokio::current())
            .backend(store.clone())
            .retry_interval(Duration::from_secs(60))
            .env_load(false)
            .build()
            .expect("a lock")
    };
    let (first, second) = (lock(&store), lock(&store));
    let held = first.acquire().await.expect("first");
    let waiter =
        tokio::spawn(
            async move { second.acquire_timeout(Duration::from_secs(5)).await.map(|g| g.fencing_token().get()) },
        );
    tokio::time::sleep(Duration::from_millis(100)).await; // the waiter made its failing attempt
    held.release().await.expect("release");
    let start = Instant::now();
    let fence = waiter.await.expect("the waiter task").expect("the waiter was not woken");
    assert_eq!(fence, 2);
    assert!(start.elapsed() < Duration::from_secs(2), "handed over after {:?}", start.elapsed());
}
