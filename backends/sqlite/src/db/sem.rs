//! Fenced semaphores (Tenure's own layout; grelmicro has none): a row per name in
//! `semaphores(name, permits, fence, arrivals)` — the stored permit count, the last fencing token
//! issued and the last arrival number given — and a row per holder (`kind` `'h'`, `seq` its
//! fencing token) or waiter keeping a place (`'w'`, `seq` its arrival number) in
//! `semaphores_holders(name, token, kind, seq, expire_at)`, times as the lock table's. Every call
//! that decides runs in `BEGIN IMMEDIATE`.

use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};
use tenure_core::{BackendError, BackendErrorKind, HolderDetails, PermitAnswer, SemState};
use tenure_store::record::{fence as fence_of, generation};

use super::{Db, error, exists, expire_after};
use crate::time;

const HOLDER: &str = "h";
const WAITER: &str = "w";

/// The statements, with the configured table names (`?` numbering as written).
pub(super) struct Statements {
    create: String,
    /// The holders' details.
    pub(super) held: super::details::Held,
    reap: String,
    count: String,
    select_row: String,
    set_permits: String,
    select_entry: String,
    ahead: String,
    renew: String,
    next_fence: String,
    next_arrival: String,
    insert: String,
    delete_waiter: String,
    delete_holder: String,
    holder_exists: String,
}

impl Statements {
    pub(super) fn new(t: &str) -> Self {
        let e = expiry!("expire_at");
        Self {
            create: format!(
                "CREATE TABLE IF NOT EXISTS {t} (name TEXT PRIMARY KEY, permits INTEGER NOT NULL, \
                 fence INTEGER NOT NULL DEFAULT 0, arrivals INTEGER NOT NULL DEFAULT 0);\n\
                 CREATE TABLE IF NOT EXISTS {t}_holders (name TEXT NOT NULL, token TEXT NOT NULL, kind TEXT NOT NULL, \
                 seq INTEGER NOT NULL, expire_at TEXT NOT NULL, PRIMARY KEY (name, token, kind));"
            ),
            held: super::details::Held::new(
                t,
                &format!("SELECT token FROM {t}_holders WHERE name = ?1 AND kind = 'h'"),
            ),
            reap: format!("DELETE FROM {t}_holders WHERE name = ?1 AND {e} < ?2"),
            count: format!("SELECT count(*) FROM {t}_holders WHERE name = ?1 AND kind = ?2"),
            select_row: format!("SELECT permits, fence FROM {t} WHERE name = ?1"),
            set_permits: format!(
                "INSERT INTO {t} (name, permits) VALUES (?1, ?2) ON CONFLICT (name) DO UPDATE SET permits = excluded.permits"
            ),
            select_entry: format!("SELECT seq FROM {t}_holders WHERE name = ?1 AND token = ?2 AND kind = ?3"),
            ahead: format!("SELECT count(*) FROM {t}_holders WHERE name = ?1 AND kind = 'w' AND seq < ?2"),
            renew: format!("UPDATE {t}_holders SET expire_at = ?4 WHERE name = ?1 AND token = ?2 AND kind = ?3"),
            next_fence: format!("UPDATE {t} SET fence = fence + 1 WHERE name = ?1 RETURNING fence"),
            next_arrival: format!("UPDATE {t} SET arrivals = arrivals + 1 WHERE name = ?1 RETURNING arrivals"),
            insert: format!("INSERT INTO {t}_holders (name, token, kind, seq, expire_at) VALUES (?1, ?2, ?3, ?4, ?5)"),
            delete_waiter: format!("DELETE FROM {t}_holders WHERE name = ?1 AND token = ?2 AND kind = 'w'"),
            delete_holder: format!(
                "DELETE FROM {t}_holders WHERE name = ?1 AND token = ?2 AND kind = 'h' AND {e} >= ?3 RETURNING 1"
            ),
            holder_exists: format!(
                "SELECT 1 FROM {t}_holders WHERE name = ?1 AND token = ?2 AND kind = 'h' AND {e} >= ?3"
            ),
        }
    }

    /// The two tables and the details', created if missing.
    pub(super) fn create(&self) -> String {
        format!("{}\n{}", self.create, self.held.create)
    }
}

fn int(conn: &Connection, sql: &str, params: impl rusqlite::Params, what: &str) -> Result<Option<i64>, BackendError> {
    conn.prepare_cached(sql).and_then(|mut s| s.query_row(params, |r| r.get(0)).optional()).map_err(|e| error(what, e))
}

fn run(conn: &Connection, sql: &str, params: impl rusqlite::Params, what: &str) -> Result<(), BackendError> {
    changed(conn, sql, params, what).map(drop)
}

/// How many rows `sql` changed.
fn changed(conn: &Connection, sql: &str, params: impl rusqlite::Params, what: &str) -> Result<usize, BackendError> {
    conn.prepare_cached(sql).and_then(|mut s| s.execute(params)).map_err(|e| error(what, e))
}

fn count(conn: &Connection, sql: &Statements, name: &str, kind: &str) -> Result<usize, BackendError> {
    let n = int(conn, &sql.count, params![name, kind], "semaphore count")?.unwrap_or(0);
    Ok(usize::try_from(n).unwrap_or(0))
}

/// The row of a name its holders or waiters refer to is gone.
fn missing_row(name: &str) -> BackendError {
    BackendError::new(BackendErrorKind::MalformedRecord, format!("{name} has holders or waiters but no row"))
}

