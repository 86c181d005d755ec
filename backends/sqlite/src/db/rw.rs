//! Read-write locks in grelmicro 0.44's SQLite layout (`SQLiteReadWriteLockAdapter`): a row per
//! lock in `rwlocks(name, writer, writer_expire_at, generation)` and a row per reader lease
//! (`kind` `'r'`) or writer intent (`'i'`) in `rwlocks_holders(name, token, kind, expire_at)`,
//! times as the lock table's. Every call that decides runs in `BEGIN IMMEDIATE`, as grelmicro's
//! do, with the same statements, so both libraries' processes share a file's read-write locks.
//!
//! An expired writer stays in its row until the next write grant, which is then *poisoned* (the
//! writer never released); a release or a downgrade clears the row's writer.

use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};
use tenure_core::{BackendError, BackendErrorKind, FencingToken, HolderDetails, RwState, WriteGrant};
use tenure_store::record::generation;

use super::{Db, error, exists, expire_after};
use crate::time;

/// A reader's lease, and a waiting writer's intent (grelmicro's `kind` values).
const READ: &str = "r";
const INTENT: &str = "i";

/// The statements, with the configured table names (`?` numbering as written).
pub(super) struct Statements {
    create: String,
    /// The readers' and the writer's holder details.
    pub(super) held: super::details::Held,
    reap: String,
    ensure_row: String,
    select_lock: String,
    count_holders: String,
    holder_exists: String,
    upsert_holder: String,
    delete_holder: String,
    delete_intent: String,
    set_writer: String,
    renew_writer: String,
    clear_writer: String,
}

impl Statements {
    pub(super) fn new(t: &str) -> Self {
        let (e, we) = (expiry!("expire_at"), expiry!("writer_expire_at"));
        Self {
            create: format!(
                "CREATE TABLE IF NOT EXISTS {t} (name TEXT PRIMARY KEY, writer TEXT, writer_expire_at TEXT, \
                 generation INTEGER NOT NULL DEFAULT 0);\n\
                 CREATE TABLE IF NOT EXISTS {t}_holders (name TEXT NOT NULL, token TEXT NOT NULL, kind TEXT NOT NULL, \
                 expire_at TEXT NOT NULL, PRIMARY KEY (name, token, kind));"
            ),
            held: super::details::Held::new(
                t,
                &format!(
                    "SELECT token FROM {t}_holders WHERE name = ?1 AND kind = 'r' \
                     UNION SELECT writer FROM {t} WHERE name = ?1 AND writer IS NOT NULL"
                ),
            ),
            reap: format!("DELETE FROM {t}_holders WHERE name = ?1 AND {e} < ?2"),
            ensure_row: format!("INSERT INTO {t} (name) VALUES (?1) ON CONFLICT (name) DO NOTHING"),
            select_lock: format!(
                "SELECT writer, generation, (writer IS NOT NULL AND {we} >= ?2) FROM {t} WHERE name = ?1"
            ),
            count_holders: format!("SELECT count(*) FROM {t}_holders WHERE name = ?1 AND kind = ?2 AND {e} >= ?3"),
            holder_exists: format!(
                "SELECT 1 FROM {t}_holders WHERE name = ?1 AND token = ?2 AND kind = ?3 AND {e} >= ?4"
            ),
            upsert_holder: format!(
                "INSERT INTO {t}_holders (name, token, kind, expire_at) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (name, token, kind) DO UPDATE SET expire_at = excluded.expire_at"
            ),
            delete_holder: format!(
                "DELETE FROM {t}_holders WHERE name = ?1 AND token = ?2 AND kind = ?3 AND {e} >= ?4 RETURNING 1"
            ),
            delete_intent: format!("DELETE FROM {t}_holders WHERE name = ?1 AND token = ?2 AND kind = 'i'"),
            set_writer: format!(
                "UPDATE {t} SET writer = ?1, writer_expire_at = ?2, generation = generation + 1 WHERE name = ?3 \
                 RETURNING generation"
            ),
            renew_writer: format!("UPDATE {t} SET writer_expire_at = ?1 WHERE name = ?2"),
            clear_writer: format!(
                "UPDATE {t} SET writer = NULL, writer_expire_at = NULL WHERE name = ?1 AND writer = ?2 AND {we} >= ?3 \
                 RETURNING generation"
            ),
        }
    }

