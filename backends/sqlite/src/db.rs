//! The connection and its statements: grelmicro 0.44's SQLite layout and SQL, run on the
//! backend's own thread. Every write runs in `BEGIN IMMEDIATE`, which takes the file's write lock
//! (waiting up to the busy timeout for another process), and reads the clock only once it holds
//! it, so a decision is never judged by an instant from before the lock was won.

use std::collections::BTreeMap;
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode, OptionalExtension, TransactionBehavior, params};
use tenure_core::{BackendError, BackendErrorKind, FencingToken, HolderDetails, LeaderRecord, Metadata, WallTime};

use crate::options::{SqliteOptions, Synchronous};
use crate::time::{self, Clock};
use crate::{LeaderState, LockState};
use tenure::HolderInfo;

/// A stored expiry read to the millisecond: a whole-second value holds through that second's
/// last millisecond (grelmicro 0.44's `_expiry`).
macro_rules! expiry {
    ($column:literal) => {
        concat!("substr(", $column, " || '.999', 1, 23)")
    };
}

mod details;
mod revoke;
mod rw;
mod sem;
mod shared;

const RECORD: &str = "holder, lease_ms, acquired_at, renewed_at, transitions, metadata";

/// The statements, with the configured table names.
struct Statements {
    lock_acquire: String,
    lock_release: String,
    lock_locked: String,
    lock_owned: String,
    lock_vacate_expired: String,
    lock_state_one: String,
    lock_state_all: String,
    leader_acquire_or_renew: String,
    leader_live: String,
    leader_fence_take: String,
    leader_fence: String,
    leader_current: String,
    leader_get: String,
    leader_get_all: String,
    leader_release: String,
    schedule_claim: String,
    schedule_last_fired: String,
    details: details::Statements,
    revoke: revoke::Statements,
    rw: rw::Statements,
    sem: sem::Statements,
    shared: shared::Statements,
}

