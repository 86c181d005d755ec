//! Read-write locks in grelmicro 0.44's PostgreSQL layout (`PostgresReadWriteLockAdapter`):
//! `grelmicro_rwlocks(name, writer, writer_expire_at, generation)` and
//! `grelmicro_rwlocks_holders(name, token, kind, expire_at)` (`kind` `r` for a reader's lease,
//! `i` for a waiting writer's intent), with its three functions `<table>_acquire_read_v2`,
//! `<table>_acquire_write_v2` and `<table>_downgrade_v2` created word for word (either library
//! may replace the other's definition) and its statements for the rest. Every decision takes the
//! name's transaction-scoped advisory lock in grelmicro's namespace, so both libraries' processes
//! decide one at a time. This process's read acquisitions and read releases of a name go in
//! batches (see [`crate::batch`]): one commit for many readers. A write release, a withdrawn
//! intent, a downgrade, and a read release while a writer's intent waits also notify the release
//! channel (when the backend listens), so this backend's waiters are pushed; grelmicro's
//! releases notify nothing, and waiters see them at their next attempt.
//!
//! Beside grelmicro's tables, Tenure's `UNLOGGED` table `<table>_details (name, token,
//! acquired_at, details)` keeps each reader's and the writer's holder details (soft state for
//! people: a crash forgets who held, never a lease): written in the statement of a grant that
//! carries them (around grelmicro's functions, which stay word for word), dropped by a read release,
//! and, for tokens that no longer hold the name, by the next grant that writes.
//!
//! The statements are prepared on a connection the first time it runs a read-write call.

use std::time::Duration;

use tenure::backend::{ReadWriteOperations, Wakeup};
use tenure_core::{BackendError, FencingToken, HolderDetails, RwState, WriteGrant};
use tenure_store::Wake;
use tenure_store::record::fence;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row, Statement};

use crate::batch::{Answer, Call};
use crate::connect::{Session, sent};
use crate::sql::announced;
use crate::{PostgresBackend, micros, record};

/// grelmicro's advisory-lock namespace for read-write locks (`hashtextextended`'s seed).
const NAMESPACE: u64 = 0x6772_6C72_776C_636B;