    /// The two tables and the details', created if missing.
    pub(super) fn create(&self) -> String {
        format!("{}\n{}", self.create, self.held.create)
    }
}

/// A lock's row as `select_lock` reads it: the writer column (live or not), the generation, and
/// whether that writer's lease is live.
struct Row {
    writer: Option<String>,
    generation: i64,
    writing: bool,
}

fn row(conn: &Connection, sql: &Statements, name: &str, now: &str) -> Result<Option<Row>, BackendError> {
    conn.prepare_cached(&sql.select_lock)
        .and_then(|mut s| {
            s.query_row(params![name, now], |r| {
                Ok(Row { writer: r.get(0)?, generation: r.get(1)?, writing: r.get(2)? })
            })
            .optional()
        })
        .map_err(|e| error("read-write lock read", e))
}

fn count(conn: &Connection, sql: &Statements, name: &str, kind: &str, now: &str) -> Result<usize, BackendError> {
    let n: i64 = conn
        .prepare_cached(&sql.count_holders)
        .and_then(|mut s| s.query_row(params![name, kind, now], |r| r.get(0)))
        .map_err(|e| error("read-write lock count", e))?;
    Ok(usize::try_from(n).unwrap_or(0))
}

fn run(conn: &Connection, statement: &str, params: impl rusqlite::Params, what: &str) -> Result<(), BackendError> {
    conn.prepare_cached(statement).and_then(|mut s| s.execute(params)).map(drop).map_err(|e| error(what, e))
}

/// The reap and the row every acquire starts with.
fn prepare(conn: &Connection, sql: &Statements, name: &str, now: &str) -> Result<Row, BackendError> {
    run(conn, &sql.reap, params![name, now], "read-write lock reap")?;
    run(conn, &sql.ensure_row, params![name], "read-write lock row")?;
    row(conn, sql, name, now)?.ok_or_else(|| {
        BackendError::new(BackendErrorKind::Other, format!("the row of {name} is gone inside its transaction"))
    })
}

impl Db {
    pub(crate) fn rw_acquire_read(
        &mut self,
        name: &str,
        token: &str,
        lease: Duration,
        details: Option<&HolderDetails>,
    ) -> Result<Option<FencingToken>, BackendError> {
        self.immediate("read acquire", |conn, sql, now| {
            let (sql, now, expire) = (&sql.rw, time::to_text(now), time::to_text(expire_after(now, lease)));
            let lock = prepare(conn, sql, name, &now)?;
            let reads = exists(conn, &sql.holder_exists, params![name, token, READ, now], "read acquire")?;
            if !reads && (lock.writing || count(conn, sql, name, INTENT, &now)? > 0) {
                return Ok(None);
            }
            run(conn, &sql.upsert_holder, params![name, token, READ, expire], "read acquire")?;
            super::details::keep_held(conn, &sql.held, (name, token), &now, details)?;
            generation(name, lock.generation).map(Some)
        })
    }