impl Statements {
    fn new(locks: &str, leaders: &str, schedules: &str, rwlocks: &str, semaphores: &str) -> Self {
        let t = locks;
        // (with the live lease's holder details, if its holder gave any: details.rs)
        let lock_row = format!(
            "SELECT l.name, CASE WHEN token IS NOT NULL AND {e} >= ?1 THEN token END, \
             CASE WHEN token IS NOT NULL AND {e} >= ?1 THEN {e} END, l.fence, \
             CASE WHEN token IS NOT NULL AND {e} >= ?1 THEN d.acquired_at END, \
             CASE WHEN token IS NOT NULL AND {e} >= ?1 THEN d.details END \
             FROM {t} l LEFT JOIN {t}_details d ON d.name = l.name AND d.fence = l.fence",
            e = expiry!("l.expire_at")
        );
        Self {
            lock_acquire: format!(
                "INSERT INTO {t} (name, token, expire_at, fence) VALUES (?1, ?2, ?3, 1) \
                 ON CONFLICT (name) DO UPDATE SET token = excluded.token, expire_at = excluded.expire_at, \
                 fence = CASE WHEN {t}.token = excluded.token AND {e} >= ?4 THEN {t}.fence ELSE {t}.fence + 1 END \
                 WHERE {t}.token = excluded.token OR {t}.token IS NULL OR {t}.expire_at IS NULL OR {e} < ?4 \
                 RETURNING fence",
                e = format!("substr({t}.expire_at || '.999', 1, 23)")
            ),
            lock_release: format!(
                "UPDATE {t} SET token = NULL, expire_at = NULL WHERE name = ?1 AND token = ?2 AND {} >= ?3 RETURNING 1",
                expiry!("expire_at")
            ),
            lock_locked: format!(
                "SELECT 1 FROM {t} WHERE name = ?1 AND token IS NOT NULL AND {} >= ?2",
                expiry!("expire_at")
            ),
            lock_owned: format!("SELECT 1 FROM {t} WHERE name = ?1 AND token = ?2 AND {} >= ?3", expiry!("expire_at")),
            lock_vacate_expired: format!(
                "UPDATE {t} SET token = NULL, expire_at = NULL WHERE {} < ?1",
                expiry!("expire_at")
            ),
            lock_state_one: format!("{lock_row} WHERE l.name = ?2"),
            lock_state_all: format!("{lock_row} ORDER BY l.name"),
            leader_acquire_or_renew: format!(
                "INSERT INTO {l} (name, holder, lease_ms, acquired_at, renewed_at, expire_at, transitions, metadata) \
                 VALUES (?1, ?2, ?3, ?4, ?4, ?5, 0, ?6) \
                 ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, lease_ms = excluded.lease_ms, \
                 acquired_at = CASE WHEN {l}.expire_at > ?4 THEN {l}.acquired_at ELSE excluded.acquired_at END, \
                 renewed_at = excluded.renewed_at, expire_at = excluded.expire_at, \
                 transitions = CASE WHEN {l}.holder = excluded.holder THEN {l}.transitions ELSE {l}.transitions + 1 END, \
                 metadata = excluded.metadata \
                 WHERE {l}.holder = excluded.holder OR {l}.expire_at <= ?4 \
                 RETURNING {RECORD}",
                l = leaders
            ),
            // A term's fence, in Tenure's table beside grelmicro's: the next on a take, kept by a
            // release (a grelmicro process neither reads nor writes it).
            leader_live: format!("SELECT expire_at > ?2 FROM {leaders} WHERE name = ?1"),
            leader_fence_take: format!(
                "INSERT INTO {leaders}_fences (name, fence) VALUES (?1, 1) \
                 ON CONFLICT (name) DO UPDATE SET fence = fence + 1 RETURNING fence"
            ),
            leader_fence: format!("SELECT fence FROM {leaders}_fences WHERE name = ?1"),
            leader_current: format!(
                "SELECT {RECORD}, fence FROM {leaders} LEFT JOIN {leaders}_fences USING (name) WHERE name = ?1"
            ),
            leader_get: format!(
                "SELECT {RECORD}, fence FROM {leaders} LEFT JOIN {leaders}_fences USING (name) \
                 WHERE name = ?1 AND expire_at > ?2"
            ),
            // (with the term's leader details, kept in the locks' details table by fence and matched
            // on the term's start too: a grelmicro process takes the lead without a new fence)
            leader_get_all: format!(
                "SELECT s.*, d.acquired_at, d.details FROM (SELECT name, {RECORD}, fence FROM {leaders} \
                 LEFT JOIN {leaders}_fences USING (name) WHERE expire_at > ?1) s \
                 LEFT JOIN {t}_details d ON d.name = s.name AND d.fence = s.fence AND d.acquired_at = s.acquired_at \
                 ORDER BY s.name"
            ),
            leader_release: format!(
                "DELETE FROM {leaders} WHERE name = ?1 AND holder = ?2 AND expire_at > ?3 RETURNING 1"
            ),
            schedule_claim: format!(
                "INSERT INTO {schedules} (name, last_fired) VALUES (?1, ?2) ON CONFLICT (name) DO UPDATE \
                 SET last_fired = excluded.last_fired WHERE last_fired < excluded.last_fired"
            ),
            schedule_last_fired: format!("SELECT last_fired FROM {schedules} WHERE name = ?1"),
            details: details::Statements::new(t),
            revoke: revoke::Statements::new(t),
            rw: rw::Statements::new(rwlocks),
            sem: sem::Statements::new(semaphores),
            shared: shared::Statements::new(rwlocks, semaphores),
        }
    }
}

/// One open SQLite connection and the statements of the three tables.
pub(crate) struct Db {
    conn: Connection,
    sql: Statements,
    clock: Clock,
}

