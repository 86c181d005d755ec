//! The statements, deciding as grelmicro 0.44's do (so both judge a lease alike), and the schema
//! they run on, created under a transaction-scoped advisory lock per table.

use crate::options::PostgresOptions;

/// The channel releases are announced on; the payload is `<table>:<name>`.
pub(crate) const CHANNEL: &str = "tenure_released";
/// What a session runs to hear releases on [`CHANNEL`].
pub(crate) const LISTEN: &str = "LISTEN tenure_released";

/// grelmicro's advisory-lock namespace for leader elections (`hashtextextended`'s seed).
const LEADER_NAMESPACE: u64 = 0x6772_6C65_2D65_6C65;

/// The texts of the statements prepared on every connection.
#[derive(Debug)]
pub(crate) struct Texts {
    pub(crate) lock_acquire: String,
    pub(crate) lock_acquire_queued: String,
    pub(crate) lock_release: String,
    pub(crate) lock_locked: String,
    pub(crate) lock_owned: String,
    pub(crate) lock_states: String,
    pub(crate) leader_acquire: String,
    pub(crate) leader_release: String,
    pub(crate) leader_get: String,
    pub(crate) leader_states: String,
    pub(crate) shared_states: String,
    pub(crate) schedule_claim: String,
    pub(crate) schedule_last_fired: String,
    /// What the listening session runs: releases on [`CHANNEL`], and this backend's grants.
    pub(crate) listen: String,
    /// The channel this backend's grants are notified on.
    pub(crate) grant_channel: String,
}

/// `released` (an UPDATE or DELETE of rows of `table`, without RETURNING) counting the rows it
/// let go; each announces itself on [`CHANNEL`] (in the same statement, so at its commit) iff
/// `notify`.
pub(crate) fn announced(notify: bool, released: &str, table: &str) -> String {
    if notify {
        format!(
            "WITH released AS ({released} RETURNING name) SELECT count(*) FROM released, \
             LATERAL (SELECT pg_notify('{CHANNEL}', '{table}:' || released.name)) AS announced"
        )
    } else {
        format!("WITH released AS ({released} RETURNING name) SELECT count(*) FROM released")
    }
}

/// The columns a leader record is read from: holder, lease (µs), acquired and renewed
/// (TIMESTAMPTZ), transitions, metadata (JSON text), then its term's fence (from `fences`, where
/// it is named `fence`).
const LEADER_COLUMNS: &str = "holder, round(lease_duration * 1000000)::bigint, acquired_at, renewed_at, \
                              transitions, metadata::text, fence";

