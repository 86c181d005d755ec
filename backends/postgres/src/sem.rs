//! Fenced semaphores (Tenure's own layout; grelmicro has none): `tenure_semaphores(name,
//! permits, fence, arrivals)` — the stored permit count, the last fencing token issued and the last
//! arrival number given — and `tenure_semaphores_holders(name, token, kind, seq, expire_at)`, a row
//! per holder (`kind` `h`, `seq` its fencing token) or waiter keeping a place (`w`, `seq` its
//! arrival number). An acquire is one function, `<table>_acquire`, that takes the name's
//! transaction-scoped advisory lock in Tenure's semaphore namespace and decides by the server's
//! clock (a lease or a place is live through its end); a release notifies the release channel
//! (when the backend listens), so waiters are pushed. Each holder's details are kept in the
//! `UNLOGGED` table `<table>_details (name, token, acquired_at, details)` by a grant that carries
//! them, which also drops the rows of tokens that no longer hold a permit.
//!
//! The statements are prepared on a connection the first time it runs a semaphore call.

use std::time::Duration;

use tenure::backend::{SemaphoreOperations, Wakeup};
use tenure_core::{BackendError, HolderDetails, PermitAnswer, SemState};
use tenure_store::Wake;
use tenure_store::record::{fence, generation, malformed};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row, Statement};

use crate::connect::{Session, sent};
use crate::{PostgresBackend, micros, record};

/// Tenure's advisory-lock namespace for semaphores (`hashtextextended`'s seed): "tnrsemph".
const NAMESPACE: u64 = 0x746E_7273_656D_7068;

/// The tables and the acquire function, under a migration lock.
pub(crate) fn schema(t: &str) -> String {
    let details = crate::details::held_schema(t);
    // (after a grant or a renewal: keeps the holder's details, dropping those of non-holders)
    let keep = format!(
        "IF p_details IS NOT NULL THEN \
             DELETE FROM {t}_details WHERE name = p_name AND token <> p_token \
                 AND token NOT IN (SELECT token FROM {t}_holders WHERE name = p_name AND kind = 'h'); \
             INSERT INTO {t}_details (name, token, acquired_at, details) VALUES (p_name, p_token, v_now, p_details) \
                 ON CONFLICT (name, token) DO UPDATE SET acquired_at = EXCLUDED.acquired_at, details = EXCLUDED.details; \
         END IF;"
    );
    format!(
        "BEGIN; SELECT pg_advisory_xact_lock(hashtext('{t}')); \
         CREATE TABLE IF NOT EXISTS {t} (name TEXT PRIMARY KEY, permits INTEGER NOT NULL, \
             fence BIGINT NOT NULL DEFAULT 0, arrivals BIGINT NOT NULL DEFAULT 0); \
         CREATE TABLE IF NOT EXISTS {t}_holders (name TEXT NOT NULL, token TEXT NOT NULL, kind CHAR(1) NOT NULL, \
             seq BIGINT NOT NULL, expire_at TIMESTAMPTZ NOT NULL, PRIMARY KEY (name, token, kind)); \
         {details} \
         CREATE OR REPLACE FUNCTION {t}_acquire( \
             p_name TEXT, p_token TEXT, p_duration_us BIGINT, p_permits INTEGER, p_wait_us BIGINT, p_details TEXT \
         ) RETURNS TABLE(r_fence BIGINT, r_permits INTEGER) AS $$ \
         DECLARE \
             v_now TIMESTAMPTZ; v_expire_at TIMESTAMPTZ; v_holders INT; v_waiters INT; \
             v_permits INT; v_seq BIGINT; v_ahead INT; v_fence BIGINT; \
         BEGIN \
             PERFORM pg_advisory_xact_lock(hashtextextended(p_name, {NAMESPACE})); \
             v_now := clock_timestamp(); \
             v_expire_at := v_now + p_duration_us * INTERVAL '1 microsecond'; \
             DELETE FROM {t}_holders WHERE name = p_name AND expire_at < v_now; \
             SELECT count(*) FILTER (WHERE kind = 'h'), count(*) FILTER (WHERE kind = 'w') \
                 INTO v_holders, v_waiters FROM {t}_holders WHERE name = p_name; \
             IF v_holders = 0 AND v_waiters = 0 THEN \
                 INSERT INTO {t} (name, permits) VALUES (p_name, p_permits) \
                     ON CONFLICT (name) DO UPDATE SET permits = EXCLUDED.permits; \
             END IF; \
             SELECT permits INTO v_permits FROM {t} WHERE name = p_name; \
             IF v_permits IS DISTINCT FROM p_permits THEN \
                 RETURN QUERY SELECT NULL::BIGINT, v_permits; RETURN; \
             END IF; \
             SELECT seq INTO v_seq FROM {t}_holders WHERE name = p_name AND token = p_token AND kind = 'h'; \
             IF v_seq IS NOT NULL THEN \
                 UPDATE {t}_holders SET expire_at = v_expire_at WHERE name = p_name AND token = p_token AND kind = 'h'; \
                 {keep} \
                 RETURN QUERY SELECT v_seq, p_permits; RETURN; \
             END IF; \
             SELECT seq INTO v_seq FROM {t}_holders WHERE name = p_name AND token = p_token AND kind = 'w'; \
             IF v_seq IS NULL THEN \
                 v_ahead := v_waiters; \
             ELSE \
                 SELECT count(*) INTO v_ahead FROM {t}_holders WHERE name = p_name AND kind = 'w' AND seq < v_seq; \
             END IF; \
             IF v_holders + v_ahead < p_permits THEN \
                 DELETE FROM {t}_holders WHERE name = p_name AND token = p_token AND kind = 'w'; \
                 UPDATE {t} SET fence = fence + 1 WHERE name = p_name RETURNING fence INTO v_fence; \
                 INSERT INTO {t}_holders (name, token, kind, seq, expire_at) \
                     VALUES (p_name, p_token, 'h', v_fence, v_expire_at); \
                 {keep} \
                 RETURN QUERY SELECT v_fence, p_permits; RETURN; \
             END IF; \
             IF p_wait_us IS NOT NULL THEN \
                 IF v_seq IS NULL THEN \
                     UPDATE {t} SET arrivals = arrivals + 1 WHERE name = p_name RETURNING arrivals INTO v_seq; \
                 END IF; \
                 INSERT INTO {t}_holders (name, token, kind, seq, expire_at) \
                     VALUES (p_name, p_token, 'w', v_seq, v_now + p_wait_us * INTERVAL '1 microsecond') \
                     ON CONFLICT (name, token, kind) DO UPDATE SET expire_at = EXCLUDED.expire_at; \
             END IF; \
             RETURN QUERY SELECT NULL::BIGINT, p_permits; \
         END; \
         $$ LANGUAGE plpgsql; \
         COMMIT;"
    )
}

