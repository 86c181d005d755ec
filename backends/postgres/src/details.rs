//! Holder details (the core's `store::details`): beside grelmicro's lock table, an `UNLOGGED`
//! table of Tenure's own, `<locks>_details (name, fence, acquired_at, details)` — soft state for
//! people, so a grant writes no WAL for it (a crash forgets who held, never a lease). It is
//! written in the grant's statement or function when the fence is new (a renewal sends none); a
//! queued waiter's details wait in its place (`<locks>_queue.details`) and are written by the
//! hand-off. A listing joins it on the live fence, so a lease a grelmicro process took shows none.

/// The table (created with the queue's, in its transaction).
pub(crate) fn schema(locks: &str) -> String {
    format!(
        "CREATE UNLOGGED TABLE IF NOT EXISTS {locks}_details (name TEXT PRIMARY KEY, fence BIGINT NOT NULL, \
             acquired_at TIMESTAMPTZ NOT NULL, details TEXT NOT NULL);"
    )
}

/// A PL/pgSQL statement keeping the details `details` (an expression; NULL keeps nothing) for
/// the grant of `fence` on `p_name`.
pub(crate) fn keep(locks: &str, fence: &str, details: &str) -> String {
    format!(
        "IF {details} IS NOT NULL THEN \
             INSERT INTO {locks}_details (name, fence, acquired_at, details) VALUES (p_name, {fence}, NOW(), {details}) \
             ON CONFLICT (name) DO UPDATE SET fence = EXCLUDED.fence, acquired_at = EXCLUDED.acquired_at, \
                 details = EXCLUDED.details; \
         END IF;"
    )
}

/// The acquire statement's part keeping `$4` (or nothing, when NULL) for a grant of a new fence:
/// a CTE after `taken` and `created`.
pub(crate) fn kept(locks: &str) -> String {
    format!(
        "kept AS ( \
             INSERT INTO {locks}_details (name, fence, acquired_at, details) \
             SELECT $1, g.fence, NOW(), $4::text FROM (SELECT fence FROM taken UNION ALL SELECT fence FROM created) g \
             WHERE $4::text IS NOT NULL \
             ON CONFLICT (name) DO UPDATE SET fence = EXCLUDED.fence, acquired_at = EXCLUDED.acquired_at, \
                 details = EXCLUDED.details \
             WHERE {locks}_details.fence <> EXCLUDED.fence)"
    )
}

/// The details of a shared name's holders (a read-write lock's readers and writer, a semaphore's
/// permits), beside `t`'s tables: `UNLOGGED`, one row per holder (created with the tables).
pub(crate) fn held_schema(t: &str) -> String {
    format!(
        "CREATE UNLOGGED TABLE IF NOT EXISTS {t}_details (name TEXT NOT NULL, token TEXT NOT NULL, \
             acquired_at TIMESTAMPTZ NOT NULL, details TEXT NOT NULL, PRIMARY KEY (name, token));"
    )
}

/// Two CTEs (`kept`, `pruned`) of a grant's statement on name `$1`: `granted` (a query of `token,
/// details`, one row per token) kept in `t`'s details, and, when it keeps any, the rows of tokens
/// not among `holding` (a query of tokens: the name's holders as this statement sees them, and
/// those it writes) dropped. Rows this statement cannot see are neither dropped nor shown.
pub(crate) fn kept_held(t: &str, granted: &str, holding: &str) -> String {
    format!(
        "kept AS (INSERT INTO {t}_details (name, token, acquired_at, details) \
             SELECT $1, g.token, NOW(), g.details FROM ({granted}) g \
             ON CONFLICT (name, token) DO UPDATE SET acquired_at = EXCLUDED.acquired_at, details = EXCLUDED.details \
             RETURNING 1), \
         pruned AS (DELETE FROM {t}_details WHERE name = $1 AND EXISTS (SELECT 1 FROM ({granted}) g) \
             AND token NOT IN (SELECT h FROM ({holding}) held(h) WHERE h IS NOT NULL))"
    )
}