/// The tables and grelmicro 0.44's three functions, under grelmicro's migration lock.
pub(crate) fn schema(t: &str) -> String {
    let intent = format!(
        "IF p_intent THEN \
             INSERT INTO {t}_holders (name, token, kind, expire_at) VALUES (p_name, p_token, 'i', v_expire_at) \
             ON CONFLICT (name, token, kind) DO UPDATE SET expire_at = EXCLUDED.expire_at; \
         END IF; \
         RETURN;"
    );
    let start = format!(
        "PERFORM pg_advisory_xact_lock(hashtextextended(p_name, {NAMESPACE})); \
         v_expire_at := v_now + p_duration_us * INTERVAL '1 microsecond'; \
         DELETE FROM {t}_holders WHERE name = p_name AND expire_at < v_now; \
         INSERT INTO {t} (name) VALUES (p_name) ON CONFLICT (name) DO NOTHING; \
         SELECT t.writer, t.writer_expire_at, t.generation INTO v_writer, v_writer_expire_at, v_generation \
             FROM {t} t WHERE t.name = p_name;"
    );
    let details = crate::details::held_schema(t);
    format!(
        "BEGIN; SELECT pg_advisory_xact_lock(hashtext('{t}')); \
         CREATE TABLE IF NOT EXISTS {t} (name TEXT PRIMARY KEY, writer TEXT, writer_expire_at TIMESTAMPTZ, \
             generation BIGINT NOT NULL DEFAULT 0); \
         CREATE TABLE IF NOT EXISTS {t}_holders (name TEXT NOT NULL, token TEXT NOT NULL, kind CHAR(1) NOT NULL, \
             expire_at TIMESTAMPTZ NOT NULL, PRIMARY KEY (name, token, kind)); \
         {details} \
         CREATE OR REPLACE FUNCTION {t}_acquire_read_v2(p_name TEXT, p_token TEXT, p_duration_us BIGINT) \
         RETURNS BIGINT AS $$ \
         DECLARE \
             v_now TIMESTAMPTZ := NOW(); v_expire_at TIMESTAMPTZ; v_generation BIGINT; v_writer TEXT; \
             v_writer_expire_at TIMESTAMPTZ; v_intents INT; v_held BOOLEAN; \
         BEGIN \
             {start} \
             SELECT EXISTS(SELECT 1 FROM {t}_holders h WHERE h.name = p_name AND h.token = p_token AND h.kind = 'r') \
                 INTO v_held; \
             IF v_held THEN \
                 UPDATE {t}_holders SET expire_at = v_expire_at WHERE name = p_name AND token = p_token AND kind = 'r'; \
                 RETURN v_generation; \
             END IF; \
             IF v_writer IS NOT NULL AND v_writer_expire_at > v_now THEN RETURN NULL; END IF; \
             SELECT count(*) INTO v_intents FROM {t}_holders h WHERE h.name = p_name AND h.kind = 'i'; \
             IF v_intents > 0 THEN RETURN NULL; END IF; \
             INSERT INTO {t}_holders (name, token, kind, expire_at) VALUES (p_name, p_token, 'r', v_expire_at); \
             RETURN v_generation; \
         END; \
         $$ LANGUAGE plpgsql; \
         CREATE OR REPLACE FUNCTION {t}_acquire_write_v2( \
             p_name TEXT, p_token TEXT, p_duration_us BIGINT, p_intent BOOLEAN \
         ) RETURNS TABLE(r_fence BIGINT, r_poisoned BOOLEAN) AS $$ \
         DECLARE \
             v_now TIMESTAMPTZ := NOW(); v_expire_at TIMESTAMPTZ; v_generation BIGINT; v_writer TEXT; \
             v_writer_expire_at TIMESTAMPTZ; v_readers INT; \
         BEGIN \
             {start} \
             IF v_writer = p_token AND v_writer_expire_at > v_now THEN \
                 UPDATE {t} SET writer_expire_at = v_expire_at WHERE name = p_name; \
                 RETURN QUERY SELECT v_generation, FALSE; \
                 RETURN; \
             END IF; \
             IF v_writer IS NOT NULL AND v_writer_expire_at > v_now THEN {intent} END IF; \
             SELECT count(*) INTO v_readers FROM {t}_holders h WHERE h.name = p_name AND h.kind = 'r'; \
             IF v_readers > 0 THEN {intent} END IF; \
             DELETE FROM {t}_holders WHERE name = p_name AND token = p_token AND kind = 'i'; \
             UPDATE {t} SET generation = generation + 1, writer = p_token, writer_expire_at = v_expire_at \
                 WHERE name = p_name RETURNING generation INTO v_generation; \
             RETURN QUERY SELECT v_generation, (v_writer IS NOT NULL); \
         END; \
         $$ LANGUAGE plpgsql; \
         CREATE OR REPLACE FUNCTION {t}_downgrade_v2(p_name TEXT, p_token TEXT, p_duration_us BIGINT) \
         RETURNS BIGINT AS $$ \
         DECLARE \
             v_now TIMESTAMPTZ := NOW(); v_generation BIGINT; \
         BEGIN \
             PERFORM pg_advisory_xact_lock(hashtextextended(p_name, {NAMESPACE})); \
             SELECT t.generation INTO v_generation FROM {t} t \
                 WHERE t.name = p_name AND t.writer = p_token AND t.writer_expire_at > v_now; \
             IF v_generation IS NULL THEN RETURN NULL; END IF; \
             UPDATE {t} SET writer = NULL, writer_expire_at = NULL WHERE name = p_name; \
             INSERT INTO {t}_holders (name, token, kind, expire_at) \
                 VALUES (p_name, p_token, 'r', v_now + p_duration_us * INTERVAL '1 microsecond') \
                 ON CONFLICT (name, token, kind) DO UPDATE SET expire_at = EXCLUDED.expire_at; \
             RETURN v_generation; \
         END; \
         $$ LANGUAGE plpgsql; \
         COMMIT;"
    )
}