impl Texts {
    /// The statements of a backend whose grants are notified on `route`'s channel.
    pub(crate) fn new(options: &PostgresOptions, route: &str) -> Self {
        let (locks, leaders, schedules) = (&options.lock_table, &options.leader_table, &options.schedule_table);
        let fences = leader_fences(leaders);
        let announced = |released: String, table: &str| announced(options.notify, &released, table);
        let leader_live = "NOW() < renewed_at + make_interval(secs => lease_duration)";
        Self {
            // grelmicro's decision (take a free or expired name, renew one's own lease; the fence
            // climbs on every change of holder), written so that a refusal writes nothing: an
            // upsert locks the row it refuses, which costs a WAL flush at commit. Answers
            // `(fence, NULL)`, or `(NULL, placeholder)` when a revocation's placeholder refuses
            // it (crate::revoke), or no row.
            lock_acquire: format!(
                "WITH taken AS ( \
                     UPDATE {locks} SET token = $2, expire_at = NOW() + $3::bigint * INTERVAL '1 microsecond', \
                         fence = CASE WHEN token = $2 AND expire_at >= NOW() THEN fence ELSE fence + 1 END \
                     WHERE name = $1 AND (token = $2 OR token IS NULL OR expire_at IS NULL OR expire_at < NOW()) \
                     RETURNING fence), \
                 created AS ( \
                     INSERT INTO {locks} (name, token, expire_at, fence) \
                     SELECT $1, $2, NOW() + $3::bigint * INTERVAL '1 microsecond', 1 \
                     WHERE NOT EXISTS (SELECT 1 FROM {locks} WHERE name = $1) \
                     ON CONFLICT (name) DO NOTHING RETURNING fence), \
                 {kept} \
                 SELECT fence, NULL FROM taken UNION ALL SELECT fence, NULL FROM created \
                 UNION ALL SELECT NULL, token {placeholder}",
                // (a one-time filter: a grant or a renewal reads no more than before)
                placeholder = crate::revoke::placeholder(locks, "NOT EXISTS (SELECT 1 FROM taken)"),
                // ($4: the holder's details, kept beside a grant of a new fence: crate::details)
                kept = crate::details::kept(locks),
            ),
            // (a refusal by a revocation's placeholder answers the placeholder, as above)
            lock_acquire_queued: format!(
                "SELECT f, CASE WHEN f IS NULL THEN (SELECT token {}) END FROM ({}) AS q (f)",
                crate::revoke::placeholder(locks, "true"),
                crate::queue::acquire(locks)
            ),
            // A release hands the lock to the queue's head (and notifies it) when waiters can
            // hear it; without LISTEN (a pooler in transaction mode) it is grelmicro's.
            lock_release: if options.notify {
                crate::queue::release(locks)
            } else {
                announced(
                    format!(
                        "UPDATE {locks} SET token = NULL, expire_at = NULL \
                         WHERE name = $1 AND token = $2 AND expire_at >= NOW()"
                    ),
                    locks,
                )
            },
            lock_locked: format!("SELECT 1 FROM {locks} WHERE name = $1 AND token IS NOT NULL AND expire_at >= NOW()"),
            lock_owned: format!("SELECT 1 FROM {locks} WHERE name = $1 AND token = $2 AND expire_at >= NOW()"),
            // (with the live lease's holder details, if its holder gave any: crate::details; and the
            // live places of its line, first in line first: crate::queue)
            lock_states: format!(
                "SELECT l.name, l.fence, CASE WHEN expire_at >= NOW() THEN token END, \
                        CASE WHEN expire_at >= NOW() THEN expire_at END, \
                        CASE WHEN expire_at >= NOW() THEN d.acquired_at END, \
                        CASE WHEN expire_at >= NOW() THEN d.details END, \
                        w.tokens, w.since, w.details \
                 FROM {locks} l LEFT JOIN {locks}_details d ON d.name = l.name AND d.fence = l.fence \
                 LEFT JOIN LATERAL (SELECT array_agg(q.token ORDER BY q.seq) AS tokens, \
                         array_agg(q.since ORDER BY q.seq) AS since, array_agg(q.details ORDER BY q.seq) AS details \
                     FROM {locks}_queue q WHERE q.name = l.name AND q.expire_at >= NOW()) w ON true \
                 WHERE cardinality($1::text[]) = 0 OR l.name = ANY($1) ORDER BY l.name"
            ),
            // grelmicro's function decides; a take it made (acquired = renewed, to this token)
            // begins a term with the next fence, in Tenure's table beside grelmicro's (under the
            // function's advisory lock, held to the commit).
            // The leader's details ($5, NULL for none) are kept beside a term it begins, in the
            // locks' details table (by the term's fence), as a lock's are; a listing matches the
            // term's start too (the same NOW() as the function's), for a grelmicro process takes
            // the lead without a new fence.
            leader_acquire: format!(
                "WITH r AS MATERIALIZED (SELECT * FROM {leaders}_le_acquire_or_renew_v2($1, $2, $3::bigint, $4::text::jsonb)), \
                 taken AS ( \
                     INSERT INTO {fences} (name, fence) SELECT $1, 1 FROM r \
                     WHERE r.r_holder = $2 AND r.r_acquired_at = r.r_renewed_at \
                     ON CONFLICT (name) DO UPDATE SET fence = {fences}.fence + 1 RETURNING fence), \
                 kept AS ( \
                     INSERT INTO {locks}_details (name, fence, acquired_at, details) \
                     SELECT $1, fence, NOW(), $5::text FROM taken WHERE $5::text IS NOT NULL \
                     ON CONFLICT (name) DO UPDATE SET fence = EXCLUDED.fence, acquired_at = EXCLUDED.acquired_at, \
                         details = EXCLUDED.details) \
                 SELECT r_holder, round(EXTRACT(EPOCH FROM r_lease_duration) * 1000000)::bigint, r_acquired_at, \
                        r_renewed_at, r_transitions, r_metadata::text, \
                        COALESCE((SELECT fence FROM taken), (SELECT fence FROM {fences} WHERE name = $1)) \
                 FROM r"
            ),
            leader_release: announced(
                format!("DELETE FROM {leaders} WHERE name = $1 AND holder = $2 AND {leader_live}"),
                leaders,
            ),
            leader_get: format!(
                "SELECT {LEADER_COLUMNS} FROM {leaders} LEFT JOIN {fences} USING (name) WHERE name = $1 AND {leader_live}"
            ),
            leader_states: format!(
                "SELECT s.*, d.acquired_at, d.details FROM (SELECT name, {LEADER_COLUMNS} FROM {leaders} \
                     LEFT JOIN {fences} USING (name) \
                     WHERE (cardinality($1::text[]) = 0 OR name = ANY($1)) AND {leader_live}) s \
                 LEFT JOIN {locks}_details d ON d.name = s.name AND d.fence = s.fence \
                     AND d.acquired_at = s.acquired_at ORDER BY s.name"
            ),
            shared_states: shared_states(&options.rwlock_table, &options.semaphore_table),
            schedule_claim: format!(
                "INSERT INTO {schedules} (name, last_fired) VALUES ($1, $2) \
                 ON CONFLICT (name) DO UPDATE SET last_fired = EXCLUDED.last_fired \
                 WHERE {schedules}.last_fired < EXCLUDED.last_fired RETURNING 1"
            ),
            schedule_last_fired: format!("SELECT last_fired FROM {schedules} WHERE name = $1"),
            listen: format!("{LISTEN}; LISTEN \"{}\"", crate::queue::grant_channel(route)),
            grant_channel: crate::queue::grant_channel(route),
        }
    }
}