/// The texts of the semaphore statements.
#[derive(Debug)]
pub(crate) struct Texts {
    acquire: String,
    release: String,
    owned: String,
    state: String,
}

impl Texts {
    /// The statements on `t`, a release announcing itself iff `notify`.
    pub(crate) fn new(t: &str, notify: bool) -> Self {
        let notified = if notify {
            format!(
                "LEFT JOIN LATERAL (SELECT pg_notify('{}', '{t}:' || $1) WHERE h > 0 OR (w > 0 AND EXISTS \
                 (SELECT 1 FROM {t}_holders o WHERE o.name = $1 AND o.token <> $2 AND o.kind = 'w'))) n ON TRUE",
                crate::sql::CHANNEL
            )
        } else {
            String::new()
        };
        let live = "expire_at >= NOW()";
        Self {
            acquire: format!("SELECT * FROM {t}_acquire($1, $2, $3::bigint, $4::integer, $5::bigint, $6::text)"),
            // Leaves the line and gives the permit back; counts the live permit given back, and
            // announces it — or a place left while others wait, who may now be let in.
            release: format!(
                "WITH gone AS (DELETE FROM {t}_holders WHERE name = $1 AND token = $2 RETURNING kind, expire_at), \
                 counted AS (SELECT count(*) FILTER (WHERE kind = 'h' AND {live}) AS h, \
                     count(*) FILTER (WHERE kind = 'w') AS w FROM gone) \
                 SELECT h FROM counted {notified}"
            ),
            owned: format!("SELECT 1 FROM {t}_holders WHERE name = $1 AND token = $2 AND kind = 'h' AND {live}"),
            state: format!(
                "SELECT t.permits, t.fence, \
                     (SELECT count(*) FROM {t}_holders h WHERE h.name = t.name AND h.kind = 'h' AND h.{live}), \
                     (SELECT count(*) FROM {t}_holders h WHERE h.name = t.name AND h.kind = 'w' AND h.{live}) \
                 FROM {t} t WHERE t.name = $1"
            ),
        }
    }
}