/// The texts of the read-write statements.
#[derive(Debug)]
pub(crate) struct Texts {
    acquire_reads: String,
    acquire_write: String,
    downgrade: String,
    release_reads: String,
    release_write: String,
    cancel_intent: String,
    state: String,
    owned_read: String,
    owned_write: String,
}

impl Texts {
    /// grelmicro's statements on `t`, a release announcing itself iff `notify`.
    pub(crate) fn new(t: &str, notify: bool) -> Self {
        let notified = if notify {
            format!(
                "LEFT JOIN LATERAL (SELECT pg_notify('{}', '{t}:' || $1) WHERE d.g IS NOT NULL) n ON TRUE",
                crate::sql::CHANNEL
            )
        } else {
            String::new()
        };
        Self {
            // A batch of readers (see `batch`): grelmicro's function once for each, in one
            // transaction; `$4` are the calls' places, returned beside their generations.
            // and `$5` the readers' holder details (NULL for none), kept beside each grant.
            acquire_reads: format!(
                "WITH r AS (SELECT r.place, r.token, r.details, {t}_acquire_read_v2($1, r.token, r.us) AS g \
                     FROM unnest($2::text[], $3::bigint[], $4::bigint[], $5::text[]) AS r(token, us, place, details)), \
                 {kept} \
                 SELECT place, g FROM r",
                kept = crate::details::kept_held(
                    t,
                    "SELECT DISTINCT ON (token) token, details FROM r WHERE g IS NOT NULL AND details IS NOT NULL",
                    &format!(
                        "SELECT token FROM {t}_holders WHERE name = $1 AND kind = 'r' \
                         UNION ALL SELECT writer FROM {t} WHERE name = $1 AND writer IS NOT NULL \
                         UNION ALL SELECT unnest($2::text[])"
                    ),
                ),
            ),
            // `$5` the writer's holder details (NULL for none), kept beside a grant.
            acquire_write: format!(
                "WITH r AS (SELECT * FROM {t}_acquire_write_v2($1, $2, $3::bigint, $4)), {kept} \
                 SELECT r_fence, r_poisoned FROM r",
                kept = crate::details::kept_held(
                    t,
                    "SELECT $2::text AS token, $5::text AS details FROM r WHERE $5::text IS NOT NULL",
                    &format!("SELECT token FROM {t}_holders WHERE name = $1 AND kind = 'r' UNION ALL SELECT $2::text"),
                ),
            ),
            downgrade: format!(
                "WITH d AS (SELECT {t}_downgrade_v2($1, $2, $3::bigint) AS g) SELECT d.g FROM d {notified}"
            ),
            // The tokens of a batch that let go (NULL if none), announced once if a writer
            // waits: only a writer waits for readers, and a waiting writer keeps an intent. (A
            // notification serializes commits server-wide; an intent committed while the
            // release ran is missed, and its writer sees the release at its next attempt.)
            release_reads: {
                let released = format!(
                    "released AS (DELETE FROM {t}_holders \
                     WHERE name = $1 AND token = ANY($2::text[]) AND kind = 'r' AND expire_at >= NOW() RETURNING token), \
                     forgot AS (DELETE FROM {t}_details WHERE name = $1 AND token = ANY($2::text[]))"
                );
                if notify {
                    format!(
                        "WITH {released}, announced AS (SELECT pg_notify('{}', '{t}:' || $1::text) \
                             FROM (SELECT 1 FROM released LIMIT 1) one \
                             WHERE EXISTS (SELECT 1 FROM {t}_holders i \
                                 WHERE i.name = $1 AND i.kind = 'i' AND i.expire_at >= NOW())) \
                         SELECT (SELECT array_agg(token) FROM released), (SELECT count(*) FROM announced)",
                        crate::sql::CHANNEL
                    )
                } else {
                    format!("WITH {released} SELECT (SELECT array_agg(token) FROM released)")
                }
            },
            release_write: announced(
                notify,
                &format!(
                    "UPDATE {t} SET writer = NULL, writer_expire_at = NULL \
                     WHERE name = $1 AND writer = $2 AND writer_expire_at >= NOW()"
                ),
                t,
            ),
            cancel_intent: announced(
                notify,
                &format!(
                    "DELETE FROM {t}_holders WHERE name = $1 AND token = $2 AND kind = 'i' AND expire_at >= NOW()"
                ),
                t,
            ),
            state: format!(
                "SELECT t.generation, (t.writer IS NOT NULL AND t.writer_expire_at >= NOW()), \
                     (SELECT count(*) FROM {t}_holders h WHERE h.name = t.name AND h.kind = 'r' AND h.expire_at >= NOW()), \
                     (SELECT count(*) FROM {t}_holders h WHERE h.name = t.name AND h.kind = 'i' AND h.expire_at >= NOW()) \
                 FROM {t} t WHERE t.name = $1"
            ),
            owned_read: format!(
                "SELECT 1 FROM {t}_holders WHERE name = $1 AND token = $2 AND kind = 'r' AND expire_at >= NOW()"
            ),
            owned_write: format!("SELECT 1 FROM {t} WHERE name = $1 AND writer = $2 AND writer_expire_at >= NOW()"),
        }
    }
}

