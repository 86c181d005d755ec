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
