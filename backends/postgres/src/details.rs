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
