//! # tenure-postgres
//!
//! Tenure's PostgreSQL store: locks with fencing tokens, leader elections and schedule claims in
//! a PostgreSQL database (tested on 15; `hashtextextended` needs 11 or later), shared by every
//! process that reaches it.
//!
//! The tables and function are grelmicro 0.44's, and every statement decides as grelmicro's does,
//! so grelmicro services and Tenure services coordinate on the same names:
//!
//! - `locks(name TEXT PRIMARY KEY, token TEXT, expire_at TIMESTAMPTZ, fence BIGINT)`: one
//!   statement takes or renews a lease for a count of microseconds added to the server's
//!   `NOW()`, and returns its fence, which climbs on every change of holder and survives
//!   release; a refused attempt writes nothing (grelmicro's upsert locks the row it refuses);
//! - `grelmicro_leader_election(...)` and the function
//!   `grelmicro_leader_election_le_acquire_or_renew_v2`, which decides under a
//!   transaction-scoped advisory lock on the election's name;
//! - `schedules(name TEXT PRIMARY KEY, last_fired DOUBLE PRECISION)` with a gated upsert.
//!
//! Every lease is judged by the server's clock, in UTC whatever the session's time zone. No
//! session-scoped advisory lock holds any state, so a pooler in transaction mode can sit in
//! between (with `notify=false`). The tables are created (and an older grelmicro lock table
//! upgraded) when the backend opens, each in one transaction holding the advisory lock grelmicro
//! takes for it, so replicas of either starting together do not race.
//!
//! **Fair turns, handed over in the store.** A waiting lock acquire keeps a place in
//! `<locks>_queue` (an unlogged table of Tenure's own; see the `queue` module), and a release
//! hands the lock to the oldest waiter whose place is live inside its own transaction — the next
//! fence, that waiter's lease — and notifies the waiter's backend on its own channel at commit, so
//! the waiter holds at the notification, without another statement. grelmicro's processes on the
//! same name never find a handed-over lock free; their releases hand nothing over, and the
//! queue's head takes the lock at its next attempt.
//!
//! **Wake-ups.** A release with nobody queued announces itself with `NOTIFY tenure_released`
//! in the same statement, so at its commit. Once a waiter of this process waits on a name, the
//! backend LISTENs (before that waiter's attempt, so a release or hand-off after the attempt is
//! heard) and from then on wakes one lock waiter of this process (the longest waiting) or every
//! election follower per release. A process that never waits never listens. Releases that
//! announce nothing (grelmicro's, lease expiry) are noticed by polling at `retry_interval`. With
//! `notify=false` (a pooler in transaction mode) nothing is heard: waiters keep no place and
//! poll, and releases hand nothing over.
//!
//! **Connecting.** [`PostgresOptions::from_url`] reads `postgresql://user:password@host/db` (and
//! `postgres://`), libpq's `sslmode` (`prefer` by default; `verify-full` checks the chain and
//! the name against `sslrootcert` or the system's roots), `connect_timeout`, a Unix socket
//! directory as `host`, and Tenure's `command_timeout` and `statement_timeout`; passwords are
//! never shown. `tenure-open` reads grelmicro's `POSTGRES_*` variables.
//! A few connections (`connections`, 4 by default) carry the calls, pipelined; a name's calls
//! all go to one of them, in order, as the driver requires of calls made under one token, while
//! calls on different names commit side by side (the server flushes their commits together).
//! When a connection breaks (a server restart), the next call on it connects again within
//! `connect_timeout`, and every waiter looks again.
//!
//! **Runtimes.** The backend is handed its runtime when it opens (`tenure_tokio::Tokio`,
//! `tenure_smol::Smol`, `tenure_async_std::AsyncStd`, or a host's own [`Net`]): its sockets and
//! timers carry the connections, and each connection's reader runs as one of its tasks.
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use tenure::Coordination;
//! use tenure_postgres::PostgresBackend;
//!
//! let store = PostgresBackend::open("postgresql://app@127.0.0.1/app", tenure_tokio::Tokio::current()).await?;
//! let coordination = Coordination::new(tenure_tokio::Tokio::current()).source(&store);
//! let lock = coordination.lock("cart")?.build()?;
//! # Ok(()) }
//! ```