    pub(crate) fn rw_acquire_write(
        &mut self,
        name: &str,
        token: &str,
        (lease, intent): (Duration, bool),
        details: Option<&HolderDetails>,
    ) -> Result<Option<WriteGrant>, BackendError> {
        self.immediate("write acquire", |conn, sql, now| {
            let (sql, now, expire) = (&sql.rw, time::to_text(now), time::to_text(expire_after(now, lease)));
            let lock = prepare(conn, sql, name, &now)?;
            if lock.writing && lock.writer.as_deref() == Some(token) {
                run(conn, &sql.renew_writer, params![expire, name], "write acquire")?;
                super::details::keep_held(conn, &sql.held, (name, token), &now, details)?;
                return Ok(Some(WriteGrant { fence: generation(name, lock.generation)?, poisoned: false }));
            }
            if lock.writing || count(conn, sql, name, READ, &now)? > 0 {
                if intent {
                    run(conn, &sql.upsert_holder, params![name, token, INTENT, expire], "write acquire")?;
                }
                return Ok(None);
            }
            run(conn, &sql.delete_intent, params![name, token], "write acquire")?;
            let granted: i64 = conn
                .prepare_cached(&sql.set_writer)
                .and_then(|mut s| s.query_row(params![token, expire, name], |r| r.get(0)))
                .map_err(|e| error("write acquire", e))?;
            let fence = generation(name, granted)?;
            if fence.get() == 0 {
                return Err(BackendError::new(
                    BackendErrorKind::MalformedRecord,
                    format!("{name} granted generation 0"),
                ));
            }
            super::details::keep_held(conn, &sql.held, (name, token), &now, details)?;
            Ok(Some(WriteGrant { fence, poisoned: lock.writer.is_some() }))
        })
    }

    pub(crate) fn rw_release_read(&mut self, name: &str, token: &str) -> Result<bool, BackendError> {
        self.rw_delete_holder(name, token, READ, "read release")
    }

    pub(crate) fn rw_cancel_intent(&mut self, name: &str, token: &str) -> Result<bool, BackendError> {
        self.rw_delete_holder(name, token, INTENT, "intent withdrawal")
    }

    fn rw_delete_holder(&mut self, name: &str, token: &str, kind: &str, what: &str) -> Result<bool, BackendError> {
        self.immediate(what, |conn, sql, now| {
            exists(conn, &sql.rw.delete_holder, params![name, token, kind, time::to_text(now)], what)
        })
    }

    pub(crate) fn rw_release_write(&mut self, name: &str, token: &str) -> Result<bool, BackendError> {
        self.immediate("write release", |conn, sql, now| {
            exists(conn, &sql.rw.clear_writer, params![name, token, time::to_text(now)], "write release")
        })
    }

    pub(crate) fn rw_downgrade(
        &mut self,
        name: &str,
        token: &str,
        lease: Duration,
    ) -> Result<Option<FencingToken>, BackendError> {
        self.immediate("downgrade", |conn, sql, now| {
            let (sql, expire) = (&sql.rw, time::to_text(expire_after(now, lease)));
            let cleared: Option<i64> = conn
                .prepare_cached(&sql.clear_writer)
                .and_then(|mut s| s.query_row(params![name, token, time::to_text(now)], |r| r.get(0)).optional())
                .map_err(|e| error("downgrade", e))?;
            let Some(cleared) = cleared else { return Ok(None) };
            run(conn, &sql.upsert_holder, params![name, token, READ, expire], "downgrade")?;
            generation(name, cleared).map(Some)
        })
    }

    pub(crate) fn rw_state(&mut self, name: &str) -> Result<RwState, BackendError> {
        self.immediate("read-write lock state", |conn, sql, now| {
            let (sql, now) = (&sql.rw, time::to_text(now));
            run(conn, &sql.reap, params![name, now], "read-write lock state")?;
            let Some(lock) = row(conn, sql, name, &now)? else { return Ok(RwState::default()) };
            Ok(RwState {
                generation: generation(name, lock.generation)?.get(),
                writing: lock.writing,
                readers: count(conn, sql, name, READ, &now)?,
                waiting_writers: count(conn, sql, name, INTENT, &now)?,
            })
        })
    }

    pub(crate) fn rw_owned_read(&mut self, name: &str, token: &str) -> Result<bool, BackendError> {
        let now = time::to_text(self.now());
        exists(&self.conn, &self.sql.rw.holder_exists, params![name, token, READ, now], "read owned check")
    }

    pub(crate) fn rw_owned_write(&mut self, name: &str, token: &str) -> Result<bool, BackendError> {
        let now = time::to_text(self.now());
        let lock = row(&self.conn, &self.sql.rw, name, &now)?;
        Ok(lock.is_some_and(|l| l.writing && l.writer.as_deref() == Some(token)))
    }
}