/// The read-write statements prepared on one connection.
pub(crate) struct Statements {
    acquire_reads: Statement,
    acquire_write: Statement,
    downgrade: Statement,
    release_reads: Statement,
    release_write: Statement,
    cancel_intent: Statement,
    state: Statement,
    owned_read: Statement,
    owned_write: Statement,
}

impl Statements {
    pub(crate) async fn prepare(client: &Client, texts: &Texts) -> Result<Self, tokio_postgres::Error> {
        Ok(Self {
            acquire_reads: sent(client.prepare(&texts.acquire_reads)).await?,
            acquire_write: sent(client.prepare(&texts.acquire_write)).await?,
            downgrade: sent(client.prepare(&texts.downgrade)).await?,
            release_reads: sent(client.prepare(&texts.release_reads)).await?,
            release_write: sent(client.prepare(&texts.release_write)).await?,
            cancel_intent: sent(client.prepare(&texts.cancel_intent)).await?,
            state: sent(client.prepare(&texts.state)).await?,
            owned_read: sent(client.prepare(&texts.owned_read)).await?,
            owned_write: sent(client.prepare(&texts.owned_write)).await?,
        })
    }
}

impl PostgresBackend {
    /// Runs the read-write statement `statement` on `name`'s connection (preparing them there
    /// first if needed) within the command timeout, for at most one row.
    async fn rw_row(
        &self,
        what: &str,
        name: &str,
        token: Option<&str>,
        statement: fn(&Statements) -> &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, BackendError> {
        let session: std::sync::Arc<Session> = self.session_for(name, token).await?;
        let prepared = self.rw_prepared(what, name, &session).await?;
        self.bounded(what, name, sent(session.client.query_opt(statement(prepared), params))).await
    }

    /// The read-write statements of `session`, prepared there first if needed.
    async fn rw_prepared<'s>(
        &self,
        what: &str,
        name: &str,
        session: &'s Session,
    ) -> Result<&'s Statements, BackendError> {
        let texts = &self.inner.rw_texts;
        self.bounded(what, name, Box::pin(session.rw.get_or_try_init(|| Statements::prepare(&session.client, texts))))
            .await
    }

    /// Sends a batch of readers' calls on `name` (see [`crate::batch`]) on the name's connection:
    /// the acquisitions as one statement, then the releases as another, pipelined. Each call's
    /// answer, by its place.
    pub(crate) async fn send_batch(
        &self,
        name: &str,
        acquires: Vec<crate::batch::Acquisition>,
        releases: Vec<(usize, String)>,
    ) -> Result<Vec<(usize, Result<Answer, BackendError>)>, BackendError> {
        let session: std::sync::Arc<Session> = self.session_for(name, None).await?;
        let prepared = self.rw_prepared("read acquire", name, &session).await?;
        let (mut tokens, mut micros, mut places, mut told) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (place, token, us, details) in &acquires {
            tokens.push(token.as_str());
            micros.push(*us);
            places.push(place_number(*place));
            told.push(details.as_deref());
        }
        let released: Vec<&str> = releases.iter().map(|(_, token)| token.as_str()).collect();
        let acquired = async {
            if tokens.is_empty() {
                return Ok(Vec::new());
            }
            let params: [&(dyn ToSql + Sync); 5] = [&name, &tokens, &micros, &places, &told];
            self.bounded("read acquire", name, sent(session.client.query(&prepared.acquire_reads, &params))).await
        };
        let let_go = async {
            if released.is_empty() {
                return Ok(None);
            }
            let params: [&(dyn ToSql + Sync); 2] = [&name, &released];
            self.bounded("read release", name, sent(session.client.query_opt(&prepared.release_reads, &params))).await
        };
        let (acquired, let_go) = futures_lite::future::zip(acquired, let_go).await;
        let mut answers = Vec::with_capacity(acquires.len() + releases.len());
        for row in acquired? {
            let place: i64 = record::column(&row, 0, name, "batch place")?;
            let place = usize::try_from(place).map_err(|_| {
                tenure_store::record::malformed(format!(
                    "a batch of read acquisitions on {name} answered a negative place"
                ))
            })?;
            answers.push((place, generation(Some(&row), name, 1).map(Answer::Generation)));
        }
        let mut gone: Vec<String> = match let_go? {
            Some(row) => record::column::<Option<Vec<String>>>(&row, 0, name, "released tokens")?.unwrap_or_default(),
            None => Vec::new(),
        };
        for (place, token) in releases {
            // A token asked twice lets go once.
            let at = gone.iter().position(|t| *t == token);
            answers.push((place, Ok(Answer::Released(at.map(|i| gone.swap_remove(i)).is_some()))));
        }
        Ok(answers)
    }

    /// A release-like statement: true iff it let go of something live.
    async fn rw_let_go(
        &self,
        what: &str,
        name: &str,
        token: &str,
        statement: fn(&Statements) -> &Statement,
    ) -> Result<bool, BackendError> {
        let row = self.rw_row(what, name, Some(token), statement, &[&name, &token]).await?;
        let count: i64 = row.map(|r| record::column(&r, 0, name, "release count")).transpose()?.unwrap_or(0);
        Ok(count > 0)
    }

    async fn rw_exists(
        &self,
        what: &str,
        name: &str,
        token: &str,
        statement: fn(&Statements) -> &Statement,
    ) -> Result<bool, BackendError> {
        Ok(self.rw_row(what, name, Some(token), statement, &[&name, &token]).await?.is_some())
    }
}