/// The semaphore statements prepared on one connection.
pub(crate) struct Statements {
    acquire: Statement,
    release: Statement,
    owned: Statement,
    state: Statement,
}

impl Statements {
    pub(crate) async fn prepare(client: &Client, texts: &Texts) -> Result<Self, tokio_postgres::Error> {
        Ok(Self {
            acquire: sent(client.prepare(&texts.acquire)).await?,
            release: sent(client.prepare(&texts.release)).await?,
            owned: sent(client.prepare(&texts.owned)).await?,
            state: sent(client.prepare(&texts.state)).await?,
        })
    }
}

impl PostgresBackend {
    /// Runs the semaphore statement `statement` on `name`'s connection (preparing them there
    /// first if needed) within the command timeout, for at most one row.
    async fn sem_row(
        &self,
        what: &str,
        name: &str,
        token: Option<&str>,
        statement: fn(&Statements) -> &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, BackendError> {
        let session: std::sync::Arc<Session> = self.session_for(name, token).await?;
        let texts = &self.inner.sem_texts;
        let prepared = self
            .bounded(what, name, Box::pin(session.sem.get_or_try_init(|| Statements::prepare(&session.client, texts))))
            .await?;
        self.bounded(what, name, sent(session.client.query_opt(statement(prepared), params))).await
    }
}

/// A stored permit count read back, checked.
fn permits_of(name: &str, stored: i32) -> Result<u32, BackendError> {
    u32::try_from(stored).map_err(|_| malformed(format!("{name} stores {stored} permits")))
}

fn count(row: &Row, i: usize, name: &str, what: &str) -> Result<usize, BackendError> {
    let n: i64 = record::column(row, i, name, what)?;
    Ok(usize::try_from(n).unwrap_or(0))
}

impl SemaphoreOperations for PostgresBackend {
    async fn acquire(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        permits: u32,
        wait: Option<Duration>,
    ) -> Result<PermitAnswer, BackendError> {
        self.acquire_with_details(name, token, (lease, permits, wait), None).await
    }

    async fn acquire_with_details(
        &self,
        name: &str,
        token: &str,
        (lease, permits, wait): (Duration, u32, Option<Duration>),
        details: Option<&HolderDetails>,
    ) -> Result<PermitAnswer, BackendError> {
        self.listen_if_waited(name).await;
        let (micros, wait, details) = (micros(lease), wait.map(micros), details.map(HolderDetails::as_str));
        let asked = i32::try_from(permits).map_err(|_| malformed(format!("{permits} permits is too many")))?;
        let params: [&(dyn ToSql + Sync); 6] = [&name, &token, &micros, &asked, &wait, &details];
        let row = self.sem_row("semaphore acquire", name, Some(token), |s| &s.acquire, &params).await?;
        let row = row.ok_or_else(|| malformed(format!("the acquire of {name} answered no row")))?;
        let granted: Option<i64> = record::column(&row, 0, name, "fence")?;
        let stored: Option<i32> = record::column(&row, 1, name, "permits")?;
        let stored = stored.ok_or_else(|| malformed(format!("{name} has no permit count")))?;
        Ok(PermitAnswer { fence: granted.map(|f| fence(name, f)).transpose()?, permits: permits_of(name, stored)? })
    }

    async fn release(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        let row = self.sem_row("semaphore release", name, Some(token), |s| &s.release, &[&name, &token]).await?;
        Ok(row.map(|r| count(&r, 0, name, "release count")).transpose()?.unwrap_or(0) > 0)
    }

    async fn owned(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        Ok(self.sem_row("semaphore owned check", name, Some(token), |s| &s.owned, &[&name, &token]).await?.is_some())
    }

    async fn state(&self, name: &str) -> Result<SemState, BackendError> {
        let Some(row) = self.sem_row("semaphore state", name, None, |s| &s.state, &[&name]).await? else {
            return Ok(SemState::default());
        };
        let (holders, waiting) = (count(&row, 2, name, "holder count")?, count(&row, 3, name, "waiter count")?);
        let stored: i32 = record::column(&row, 0, name, "permits")?;
        let permits = if holders == 0 && waiting == 0 { 0 } else { permits_of(name, stored)? };
        let last: i64 = record::column(&row, 1, name, "fence")?;
        Ok(SemState { permits, holders, waiting, fence: generation(name, last)?.get() })
    }

    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        self.inner.options.notify.then(|| self.inner.queues.wakeup(name, Wake::All))
    }
}