/// A row's stored count, checked.
fn permits_of(name: &str, stored: i64) -> Result<u32, BackendError> {
    u32::try_from(stored)
        .ok()
        .filter(|&p| p > 0)
        .ok_or_else(|| BackendError::new(BackendErrorKind::MalformedRecord, format!("{name} stores {stored} permits")))
}

impl Db {
    pub(crate) fn sem_acquire(
        &mut self,
        name: &str,
        token: &str,
        (lease, permits, wait): (Duration, u32, Option<Duration>),
        details: Option<&HolderDetails>,
    ) -> Result<PermitAnswer, BackendError> {
        self.immediate("semaphore acquire", |conn, sql, now| {
            let (sql, expire) = (&sql.sem, time::to_text(expire_after(now, lease)));
            run(conn, &sql.reap, params![name, time::to_text(now)], "semaphore reap")?;
            let (holders, waiters) = (count(conn, sql, name, HOLDER)?, count(conn, sql, name, WAITER)?);
            if holders == 0 && waiters == 0 {
                run(conn, &sql.set_permits, params![name, permits], "semaphore count")?;
            }
            let stored = int(conn, &sql.select_row, params![name], "semaphore read")?;
            let stored = permits_of(name, stored.ok_or_else(|| missing_row(name))?)?;
            if stored != permits {
                return Ok(PermitAnswer { fence: None, permits: stored });
            }
            if let Some(fence) = int(conn, &sql.select_entry, params![name, token, HOLDER], "semaphore acquire")? {
                run(conn, &sql.renew, params![name, token, HOLDER, expire], "semaphore renewal")?;
                super::details::keep_held(conn, &sql.held, (name, token), &time::to_text(now), details)?;
                return Ok(PermitAnswer { fence: Some(fence_of(name, fence)?), permits });
            }
            let place = int(conn, &sql.select_entry, params![name, token, WAITER], "semaphore acquire")?;
            let ahead = match place {
                Some(seq) => usize::try_from(int(conn, &sql.ahead, params![name, seq], "semaphore line")?.unwrap_or(0))
                    .unwrap_or(usize::MAX),
                None => waiters,
            };
            if holders.saturating_add(ahead) < usize::try_from(permits).unwrap_or(usize::MAX) {
                run(conn, &sql.delete_waiter, params![name, token], "semaphore acquire")?;
                let fence =
                    int(conn, &sql.next_fence, params![name], "semaphore grant")?.ok_or_else(|| missing_row(name))?;
                run(conn, &sql.insert, params![name, token, HOLDER, fence, expire], "semaphore grant")?;
                super::details::keep_held(conn, &sql.held, (name, token), &time::to_text(now), details)?;
                return Ok(PermitAnswer { fence: Some(fence_of(name, fence)?), permits });
            }
            if let Some(wait) = wait {
                let until = time::to_text(expire_after(now, wait));
                if place.is_some() {
                    run(conn, &sql.renew, params![name, token, WAITER, until], "semaphore place")?;
                } else {
                    let arrival = int(conn, &sql.next_arrival, params![name], "semaphore place")?
                        .ok_or_else(|| missing_row(name))?;
                    run(conn, &sql.insert, params![name, token, WAITER, arrival, until], "semaphore place")?;
                }
            }
            Ok(PermitAnswer { fence: None, permits })
        })
    }

    /// Whether `token` held a live permit, and whether waiters should look again: a permit went,
    /// or a place in line went while others wait (those behind it may now be let in).
    pub(crate) fn sem_release(&mut self, name: &str, token: &str) -> Result<(bool, bool), BackendError> {
        self.immediate("semaphore release", |conn, sql, now| {
            let (sql, now) = (&sql.sem, time::to_text(now));
            let left = changed(conn, &sql.delete_waiter, params![name, token], "semaphore release")? > 0;
            let released = exists(conn, &sql.delete_holder, params![name, token, now], "semaphore release")?;
            run(conn, &sql.reap, params![name, now], "semaphore reap")?;
            let wake = released || (left && count(conn, sql, name, "w")? > 0);
            Ok((released, wake))
        })
    }

    pub(crate) fn sem_owned(&mut self, name: &str, token: &str) -> Result<bool, BackendError> {
        let now = time::to_text(self.now());
        exists(&self.conn, &self.sql.sem.holder_exists, params![name, token, now], "semaphore owned check")
    }

    pub(crate) fn sem_state(&mut self, name: &str) -> Result<SemState, BackendError> {
        self.immediate("semaphore state", |conn, sql, now| {
            let sql = &sql.sem;
            run(conn, &sql.reap, params![name, time::to_text(now)], "semaphore reap")?;
            let row = conn
                .prepare_cached(&sql.select_row)
                .and_then(|mut s| {
                    s.query_row(params![name], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))).optional()
                })
                .map_err(|e| error("semaphore state", e))?;
            let Some((stored, fence)) = row else { return Ok(SemState::default()) };
            let (holders, waiting) = (count(conn, sql, name, HOLDER)?, count(conn, sql, name, WAITER)?);
            let permits = if holders == 0 && waiting == 0 { 0 } else { permits_of(name, stored)? };
            Ok(SemState { permits, holders, waiting, fence: generation(name, fence)?.get() })
        })
    }
}