/// The lock table, as grelmicro 0.44 creates and upgrades it, in one transaction holding the
/// advisory lock grelmicro takes (`hashtext(<table>)`), so replicas of either starting together
/// do not race. The `TIMESTAMP` → `TIMESTAMPTZ` conversion runs in a savepoint that waits at
/// most 2 s for the table lock; if it is not granted, [`CONVERT_FAILED`] ends the transaction
/// without it (as grelmicro does: the next start tries again).
pub(crate) fn lock_schema(table: &str) -> String {
    format!(
        "BEGIN; SELECT pg_advisory_xact_lock(hashtext('{table}')); \
         CREATE TABLE IF NOT EXISTS {table} (name TEXT PRIMARY KEY, token TEXT, expire_at TIMESTAMPTZ, \
                                             fence BIGINT NOT NULL DEFAULT 0); \
         DO $$ BEGIN \
             IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = '{table}'::regclass \
                            AND attname = 'fence' AND NOT attisdropped) THEN \
                 ALTER TABLE {table} ADD COLUMN fence BIGINT NOT NULL DEFAULT 0; \
             END IF; \
             IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = '{table}'::regclass \
                        AND attname IN ('token', 'expire_at') AND attnotnull) THEN \
                 ALTER TABLE {table} ALTER COLUMN token DROP NOT NULL, ALTER COLUMN expire_at DROP NOT NULL; \
             END IF; \
         END $$; \
         SAVEPOINT tenure_expire_at; SET LOCAL lock_timeout = '2s'; \
         DO $$ BEGIN \
             IF (SELECT atttypid FROM pg_attribute WHERE attrelid = '{table}'::regclass \
                 AND attname = 'expire_at') = 'timestamp'::regtype THEN \
                 ALTER TABLE {table} ALTER COLUMN expire_at TYPE TIMESTAMPTZ; \
             END IF; \
         END $$; \
         RELEASE SAVEPOINT tenure_expire_at; COMMIT;"
    )
}