impl Db {
    /// Opens the file, sets the busy timeout, switches to WAL (retrying while another process
    /// holds the file, up to the busy timeout), sets `synchronous`, and creates missing tables.
    pub(crate) fn open(options: &SqliteOptions) -> Result<Self, BackendError> {
        let path = options.path();
        let conn = Connection::open(path).map_err(|e| error(&format!("cannot open {}", path.display()), e))?;
        conn.busy_timeout(options.busy_timeout_value()).map_err(|e| error("cannot set the busy timeout", e))?;
        if !is_memory(path) {
            enable_wal(&conn, options.busy_timeout_value())?;
        }
        let synchronous = match options.synchronous_value() {
            Synchronous::Full => "PRAGMA synchronous = FULL",
            Synchronous::Normal => "PRAGMA synchronous = NORMAL",
        };
        conn.execute_batch(synchronous).map_err(|e| error("cannot set synchronous", e))?;
        let (locks, leaders, schedules) = options.tables();
        let create = format!(
            "CREATE TABLE IF NOT EXISTS {locks} (name TEXT PRIMARY KEY, token TEXT, expire_at TEXT, \
             fence INTEGER NOT NULL DEFAULT 0);\n\
             CREATE TABLE IF NOT EXISTS {leaders} (name TEXT PRIMARY KEY, holder TEXT NOT NULL, \
             lease_ms INTEGER NOT NULL, acquired_at TEXT NOT NULL, renewed_at TEXT NOT NULL, \
             expire_at TEXT NOT NULL, transitions INTEGER NOT NULL DEFAULT 0, metadata TEXT NOT NULL DEFAULT '{{}}');\n\
             CREATE TABLE IF NOT EXISTS {leaders}_fences (name TEXT PRIMARY KEY, fence INTEGER NOT NULL);\n\
             CREATE TABLE IF NOT EXISTS {schedules} (name TEXT PRIMARY KEY, last_fired REAL NOT NULL);"
        );
        let sql =
            Statements::new(locks, leaders, schedules, options.rwlock_table_name(), options.semaphore_table_name());
        conn.execute_batch(&create).map_err(|e| error("cannot create the tables", e))?;
        conn.execute_batch(&sql.details.create).map_err(|e| error("cannot create the holder details table", e))?;
        conn.execute_batch(&sql.rw.create()).map_err(|e| error("cannot create the read-write lock tables", e))?;
        conn.execute_batch(&sql.sem.create()).map_err(|e| error("cannot create the semaphore tables", e))?;
        let clock = options.clock_value();
        Ok(Self { conn, sql, clock })
    }

    fn now(&self) -> WallTime {
        time::truncate_millis((self.clock)())
    }