#![deny(missing_docs)]

mod batch;
mod connect;
mod details;
mod inspect;
mod open;
mod options;
mod queue;
mod record;
mod revoke;
mod rw;
mod sem;
mod sql;
mod tls;

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rustls::ClientConfig;
use tenure::backend::{
    BackendFuture, LeaderElectionOperations, LockOperations, ReadWriteLockBackend, ScheduleBackend, SemaphoreBackend,
    Wakeup,
};
use tenure::{Inspect, LeaderState, LockState, SharedState};
use tenure_core::{
    BackendError, BackendErrorKind, FencingToken, HolderDetails, LeaderRecord, Metadata, Revocation, RevokeReason,
    StoreReply,
};
pub use tenure_store::OpenError;
use tenure_store::record::{fence, metadata_json};
use tenure_store::{Entry, WaitQueues, Wake};

use connect::{Connected, Listener, Session};
pub use open::SCHEMES;
pub use options::{DEFAULT_COMMAND_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, DEFAULT_CONNECTIONS, PostgresOptions, SslMode};
use sql::Texts;
use tenure::net::{Net, within};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row, Statement};

/// A statement's answer to come.
pub(crate) type Query<'a, T> = std::pin::Pin<Box<dyn Future<Output = Result<T, tokio_postgres::Error>> + Send + 'a>>;

/// A lease store in a PostgreSQL database. Clones share its connections.
#[derive(Clone)]
pub struct PostgresBackend {
    inner: Arc<Inner>,
}

struct Inner {
    options: PostgresOptions,
    /// The runtime the backend was handed: sockets, timers, the readers' tasks.
    net: Arc<dyn Net>,
    texts: Texts,
    rw_texts: rw::Texts,
    sem_texts: sem::Texts,
    tls: Option<Arc<ClientConfig>>,
    /// The connections; a name's calls all go to the same one (so calls made under one token
    /// keep their order), and the first also LISTENs.
    links: Vec<Link>,
    closed: AtomicBool,
    queues: Arc<WaitQueues>,
    /// Readers' calls under way, gathered by name (see [`batch`]).
    batches: batch::Batches,
}

/// One connection.
struct Link {
    /// The session in use; `None` before the first and after [`PostgresBackend::close`].
    session: Mutex<Option<Arc<Session>>>,
    /// Held while connecting, so one caller connects and the others wait for it.
    connecting: tokio::sync::Mutex<()>,
}

impl PostgresBackend {
    /// Connects to the database at `url` (see [`PostgresOptions::from_url`]) with default
    /// options on `runtime`, creating the tables if needed.
    pub async fn open(url: &str, runtime: impl Net) -> Result<Self, OpenError> {
        PostgresOptions::from_url(url)?.open(runtime).await
    }

    /// The options it was opened with.
    pub fn options(&self) -> &PostgresOptions {
        &self.inner.options
    }

    /// The statements this backend prepares to acquire and to release a lock, as sent (for
    /// audits and benchmarks): `$1` is the name, `$2` the token, `$3` the lease in microseconds,
    /// and the acquire's `$4` the holder's details (text, or NULL for none).
    pub fn lock_statements(&self) -> (&str, &str) {
        (&self.inner.texts.lock_acquire, &self.inner.texts.lock_release)
    }

    /// Closes the connection. Calls made afterwards, through any clone, fail with
    /// [`BackendErrorKind::Closed`]. Leases need no cleanup: their expiry ends them.
    pub fn close(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        for link in &self.inner.links {
            link.session.lock().unwrap_or_else(PoisonError::into_inner).take();
        }
    }

    /// The session to run a call on `name` on: its connection's, connected again if it broke.
    async fn session(&self, name: &str) -> Result<Arc<Session>, BackendError> {
        self.session_for(name, None).await
    }

    /// The connection of the calls on `name` under `token`: one token's calls keep their order
    /// (one connection), and the holders of a read-write lock's or a semaphore's name spread
    /// over the connections, so readers and permits are served at once. A lock's calls, and
    /// calls without a token, go by the name alone.
    pub(crate) async fn session_for(&self, name: &str, token: Option<&str>) -> Result<Arc<Session>, BackendError> {
        let count = self.inner.links.len() as u64;
        let hash =
            tenure::backend::name_hash(name) ^ token.map_or(0, |t| tenure::backend::name_hash(t).rotate_left(17));
        let index = usize::try_from(hash % count).unwrap_or(0);
        self.session_at(index).await
    }