/// What finishes the lock table's transaction when its expiry conversion was not granted the
/// table lock in time.
pub(crate) const CONVERT_FAILED: &str = "ROLLBACK TO SAVEPOINT tenure_expire_at; COMMIT;";

/// Tenure's table of the terms' fences beside the leader table `leaders` (grelmicro neither reads
/// nor writes it).
pub(crate) fn leader_fences(leaders: &str) -> String {
    format!("{leaders}_fences")
}

/// The leader table and grelmicro 0.44's function, word for word in what it does (either
/// side may replace the other's definition); and Tenure's table of fences.
pub(crate) fn leader_schema(table: &str) -> String {
    format!(
        "BEGIN; SELECT pg_advisory_xact_lock(hashtext('{table}')); \
         CREATE TABLE IF NOT EXISTS {fences} (name TEXT PRIMARY KEY, fence BIGINT NOT NULL); \
         CREATE TABLE IF NOT EXISTS {table} (name TEXT PRIMARY KEY, holder TEXT NOT NULL, \
             lease_duration DOUBLE PRECISION NOT NULL, acquired_at TIMESTAMPTZ NOT NULL, \
             renewed_at TIMESTAMPTZ NOT NULL, transitions INT NOT NULL DEFAULT 0, \
             metadata JSONB NOT NULL DEFAULT '{{}}'::jsonb); \
         CREATE OR REPLACE FUNCTION {table}_le_acquire_or_renew_v2( \
             p_name TEXT, p_token TEXT, p_duration_us BIGINT, p_metadata JSONB \
         ) RETURNS TABLE( \
             r_holder TEXT, r_lease_duration INTERVAL, r_acquired_at TIMESTAMPTZ, \
             r_renewed_at TIMESTAMPTZ, r_transitions INT, r_metadata JSONB \
         ) AS $$ \
         DECLARE \
             v_now TIMESTAMPTZ := NOW(); \
             v_holder TEXT; \
             v_lease_duration DOUBLE PRECISION; \
             v_acquired_at TIMESTAMPTZ; \
             v_renewed_at TIMESTAMPTZ; \
             v_transitions INT; \
             v_expired BOOLEAN; \
             v_new_transitions INT; \
             v_duration INTERVAL := p_duration_us * INTERVAL '1 microsecond'; \
             v_seconds DOUBLE PRECISION := p_duration_us / 1000000.0; \
         BEGIN \
             PERFORM pg_advisory_xact_lock(hashtextextended(p_name, {LEADER_NAMESPACE})); \
             SELECT t.holder, t.lease_duration, t.acquired_at, t.renewed_at, t.transitions \
                 INTO v_holder, v_lease_duration, v_acquired_at, v_renewed_at, v_transitions \
                 FROM {table} t WHERE t.name = p_name; \
             v_expired := v_holder IS NULL OR v_now >= ( \
                 v_renewed_at + make_interval(secs => v_lease_duration)); \
             IF NOT v_expired AND v_holder <> p_token THEN \
                 RETURN QUERY SELECT v_holder, make_interval(secs => v_lease_duration), v_acquired_at, \
                     v_renewed_at, v_transitions, (SELECT t.metadata FROM {table} t WHERE t.name = p_name); \
                 RETURN; \
             END IF; \
             IF NOT v_expired THEN \
                 UPDATE {table} SET renewed_at = v_now, lease_duration = v_seconds, metadata = p_metadata \
                     WHERE name = p_name; \
                 RETURN QUERY SELECT p_token, v_duration, v_acquired_at, v_now, v_transitions, p_metadata; \
                 RETURN; \
             END IF; \
             IF v_holder IS NULL OR v_holder = p_token THEN \
                 v_new_transitions := COALESCE(v_transitions, 0); \
             ELSE \
                 v_new_transitions := v_transitions + 1; \
             END IF; \
             INSERT INTO {table} (name, holder, lease_duration, acquired_at, renewed_at, transitions, metadata) \
             VALUES (p_name, p_token, v_seconds, v_now, v_now, v_new_transitions, p_metadata) \
             ON CONFLICT (name) DO UPDATE \
                 SET holder = EXCLUDED.holder, lease_duration = EXCLUDED.lease_duration, \
                     acquired_at = EXCLUDED.acquired_at, renewed_at = EXCLUDED.renewed_at, \
                     transitions = EXCLUDED.transitions, metadata = EXCLUDED.metadata; \
             RETURN QUERY SELECT p_token, v_duration, v_now, v_now, v_new_transitions, p_metadata; \
         END; \
         $$ LANGUAGE plpgsql; \
         COMMIT;",
        fences = leader_fences(table)
    )
}