    /// Runs `body` in `BEGIN IMMEDIATE` with the store's instant read after the write lock is
    /// held; commits on success, rolls back on failure.
    fn immediate<T>(
        &mut self,
        what: &str,
        body: impl FnOnce(&Connection, &Statements, WallTime) -> Result<T, BackendError>,
    ) -> Result<T, BackendError> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| error(what, e))?;
        let now = time::truncate_millis((self.clock)());
        let value = body(&tx, &self.sql, now)?; // dropping `tx` rolls back
        tx.commit().map_err(|e| error(what, e))?;
        Ok(value)
    }

    pub(crate) fn lock_acquire(
        &mut self,
        name: &str,
        token: &str,
        lease: Duration,
    ) -> Result<Option<FencingToken>, BackendError> {
        tenure::backend::granted(self.lock_acquire_answer(name, token, lease, None)?)
    }

    pub(crate) fn lock_release(&mut self, name: &str, token: &str) -> Result<bool, BackendError> {
        self.immediate("lock release", |conn, sql, now| {
            exists(conn, &sql.lock_release, params![name, token, time::to_text(now)], "lock release")
        })
    }

    pub(crate) fn lock_locked(&mut self, name: &str) -> Result<bool, BackendError> {
        let now = time::to_text(self.now());
        exists(&self.conn, &self.sql.lock_locked, params![name, now], "locked check")
    }

    pub(crate) fn lock_owned(&mut self, name: &str, token: &str) -> Result<bool, BackendError> {
        let now = time::to_text(self.now());
        exists(&self.conn, &self.sql.lock_owned, params![name, token, now], "owned check")
    }

    /// Frees every expired lease, keeping fencing counters (done on close, as grelmicro does).
    pub(crate) fn lock_vacate_expired(&mut self) -> Result<usize, BackendError> {
        self.immediate("vacating expired locks", |conn, sql, now| {
            conn.prepare_cached(&sql.lock_vacate_expired)
                .and_then(|mut s| s.execute(params![time::to_text(now)]))
                .map_err(|e| error("vacating expired locks", e))
        })
    }

    pub(crate) fn lock_states(&mut self, names: &[String]) -> Result<Vec<LockState>, BackendError> {
        let now = time::to_text(self.now());
        type Row = (String, Option<String>, Option<String>, i64, Option<String>, Option<String>);
        let read = |r: &rusqlite::Row<'_>| -> rusqlite::Result<Row> {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
        };
        let rows: Vec<_> = if names.is_empty() {
            let mut s = self.conn.prepare_cached(&self.sql.lock_state_all).map_err(|e| error("lock status", e))?;
            s.query_map(params![now], read).and_then(Iterator::collect).map_err(|e| error("lock status", e))?
        } else {
            let mut s = self.conn.prepare_cached(&self.sql.lock_state_one).map_err(|e| error("lock status", e))?;
            let mut rows = Vec::new();
            for name in names {
                if let Some(row) =
                    s.query_row(params![now, name], read).optional().map_err(|e| error("lock status", e))?
                {
                    rows.push(row);
                }
            }
            rows
        };
        rows.into_iter()
            .map(|(key, holder, expires, fence, acquired, details)| {
                let expires_at = expires.map(|t| time::from_text(&t, "expire_at")).transpose()?;
                let fence = if fence == 0 { None } else { Some(fence_of(&key, fence)?) };
                let acquired_at = acquired.map(|t| time::from_text(&t, "acquired_at")).transpose()?;
                let details = acquired_at.zip(details).and_then(|(at, text)| HolderInfo::parse(&text, at));
                // (SQLite keeps no line: its waiters poll)
                Ok(LockState { key, fence, holder, expires_at, details, waiting: None })
            })
            .collect()
    }

    pub(crate) fn leader_acquire_or_renew(
        &mut self,
        name: &str,
        token: &str,
        (lease, metadata): (Duration, &Metadata),
        details: Option<&HolderDetails>,
    ) -> Result<LeaderRecord, BackendError> {
        let metadata = serde_json::to_string(metadata.as_map())
            .map_err(|e| BackendError::new(BackendErrorKind::Other, format!("cannot encode leader metadata: {e}")))?;
        self.immediate("leader acquire_or_renew", |conn, sql, now| {
            let lease_ms = i64::try_from(tenure_core::time::ceil_millis(lease)).unwrap_or(i64::MAX);
            let expire = time::to_text(expire_after(now, lease));
            let now_text = time::to_text(now);
            let failed = |e| error("leader acquire_or_renew", e);
            // Whether a live lease stands: if it does, winning is a renewal, else a take.
            let live: Option<bool> = conn
                .prepare_cached(&sql.leader_live)
                .and_then(|mut s| s.query_row(params![name, now_text], |r| r.get(0)).optional())
                .map_err(failed)?;
            let won = conn
                .prepare_cached(&sql.leader_acquire_or_renew)
                .and_then(|mut s| {
                    s.query_row(params![name, token, lease_ms, now_text, expire, metadata], raw_record).optional()
                })
                .map_err(failed)?;
            let (row, fence) = match won {
                Some(row) => {
                    // A take begins a term: the next fence, and the leader's details beside it.
                    let statement = if live == Some(true) { &sql.leader_fence } else { &sql.leader_fence_take };
                    let fence: Option<i64> = conn
                        .prepare_cached(statement)
                        .and_then(|mut s| s.query_row(params![name], |r| r.get(0)).optional())
                        .map_err(failed)?;
                    if let Some(fence) = fence {
                        details::keep(conn, &sql.details, (name, fence), &now_text, details)?;
                    }
                    (row, fence)
                }
                // A live record of another holder: answer with it, untouched.
                None => conn
                    .prepare_cached(&sql.leader_current)
                    .and_then(|mut s| s.query_row(params![name], fenced_record))
                    .map_err(failed)?,
            };
            record(row, fence)
        })
    }

    pub(crate) fn leader_release(&mut self, name: &str, token: &str) -> Result<bool, BackendError> {
        self.immediate("leader release", |conn, sql, now| {
            exists(conn, &sql.leader_release, params![name, token, time::to_text(now)], "leader release")
        })
    }

    pub(crate) fn leader_get(&mut self, name: &str) -> Result<Option<LeaderRecord>, BackendError> {
        let now = time::to_text(self.now());
        let row = self
            .conn
            .prepare_cached(&self.sql.leader_get)
            .and_then(|mut s| s.query_row(params![name, now], fenced_record).optional())
            .map_err(|e| error("leader get", e))?;
        row.map(|(row, fence)| record(row, fence)).transpose()
    }

    pub(crate) fn leader_states(&mut self, names: &[String]) -> Result<Vec<LeaderState>, BackendError> {
        let now = time::to_text(self.now());
        let mut s = self.conn.prepare_cached(&self.sql.leader_get_all).map_err(|e| error("leader status", e))?;
        type Told = (Option<String>, Option<String>);
        let rows: Vec<(String, (RawRecord, Option<i64>), Told)> = s
            .query_map(params![now], |r| {
                let row = (r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?);
                Ok((r.get(0)?, (row, r.get(7)?), (r.get(8)?, r.get(9)?)))
            })
            .and_then(Iterator::collect)
            .map_err(|e| error("leader status", e))?;
        rows.into_iter()
            .filter(|(key, ..)| names.is_empty() || names.contains(key))
            .map(|(key, (row, fence), (acquired, told))| {
                let acquired_at = acquired.map(|t| time::from_text(&t, "acquired_at")).transpose()?;
                let details = acquired_at.zip(told).and_then(|(at, text)| HolderInfo::parse(&text, at));
                Ok(LeaderState { key, record: record(row, fence)?, details })
            })
            .collect()
    }

    pub(crate) fn schedule_claim(&mut self, name: &str, due: f64) -> Result<bool, BackendError> {
        if !due.is_finite() {
            return Err(BackendError::new(
                BackendErrorKind::Rejected,
                format!("schedule due {due} is not a finite time"),
            ));
        }
        self.immediate("schedule claim", |conn, sql, _| {
            conn.prepare_cached(&sql.schedule_claim)
                .and_then(|mut s| s.execute(params![name, due]))
                .map(|changed| changed == 1)
                .map_err(|e| error("schedule claim", e))
        })
    }

    pub(crate) fn schedule_last_fired(&mut self, name: &str) -> Result<Option<f64>, BackendError> {
        self.conn
            .prepare_cached(&self.sql.schedule_last_fired)
            .and_then(|mut s| s.query_row(params![name], |r| r.get(0)).optional())
            .map_err(|e| error("schedule last_fired", e))
    }
}