    async fn session_at(&self, index: usize) -> Result<Arc<Session>, BackendError> {
        let link = &self.inner.links[index];
        if let Some(session) = self.live_session(link)? {
            return Ok(session);
        }
        let _connecting = link.connecting.lock().await;
        if let Some(session) = self.live_session(link)? {
            return Ok(session);
        }
        let timeout = self.inner.options.connect_timeout;
        let listens = index == 0 && self.inner.options.notify;
        let dial = async { self.inner.prepare(self.inner.connect(listens).await?).await };
        let session = within(&*self.inner.net, timeout, dial).await.ok_or_else(|| {
            BackendError::new(
                BackendErrorKind::Timeout,
                format!("cannot connect to PostgreSQL at {} within {timeout:?}", self.inner.options.shown_url()),
            )
        })??;
        Ok(self.install(index, session))
    }

    /// Makes `session` the one of connection `index`.
    fn install(&self, index: usize, session: Session) -> Arc<Session> {
        let session = Arc::new(session);
        let replaced =
            self.inner.links[index].session.lock().unwrap_or_else(PoisonError::into_inner).replace(session.clone());
        if replaced.is_some() {
            tracing::info!(url = %self.inner.options.shown_url(), "connected to PostgreSQL again");
        }
        if index == 0 && self.inner.options.notify {
            // Releases made while no connection listened were heard by nobody: everyone looks again.
            self.inner.queues.wake_everyone();
        }
        session
    }

    fn live_session(&self, link: &Link) -> Result<Option<Arc<Session>>, BackendError> {
        if self.inner.closed.load(Ordering::SeqCst) {
            return Err(BackendError::new(BackendErrorKind::Closed, "the PostgreSQL backend is closed"));
        }
        let session = link.session.lock().unwrap_or_else(PoisonError::into_inner).clone();
        Ok(session.filter(|s| s.is_live()))
    }

    /// Before an attempt on `name`: if a waiter of this process is queued on it, the listening
    /// connection LISTENs first (once per connection), so that a release committed after the
    /// attempt is heard. Until someone waits, nothing listens, and releases signal no one here.
    /// A failure only costs the push (waiters poll), so it is logged, not returned.
    async fn listen_if_waited(&self, name: &str) {
        if !self.inner.options.notify || !self.inner.queues.names().get(name).is_some_and(Entry::is_waited_on) {
            return;
        }
        if let Err(e) = self.listen(name).await {
            tracing::debug!(name, error = %e, "cannot LISTEN for releases; polling instead");
        }
    }

    /// LISTENs on the listening connection (once per connection) for releases and this
    /// backend's grants.
    async fn listen(&self, name: &str) -> Result<(), BackendError> {
        let session = self.session_at(0).await?;
        self.bounded("LISTEN", name, connect::sent(session.listen(&self.inner.texts.listen))).await
    }

