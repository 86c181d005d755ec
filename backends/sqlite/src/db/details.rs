//! Holder details (the core's `store::details`): beside grelmicro's lock table, a table of
//! Tenure's own, `<locks>_details (name, fence, acquired_at, details)`, one row per name, written
//! in the grant's transaction when the fence is new (a renewal finds its fence's row and writes
//! nothing). A listing joins it on the live fence, so a lease a grelmicro process took shows none.

use rusqlite::{Connection, params};
use tenure_core::{BackendError, HolderDetails};

use super::error;

/// The statements, with the configured table name.
pub(super) struct Statements {
    pub(super) create: String,
    write: String,
}

impl Statements {
    pub(super) fn new(locks: &str) -> Self {
        let d = format!("{locks}_details");
        Self {
            create: format!(
                "CREATE TABLE IF NOT EXISTS {d} (name TEXT PRIMARY KEY, fence INTEGER NOT NULL, \
                 acquired_at TEXT NOT NULL, details TEXT NOT NULL);"
            ),
            write: format!(
                "INSERT INTO {d} (name, fence, acquired_at, details) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (name) DO UPDATE SET fence = excluded.fence, acquired_at = excluded.acquired_at, \
                 details = excluded.details WHERE {d}.fence <> excluded.fence"
            ),
        }
    }
}

/// Keeps `details` for the grant of `fence` on `name` at `now` (text), unless that fence's are
/// kept already.
pub(super) fn keep(
    conn: &Connection,
    sql: &Statements,
    (name, fence): (&str, i64),
    now: &str,
    details: Option<&HolderDetails>,
) -> Result<(), BackendError> {
    let Some(details) = details else { return Ok(()) };
    conn.prepare_cached(&sql.write)
        .and_then(|mut s| s.execute(params![name, fence, now, details.as_str()]))
        .map(drop)
        .map_err(|e| error("keeping holder details", e))
}

/// The details of a shared name's holders (a read-write lock's readers and writer, a semaphore's
/// permits), beside their tables: `<table>_details (name, token, acquired_at, details)`, one row
/// per holder, written in the grant's transaction when the grant carries them (a renewal sends
/// none). A grant that keeps details first drops the rows of tokens that no longer hold the name
/// (released or expired), so the table holds at most a name's holders; a listing reads a row only
/// beside its token's live lease.
pub(super) struct Held {
    pub(super) create: String,
    prune: String,
    write: String,
    pub(super) read: String,
}

impl Held {
    /// `holding`: a query for the tokens that hold name `?1` (live or not yet reaped).
    pub(super) fn new(table: &str, holding: &str) -> Self {
        let d = format!("{table}_details");
        Self {
            create: format!(
                "CREATE TABLE IF NOT EXISTS {d} (name TEXT NOT NULL, token TEXT NOT NULL, acquired_at TEXT NOT NULL, \
                 details TEXT NOT NULL, PRIMARY KEY (name, token));"
            ),
            prune: format!("DELETE FROM {d} WHERE name = ?1 AND token NOT IN ({holding})"),
            write: format!(
                "INSERT INTO {d} (name, token, acquired_at, details) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (name, token) DO UPDATE SET acquired_at = excluded.acquired_at, details = excluded.details"
            ),
            read: format!("SELECT name, token, acquired_at, details FROM {d}"),
        }
    }
}

/// Keeps `details` for `token`'s grant on `name` at `now` (text), after dropping the rows of
/// tokens that no longer hold it; nothing when `details` is `None` (a renewal).
pub(super) fn keep_held(
    conn: &Connection,
    sql: &Held,
    (name, token): (&str, &str),
    now: &str,
    details: Option<&HolderDetails>,
) -> Result<(), BackendError> {
    let Some(details) = details else { return Ok(()) };
    let failed = |e| error("keeping holder details", e);
    conn.prepare_cached(&sql.prune).and_then(|mut s| s.execute(params![name])).map_err(failed)?;
    conn.prepare_cached(&sql.write)
        .and_then(|mut s| s.execute(params![name, token, now, details.as_str()]))
        .map(drop)
        .map_err(failed)
}