/// The instant a lease of `lease` from `now` ends: rounded up to the millisecond, never zero.
pub(super) fn expire_after(now: WallTime, lease: Duration) -> WallTime {
    now.saturating_add(Duration::from_millis(tenure_core::time::ceil_millis(lease)))
}

fn exists(conn: &Connection, sql: &str, params: impl rusqlite::Params, what: &str) -> Result<bool, BackendError> {
    conn.prepare_cached(sql)
        .and_then(|mut s| s.query_row(params, |_| Ok(())).optional())
        .map(|row| row.is_some())
        .map_err(|e| error(what, e))
}

fn fence_of(name: &str, fence: i64) -> Result<FencingToken, BackendError> {
    u64::try_from(fence).ok().filter(|f| *f >= 1).map(FencingToken::new).ok_or_else(|| {
        BackendError::new(
            BackendErrorKind::MalformedRecord,
            format!("the fence of {name} is {fence}, not a positive count"),
        )
    })
}

type RawRecord = (String, i64, String, String, i64, String);

fn raw_record(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawRecord> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
}

/// A record's columns and its term's fence after them.
fn fenced_record(r: &rusqlite::Row<'_>) -> rusqlite::Result<(RawRecord, Option<i64>)> {
    Ok((raw_record(r)?, r.get(6)?))
}