    /// Runs `statement` with `params` on a session within the command timeout, for at most one
    /// row; `what` of `name` names it in errors.
    async fn row(
        &self,
        what: &str,
        name: &str,
        statement: fn(&Session) -> &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, BackendError> {
        let session = self.session(name).await?;
        self.bounded(what, name, connect::sent(session.client.query_opt(statement(&session), params))).await
    }

    /// Awaits `query` within the command timeout. (Boxed: an `impl Future` of tokio-postgres
    /// borrowing its parameters defeats the compiler's proof that the caller's future is `Send`.)
    async fn bounded<T>(&self, what: &str, name: &str, query: Query<'_, T>) -> Result<T, BackendError> {
        let timeout = self.inner.options.command_timeout;
        match within(&*self.inner.net, timeout, query).await {
            Some(result) => result.map_err(|e| error(what, name, &e)),
            None => Err(BackendError::new(
                BackendErrorKind::Timeout,
                format!("{what} of {name} on PostgreSQL: no answer within {timeout:?}"),
            )),
        }
    }

    /// grelmicro's acquire; a refusal by a revocation's placeholder is answered `Revoked`.
    async fn lock_acquire(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        details: Option<&HolderDetails>,
    ) -> Result<StoreReply, BackendError> {
        let (micros, details) = (micros(lease), details.map(HolderDetails::as_str));
        self.listen_if_waited(name).await;
        let row = self.row("lock acquire", name, |s| &s.lock_acquire, &[&name, &token, &micros, &details]).await?;
        acquired(name, row.as_ref())
    }

    /// A queued acquire (see [`queue`]): the listening connection LISTENs first, so that a
    /// hand-off committed after the attempt is heard; if it cannot, the attempt is a plain one
    /// (which keeps no place, and the waiter polls).
    async fn lock_acquire_queued(
        &self,
        name: &str,
        token: &str,
        (lease, wait): (Duration, Duration),
        details: Option<&HolderDetails>,
    ) -> Result<StoreReply, BackendError> {
        if let Err(e) = self.listen(name).await {
            tracing::debug!(name, error = %e, "cannot LISTEN for hand-offs; polling instead");
            return self.lock_acquire(name, token, lease, details).await;
        }
        let (micros, wait) = (micros(lease), self::micros(wait));
        let route = self.inner.texts.grant_channel.as_str();
        let details = details.map(HolderDetails::as_str);
        let params: [&(dyn ToSql + Sync); 6] = [&name, &token, &micros, &wait, &route, &details];
        let row = self.row("lock acquire", name, |s| &s.lock_acquire_queued, &params).await?;
        acquired(name, row.as_ref())
    }

    /// A release: true iff `token` held a live lease (a lock, or a leader record if not `lock`).
    async fn release_by(&self, what: &str, name: &str, token: &str, lock: bool) -> Result<bool, BackendError> {
        let statement: fn(&Session) -> &Statement = if lock { |s| &s.lock_release } else { |s| &s.leader_release };
        let row = self.row(what, name, statement, &[&name, &token]).await?;
        let released: i64 = row.map(|r| record::column(&r, 0, name, "release count")).transpose()?.unwrap_or(0);
        Ok(released > 0)
    }

    async fn lock_locked(&self, name: &str) -> Result<bool, BackendError> {
        Ok(self.row("lock locked", name, |s| &s.lock_locked, &[&name]).await?.is_some())
    }

    async fn lock_owned(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        Ok(self.row("lock owned", name, |s| &s.lock_owned, &[&name, &token]).await?.is_some())
    }

    async fn leader_acquire_or_renew(
        &self,
        name: &str,
        token: &str,
        (lease, metadata): (Duration, &Metadata),
        details: Option<&HolderDetails>,
    ) -> Result<LeaderRecord, BackendError> {
        let (micros, json, details) = (micros(lease), metadata_json(metadata), details.map(HolderDetails::as_str));
        let what = "leader acquire_or_renew";
        self.listen_if_waited(name).await;
        let params: [&(dyn ToSql + Sync); 5] = [&name, &token, &micros, &json, &details];
        let row = self.row(what, name, |s| &s.leader_acquire, &params).await?;
        let row = row.ok_or_else(|| {
            BackendError::new(BackendErrorKind::Protocol, format!("{what} of {name}: the function returned no row"))
        })?;
        record::leader(&row, 0, name)
    }

    async fn leader_get(&self, name: &str) -> Result<Option<LeaderRecord>, BackendError> {
        let row = self.row("leader get", name, |s| &s.leader_get, &[&name]).await?;
        row.map(|r| record::leader(&r, 0, name)).transpose()
    }

    async fn schedule_claim(&self, name: &str, due: f64) -> Result<bool, BackendError> {
        if !due.is_finite() {
            return Err(BackendError::new(
                BackendErrorKind::Rejected,
                format!("schedule due {due} is not a finite time"),
            ));
        }
        Ok(self.row("schedule claim", name, |s| &s.schedule_claim, &[&name, &due]).await?.is_some())
    }

    async fn schedule_last_fired(&self, name: &str) -> Result<Option<f64>, BackendError> {
        let row = self.row("schedule last_fired", name, |s| &s.schedule_last_fired, &[&name]).await?;
        row.map(|r| record::column::<f64>(&r, 0, name, "last_fired")).transpose()
    }
}

impl Inner {
    /// Connects; if the connection `listens` (once asked to, see
    /// [`PostgresBackend::listen_if_waited`]), its reader wakes this backend's waiters.
    async fn connect(self: &Arc<Self>, listens: bool) -> Result<Connected, BackendError> {
        let queues = if listens { Arc::downgrade(&self.queues) } else { std::sync::Weak::new() };
        let prefixes = [
            format!("{}:", self.options.lock_table),
            format!("{}:", self.options.leader_table),
            format!("{}:", self.options.rwlock_table),
            format!("{}:", self.options.semaphore_table),
        ];
        let grants = self.texts.grant_channel.clone();
        let listener: Listener = Arc::new(move |message| {
            let Some(queues) = queues.upgrade() else { return };
            match message {
                Some((channel, payload)) if channel == grants => match tenure_store::grant(payload.as_bytes()) {
                    Ok((name, token, fence)) => {
                        if !queues.granted(&name, &token, fence) {
                            tracing::debug!(name, fence = fence.get(), "a hand-off reached no waiter here");
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "ignoring a hand-off notification"),
                },
                Some((_, payload)) => {
                    if let Some(name) = prefixes.iter().find_map(|p| payload.strip_prefix(p.as_str())) {
                        queues.released(name);
                    }
                }
                // The connection ended: releases may go unheard until the next one listens.
                None => queues.wake_everyone(),
            }
        });
        connect::connect(&*self.net, &self.options, self.tls.as_ref(), listener).await
    }

    /// Prepares the statements on `client`.
    async fn prepare(&self, connected: Connected) -> Result<Session, BackendError> {
        connect::prepare(connected, &self.texts).await.map_err(|e| {
            BackendError::new(
                kind(&e),
                format!("cannot prepare Tenure's statements on {}: {}", self.options.shown_url(), describe(&e)),
            )
        })
    }
}

impl PostgresOptions {
    /// Connects on `runtime` (its sockets and timers; the connections' readers run as its
    /// tasks): validates the options, connects within the connect timeout, creates or upgrades
    /// the tables, and prepares the statements.
    pub async fn open(self, runtime: impl Net) -> Result<PostgresBackend, OpenError> {
        self.validate()?;
        // rustls needs a process-wide crypto provider; keep the application's if it set one.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let tls = tls::client_config(&self)?;
        let connections = self.connections;
        let inner = Arc::new(Inner {
            net: Arc::new(runtime),
            texts: Texts::new(&self, &tenure_store::route_id()),
            rw_texts: rw::Texts::new(&self.rwlock_table, self.notify),
            sem_texts: sem::Texts::new(&self.semaphore_table, self.notify),
            tls,
            options: self,
            links: (0..connections)
                .map(|_| Link { session: Mutex::new(None), connecting: tokio::sync::Mutex::new(()) })
                .collect(),
            closed: AtomicBool::new(false),
            queues: Arc::new(WaitQueues::new()),
            batches: batch::Batches::default(),
        });
        let backend = PostgresBackend { inner };
        // The first connection creates the tables, then prepares its statements on them.
        let inner = &backend.inner;
        let timeout = inner.options.connect_timeout;
        let opening = async {
            let connected = inner.connect(inner.options.notify).await?;
            migrate(&inner.options, &connected.client).await?;
            inner.prepare(connected).await
        };
        let session = within(&*inner.net, timeout, opening).await.ok_or_else(|| {
            BackendError::new(
                BackendErrorKind::Timeout,
                format!(
                    "cannot connect to PostgreSQL at {} and prepare its tables within {timeout:?}",
                    inner.options.shown_url()
                ),
            )
        })??;
        backend.install(0, session);
        Ok(backend)
    }
}

/// Creates the tables (and the leader function) on `client` if they are missing, as grelmicro
/// 0.44 does.
async fn migrate(options: &PostgresOptions, client: &Client) -> Result<(), BackendError> {
    let failed = |e: &tokio_postgres::Error| {
        BackendError::new(kind(e), format!("cannot create Tenure's tables at {}: {}", options.shown_url(), describe(e)))
    };
    let lock_table = sql::lock_schema(&options.lock_table);
    if let Err(e) = client.batch_execute(&lock_table).await {
        if e.code() == Some(&tokio_postgres::error::SqlState::LOCK_NOT_AVAILABLE) {
            tracing::warn!(
                table = %options.lock_table,
                "the lock table keeps its TIMESTAMP expiry column: its table lock was not granted within 2 s; \
                 the next start tries again"
            );
            client.batch_execute(sql::CONVERT_FAILED).await.map_err(|e| failed(&e))?;
        } else {
            let _ = client.batch_execute("ROLLBACK").await;
            return Err(failed(&e));
        }
    }
    let schemas = [
        queue::schema(&options.lock_table),
        sql::leader_schema(&options.leader_table),
        sql::schedule_schema(&options.schedule_table),
        rw::schema(&options.rwlock_table),
        sem::schema(&options.semaphore_table),
    ];
    for schema in schemas {
        if let Err(e) = client.batch_execute(&schema).await {
            let _ = client.batch_execute("ROLLBACK").await;
            return Err(failed(&e));
        }
    }
    Ok(())
}

/// A lease in whole microseconds, rounded up and never zero.
fn micros(lease: Duration) -> i64 {
    i64::try_from(tenure_core::time::ceil_micros(lease).max(1)).unwrap_or(i64::MAX)
}

/// What kind of failure `e` is.
fn kind(e: &tokio_postgres::Error) -> BackendErrorKind {
    use tokio_postgres::error::SqlState;
    let Some(code) = e.code() else {
        return if e.is_closed() || std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>()) {
            BackendErrorKind::Unavailable
        } else if e.to_string().contains("error deserializing") {
            BackendErrorKind::MalformedRecord
        } else {
            BackendErrorKind::Other
        };
    };
    let class = &code.code()[..2];
    if *code == SqlState::QUERY_CANCELED {
        BackendErrorKind::Timeout
    } else if matches!(class, "08" | "53" | "57" | "58") || *code == SqlState::READ_ONLY_SQL_TRANSACTION {
        // Connection trouble, resources, shutdown, a standby: another server or a later try may do.
        BackendErrorKind::Unavailable
    } else if class == "22" {
        BackendErrorKind::MalformedRecord
    } else {
        BackendErrorKind::Rejected
    }
}

/// `e` with its cause: tokio-postgres puts the server's message in the source.
pub(crate) fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {} ({})", db.severity(), db.message(), db.code().code()),
        None => match std::error::Error::source(e) {
            Some(source) => format!("{e}: {source}"),
            None => e.to_string(),
        },
    }
}