/// A call's place in its batch, as sent.
fn place_number(place: usize) -> i64 {
    i64::try_from(place).unwrap_or(i64::MAX)
}

/// A generation read from column `at` of `row` (none if NULL).
fn generation(row: Option<&Row>, name: &str, at: usize) -> Result<Option<FencingToken>, BackendError> {
    let g: Option<i64> = row.map(|r| record::column(r, at, name, "generation")).transpose()?.flatten();
    g.map(|g| tenure_store::record::generation(name, g)).transpose()
}

/// The error of a batch answering a call with another call's kind of answer (a bug).
fn mismatched(name: &str) -> BackendError {
    BackendError::new(
        tenure_core::BackendErrorKind::Protocol,
        format!("a batch of read-write calls on {name} answered a call with another's answer"),
    )
}

impl ReadWriteOperations for PostgresBackend {
    async fn acquire_read(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
    ) -> Result<Option<FencingToken>, BackendError> {
        self.acquire_read_with_details(name, token, lease, None).await
    }

    async fn acquire_read_with_details(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        details: Option<&HolderDetails>,
    ) -> Result<Option<FencingToken>, BackendError> {
        self.listen_if_waited(name).await;
        let details = details.map(|d| d.as_str().to_owned());
        let call = Call::Acquire { token: token.to_owned(), micros: micros(lease), details };
        match self.inner.batches.call(self, name, call).await? {
            Answer::Generation(generation) => Ok(generation),
            Answer::Released(_) => Err(mismatched(name)),
        }
    }