/// A leader record from its columns and its term's fence, each checked.
fn record(
    (holder, lease_ms, acquired_at, renewed_at, transitions, metadata): RawRecord,
    fence: Option<i64>,
) -> Result<LeaderRecord, BackendError> {
    let malformed = |what: String| BackendError::new(BackendErrorKind::MalformedRecord, what);
    let fence = fence.map(|f| fence_of("the leader record", f)).transpose()?;
    let lease_ms = u64::try_from(lease_ms).map_err(|_| malformed(format!("lease_ms is {lease_ms}, below zero")))?;
    let transitions =
        u64::try_from(transitions).map_err(|_| malformed(format!("transitions is {transitions}, below zero")))?;
    let map: BTreeMap<String, String> = serde_json::from_str(&metadata)
        .map_err(|e| malformed(format!("metadata is not a JSON object of strings: {e}")))?;
    let metadata = Metadata::try_from(map).map_err(|e| malformed(format!("metadata: {e}")))?;
    Ok(LeaderRecord {
        holder,
        lease_duration: Duration::from_millis(lease_ms),
        acquired_at: time::from_text(&acquired_at, "acquired_at")?,
        renewed_at: time::from_text(&renewed_at, "renewed_at")?,
        transitions,
        metadata,
        fence,
    })
}

fn is_memory(path: &Path) -> bool {
    path.as_os_str() == ":memory:"
}

/// Switches the file to WAL unless it already is, retrying while another process holds it.
fn enable_wal(conn: &Connection, patience: Duration) -> Result<(), BackendError> {
    let mode = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, String>(0));
    let current = mode("PRAGMA journal_mode").map_err(|e| error("cannot read the journal mode", e))?;
    if current.eq_ignore_ascii_case("wal") {
        return Ok(());
    }
    let deadline = Instant::now() + patience;
    loop {
        match mode("PRAGMA journal_mode = WAL") {
            Ok(_) => return Ok(()),
            Err(e) if is_busy(&e) && Instant::now() < deadline => thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(error("cannot switch the journal to WAL", e)),
        }
    }
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked))
}

/// A SQLite failure as the core sees it.
pub(crate) fn error(what: &str, e: rusqlite::Error) -> BackendError {
    use BackendErrorKind as K;
    let kind = match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => K::Unavailable,
        Some(ErrorCode::CannotOpen | ErrorCode::SystemIoFailure) => K::Unavailable,
        Some(
            ErrorCode::ReadOnly | ErrorCode::PermissionDenied | ErrorCode::DiskFull | ErrorCode::ConstraintViolation,
        ) => K::Rejected,
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => K::MalformedRecord,
        Some(_) => K::Other,
        None => match e {
            rusqlite::Error::InvalidColumnType(..)
            | rusqlite::Error::FromSqlConversionFailure(..)
            | rusqlite::Error::IntegralValueOutOfRange(..) => K::MalformedRecord,
            _ => K::Other,
        },
    };
    let hint = if kind == K::Unavailable && is_busy(&e) {
        " (another process held the database past the busy timeout)"
    } else {
        ""
    };
    BackendError::new(kind, format!("SQLite {what}: {e}{hint}")).with_source(e)
}