/// The backend error for `e`, raised by `what` on `name`.
fn error(what: &str, name: &str, e: &tokio_postgres::Error) -> BackendError {
    BackendError::new(kind(e), format!("{what} of {name} on PostgreSQL: {}", describe(e)))
}

impl std::fmt::Debug for PostgresBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresBackend")
            .field("url", &self.inner.options.shown_url())
            .field("lock_table", &self.inner.options.lock_table)
            .finish_non_exhaustive()
    }
}

/// An acquire's row: `(fence, NULL)` granted, `(NULL, placeholder)` refused by a revocation's
/// placeholder, none refused.
fn acquired(name: &str, row: Option<&Row>) -> Result<StoreReply, BackendError> {
    let Some(row) = row else { return Ok(StoreReply::Fence(None)) };
    let granted: Option<i64> = record::column(row, 0, name, "fence")?;
    match granted {
        Some(f) => Ok(StoreReply::Fence(Some(fence(name, f)?))),
        None => Ok(tenure::backend::refused(record::column::<Option<String>>(row, 1, name, "token")?.as_deref())),
    }
}

impl LockOperations for PostgresBackend {
    fn lock_state(&self, key: &str) -> Option<tenure::backend::BackendFuture<'static, Option<tenure::LockState>>> {
        tenure::backend::state_of(self, key)
    }

    fn acquire(
        &self,
        name: &str,
        token: &str,
        duration: Duration,
    ) -> impl Future<Output = Result<Option<FencingToken>, BackendError>> + Send {
        let answer = self.lock_acquire(name, token, duration, None);
        async move { tenure::backend::granted(answer.await?) }
    }

    fn acquire_answer(
        &self,
        name: &str,
        token: &str,
        duration: Duration,
        details: Option<&HolderDetails>,
    ) -> impl Future<Output = Result<StoreReply, BackendError>> + Send {
        self.lock_acquire(name, token, duration, details)
    }

    fn acquire_queued_answer(
        &self,
        name: &str,
        token: &str,
        lease_wait: (Duration, Duration),
        details: Option<&HolderDetails>,
    ) -> impl Future<Output = Result<StoreReply, BackendError>> + Send {
        self.lock_acquire_queued(name, token, lease_wait, details)
    }

    fn revoke(
        &self,
        name: &str,
        reason: &RevokeReason,
    ) -> impl Future<Output = Result<Option<Revocation>, BackendError>> + Send {
        self.lock_revoke(name, reason)
    }

    fn release(&self, name: &str, token: &str) -> impl Future<Output = Result<bool, BackendError>> + Send {
        self.release_by("lock release", name, token, true)
    }

    fn locked(&self, name: &str) -> impl Future<Output = Result<bool, BackendError>> + Send {
        self.lock_locked(name)
    }

    fn owned(&self, name: &str, token: &str) -> impl Future<Output = Result<bool, BackendError>> + Send {
        self.lock_owned(name, token)
    }

    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        self.inner.options.notify.then(|| self.inner.queues.wakeup(name, Wake::One))
    }

    fn acquire_queued(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        wait: Duration,
    ) -> impl Future<Output = Result<Option<FencingToken>, BackendError>> + Send {
        let answer = self.lock_acquire_queued(name, token, (lease, wait), None);
        async move { tenure::backend::granted(answer.await?) }
    }

    fn turn(&self, name: &str, token: &str) -> Option<Wakeup> {
        self.inner.options.notify.then(|| self.inner.queues.turn(name, token))
    }

    fn take_grant(&self, name: &str, token: &str) -> Option<FencingToken> {
        self.inner.queues.take_grant(name, token)
    }

    fn read_write(&self) -> Option<Arc<dyn ReadWriteLockBackend>> {
        Some(Arc::new(self.clone()))
    }

    fn semaphore(&self) -> Option<Arc<dyn SemaphoreBackend>> {
        Some(Arc::new(self.clone()))
    }
}