/// The schedule table.
pub(crate) fn schedule_schema(table: &str) -> String {
    format!(
        "BEGIN; SELECT pg_advisory_xact_lock(hashtext('{table}')); \
         CREATE TABLE IF NOT EXISTS {table} (name TEXT PRIMARY KEY, last_fired DOUBLE PRECISION NOT NULL); \
         COMMIT;"
    )
}

/// Every read-write lock and semaphore row (`$1` the names, or all when empty) as
/// `(name, kind, token, expire_at, number, permits, acquired_at, details)`: `G` a read-write
/// lock's row (number its generation), `W` its live writer, `r`/`i` its live readers and waiting
/// writers, `S` a semaphore's row (number its last fence), `h`/`w` its live holders and waiters
/// (number the fence or arrival, by which waiters are in line); a lease with its holder's details
/// where they are kept.
fn shared_states(rw: &str, sem: &str) -> String {
    let names = |at: &str| format!("(cardinality($1::text[]) = 0 OR {at}name = ANY($1))");
    let (all, l) = (names(""), names("l."));
    let told = |t: &str, token: &str| format!("LEFT JOIN {t}_details d ON d.name = l.name AND d.token = l.{token}");
    format!(
        "SELECT name, 'G', NULL::text, NULL::timestamptz, generation, NULL::integer, NULL::timestamptz, NULL::text \
             FROM {rw} WHERE {all} \
         UNION ALL SELECT l.name, 'W', l.writer, l.writer_expire_at, 0, NULL, d.acquired_at, d.details FROM {rw} l {} \
             WHERE {l} AND l.writer IS NOT NULL AND l.writer_expire_at >= NOW() \
         UNION ALL SELECT l.name, l.kind::text, l.token, l.expire_at, 0, NULL, d.acquired_at, \
             CASE WHEN l.kind = 'r' THEN d.details END FROM {rw}_holders l {} \
             WHERE {l} AND l.expire_at >= NOW() \
         UNION ALL SELECT name, 'S', NULL, NULL, fence, permits, NULL, NULL FROM {sem} WHERE {all} \
         UNION ALL SELECT l.name, l.kind::text, l.token, l.expire_at, l.seq, NULL, d.acquired_at, \
             CASE WHEN l.kind = 'h' THEN d.details END FROM {sem}_holders l {} \
             WHERE {l} AND l.expire_at >= NOW() \
         ORDER BY 1, 2, 5, 3",
        told(rw, "writer"),
        told(rw, "token"),
        told(sem, "token"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listened_channel_is_the_announced_one() {
        assert_eq!(LISTEN.strip_prefix("LISTEN "), Some(CHANNEL));
    }
}