    async fn acquire_write(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        intent: bool,
    ) -> Result<Option<WriteGrant>, BackendError> {
        self.acquire_write_with_details(name, token, (lease, intent), None).await
    }

    async fn acquire_write_with_details(
        &self,
        name: &str,
        token: &str,
        (lease, intent): (Duration, bool),
        details: Option<&HolderDetails>,
    ) -> Result<Option<WriteGrant>, BackendError> {
        self.listen_if_waited(name).await;
        let (micros, details) = (micros(lease), details.map(HolderDetails::as_str));
        let params: [&(dyn ToSql + Sync); 5] = [&name, &token, &micros, &intent, &details];
        let row = self.rw_row("write acquire", name, Some(token), |s| &s.acquire_write, &params).await?;
        let Some(row) = row else { return Ok(None) };
        let fence_value: i64 = record::column(&row, 0, name, "fence")?;
        let poisoned: bool = record::column(&row, 1, name, "poisoned")?;
        Ok(Some(WriteGrant { fence: fence(name, fence_value)?, poisoned }))
    }

    async fn release_read(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        match self.inner.batches.call(self, name, Call::Release { token: token.to_owned() }).await? {
            Answer::Released(released) => Ok(released),
            Answer::Generation(_) => Err(mismatched(name)),
        }
    }

    async fn release_write(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        self.rw_let_go("write release", name, token, |s| &s.release_write).await
    }

    async fn cancel_intent(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        self.rw_let_go("intent withdrawal", name, token, |s| &s.cancel_intent).await
    }

    async fn downgrade(&self, name: &str, token: &str, lease: Duration) -> Result<Option<FencingToken>, BackendError> {
        let micros = micros(lease);
        let row = self.rw_row("downgrade", name, Some(token), |s| &s.downgrade, &[&name, &token, &micros]).await?;
        generation(row.as_ref(), name, 0)
    }

    async fn state(&self, name: &str) -> Result<RwState, BackendError> {
        let Some(row) = self.rw_row("read-write lock state", name, None, |s| &s.state, &[&name]).await? else {
            return Ok(RwState::default());
        };
        let count = |i: usize, what: &str| -> Result<usize, BackendError> {
            let n: i64 = record::column(&row, i, name, what)?;
            Ok(usize::try_from(n).unwrap_or(0))
        };
        Ok(RwState {
            generation: generation(Some(&row), name, 0)?.map_or(0, FencingToken::get),
            writing: record::column(&row, 1, name, "writing")?,
            readers: count(2, "reader count")?,
            waiting_writers: count(3, "intent count")?,
        })
    }

    async fn owned_read(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        self.rw_exists("read owned check", name, token, |s| &s.owned_read).await
    }

    async fn owned_write(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        self.rw_exists("write owned check", name, token, |s| &s.owned_write).await
    }

    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        self.inner.options.notify.then(|| self.inner.queues.wakeup(name, Wake::All))
    }
}