impl LeaderElectionOperations for PostgresBackend {
    fn acquire_or_renew(
        &self,
        name: &str,
        token: &str,
        duration: Duration,
        metadata: &Metadata,
    ) -> impl Future<Output = Result<LeaderRecord, BackendError>> + Send {
        self.leader_acquire_or_renew(name, token, (duration, metadata), None)
    }

    fn acquire_or_renew_with_details(
        &self,
        name: &str,
        token: &str,
        asked: (Duration, &Metadata),
        details: Option<&HolderDetails>,
    ) -> impl Future<Output = Result<LeaderRecord, BackendError>> + Send {
        self.leader_acquire_or_renew(name, token, asked, details)
    }

    fn release(&self, name: &str, token: &str) -> impl Future<Output = Result<bool, BackendError>> + Send {
        self.release_by("leader release", name, token, false)
    }

    fn get(&self, name: &str) -> impl Future<Output = Result<Option<LeaderRecord>, BackendError>> + Send {
        self.leader_get(name)
    }

    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        self.inner.options.notify.then(|| self.inner.queues.wakeup(name, Wake::All))
    }
}

impl ScheduleBackend for PostgresBackend {
    fn claim<'a>(&'a self, name: &'a str, due: f64) -> BackendFuture<'a, bool> {
        Box::pin(self.schedule_claim(name, due))
    }

    fn last_fired<'a>(&'a self, name: &'a str) -> BackendFuture<'a, Option<f64>> {
        Box::pin(self.schedule_last_fired(name))
    }
}

impl Inspect for PostgresBackend {
    fn lock_states(&self, keys: Vec<String>) -> BackendFuture<'static, Vec<LockState>> {
        let this = self.clone();
        Box::pin(async move { this.inspect_locks(keys).await })
    }

    fn leader_states(&self, keys: Vec<String>) -> BackendFuture<'static, Vec<LeaderState>> {
        let this = self.clone();
        Box::pin(async move { this.inspect_leaders(keys).await })
    }

    fn shared_states(&self, keys: Vec<String>) -> BackendFuture<'static, Vec<SharedState>> {
        let this = self.clone();
        Box::pin(async move { this.inspect_shared(keys).await })
    }
}
