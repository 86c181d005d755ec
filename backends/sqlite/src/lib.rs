//! # tenure-sqlite
//!
//! Tenure's embedded default store: locks with fencing tokens, leader elections and schedule
//! claims in one SQLite file, shared by every process on the host that opens it.
//!
//! The layout is grelmicro 0.44's — tables `locks(name, token, expire_at, fence)`,
//! `grelmicro_leader_election(name, holder, lease_ms, acquired_at, renewed_at, expire_at,
//! transitions, metadata)`, `schedules(name, last_fired)` and, for read-write locks,
//! `rwlocks(name, writer, writer_expire_at, generation)` with
//! `rwlocks_holders(name, token, kind, expire_at)`, times as UTC text to the
//! millisecond — so grelmicro services and Tenure services coordinate on the same file.
//! Semaphores, which grelmicro lacks, keep Tenure's own tables `semaphores(name, permits, fence,
//! arrivals)` and `semaphores_holders(name, token, kind, seq, expire_at)`.
//!
//! - One connection per backend on its own thread: calls run in the order they were made (the
//!   ordering the driver requires), and no async runtime is needed or assumed.
//! - WAL journal; every write in `BEGIN IMMEDIATE`, waiting up to the busy timeout (5 s) for
//!   another process; the store's instant is read once the write lock is held.
//! - Leases to the millisecond (rounded up, never zero); a lock is live through its expiry
//!   instant, a leader record expired at it (grelmicro's boundaries).
//! - Fencing counters are kept in the file: they survive release, expiry and restarts.
//! - On close (or when the last handle drops) expired leases are vacated, counters kept.
//! - A release wakes this process's waiters at once; other processes notice within their
//!   `retry_interval`.
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use tenure::Coordination;
//! use tenure_sqlite::SqliteBackend;
//!
//! let store = SqliteBackend::open("/var/lib/app/locks.db").await?;
//! let coordination = Coordination::new(tenure_tokio::Tokio::current()).source(&store);
//! let lock = coordination.lock("cart")?.build()?;
//! # Ok(()) }
//! ```

#![deny(missing_docs)]

mod db;
mod open;
mod options;
mod time;

use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use futures_channel::oneshot;
use tenure::backend::{
    BackendFuture, LeaderElectionOperations, LockOperations, ReadWriteLockBackend, ReadWriteOperations, ReleaseSignals,
    ScheduleBackend, SemaphoreBackend, SemaphoreOperations, Wakeup,
};
use tenure::{Inspect, LeaderState, LockState, SharedState};
use tenure_core::{
    BackendError, BackendErrorKind, FencingToken, HolderDetails, LeaderRecord, Metadata, PermitAnswer, Revocation,
    RevokeReason, RwState, SemState, StoreReply, WriteGrant,
};
pub use tenure_store::OpenError;

use db::Db;
pub use open::SCHEMES;
pub use options::{DEFAULT_BUSY_TIMEOUT, SqliteOptions, Synchronous};

/// A job for the connection's thread.
type Job = Box<dyn FnOnce(&mut Db) -> After + Send>;

/// What the connection's thread does after a job.
enum After {
    /// Serves the next job.
    Continue,
    /// Closes the connection, then runs this (the close's answer: its caller may reopen the
    /// file at once, and finds no descriptor of this connection left).
    Stop(Box<dyn FnOnce() + Send>),
}

/// A lease store in one SQLite file. Clones share one connection.
#[derive(Clone)]
pub struct SqliteBackend {
    inner: Arc<Inner>,
}

struct Inner {
    jobs: mpsc::Sender<Job>,
    released: ReleaseSignals,
    options: SqliteOptions,
}

impl SqliteBackend {
    /// Opens (creating if needed) the store in the file at `path` with the default options.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, OpenError> {
        SqliteOptions::new(path).open().await
    }

    /// The options it was opened with.
    pub fn options(&self) -> &SqliteOptions {
        &self.inner.options
    }

    /// Vacates expired leases (fencing counters kept) and closes the connection. Calls made
    /// afterwards, through any clone, fail with [`BackendErrorKind::Closed`]. Dropping the last
    /// clone does the same without waiting.
    pub async fn close(&self) -> Result<(), BackendError> {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |db| {
            let vacated = db.lock_vacate_expired().map(drop);
            After::Stop(Box::new(move || drop(tx.send(vacated))))
        });
        if self.inner.jobs.send(job).is_err() {
            return Ok(()); // already closed
        }
        rx.await.unwrap_or(Ok(()))
    }

    /// Runs `f` on the connection's thread, after every call made before it.
    fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Db) -> Result<T, BackendError> + Send + 'static,
    ) -> BackendFuture<'static, T> {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |db| {
            let _ = tx.send(f(db));
            After::Continue
        });
        let sent = self.inner.jobs.send(job).is_ok();
        Box::pin(async move {
            if !sent {
                return Err(closed());
            }
            rx.await.unwrap_or_else(|_| Err(closed()))
        })
    }

    fn released(&self, name: &str, released: BackendFuture<'static, bool>) -> BackendFuture<'static, bool> {
        let this = self.clone();
        let name = name.to_owned();
        Box::pin(async move {
            let released = released.await;
            if released == Ok(true) {
                this.inner.released.ring(&name);
            }
            released
        })
    }
}

impl SqliteOptions {
    /// Opens the store: validates the options, opens the file on the backend's own thread,
    /// switches it to WAL and creates missing tables.
    pub async fn open(self) -> Result<SqliteBackend, OpenError> {
        self.validate()?;
        let (ready_tx, ready_rx) = oneshot::channel();
        let (jobs, queue) = mpsc::channel::<Job>();
        let thread_options = self.clone();
        std::thread::Builder::new()
            .name("tenure-sqlite".into())
            .spawn(move || serve(&thread_options, ready_tx, &queue))
            .map_err(|e| BackendError::new(BackendErrorKind::Other, format!("cannot start the SQLite thread: {e}")))?;
        let opened = ready_rx.await.unwrap_or_else(|_| {
            Err(BackendError::new(BackendErrorKind::Other, "the SQLite thread stopped while opening"))
        });
        opened?;
        Ok(SqliteBackend { inner: Arc::new(Inner { jobs, released: ReleaseSignals::new(), options: self }) })
    }

    /// [`SqliteOptions::open`] for code without an async runtime.
    pub fn open_blocking(self) -> Result<SqliteBackend, OpenError> {
        futures_lite::future::block_on(self.open())
    }
}

/// The connection's thread: opens, reports, then runs jobs in order until closed or dropped.
fn serve(options: &SqliteOptions, ready: oneshot::Sender<Result<(), BackendError>>, queue: &mpsc::Receiver<Job>) {
    let mut db = match Db::open(options) {
        Ok(db) => db,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let _ = ready.send(Ok(()));
    while let Ok(job) = queue.recv() {
        if let After::Stop(then) = job(&mut db) {
            drop(db);
            then();
            return;
        }
    }
    // Every handle dropped without close(): vacate on the way out, as close() does.
    if let Err(e) = db.lock_vacate_expired() {
        tracing::warn!(path = %options.path().display(), error = %e, "could not vacate expired SQLite leases on close");
    }
}

fn closed() -> BackendError {
    BackendError::new(BackendErrorKind::Closed, "the SQLite backend is closed")
}

impl std::fmt::Debug for SqliteBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteBackend").field("path", &self.inner.options.path()).finish_non_exhaustive()
    }
}

impl LockOperations for SqliteBackend {
    fn lock_state(&self, key: &str) -> Option<tenure::backend::BackendFuture<'static, Option<tenure::LockState>>> {
        tenure::backend::state_of(self, key)
    }

    fn acquire(
        &self,
        name: &str,
        token: &str,
        duration: Duration,
    ) -> impl Future<Output = Result<Option<FencingToken>, BackendError>> + Send {
        let (name, token) = (name.to_owned(), token.to_owned());
        self.call(move |db| db.lock_acquire(&name, &token, duration))
    }

    fn acquire_answer(
        &self,
        name: &str,
        token: &str,
        duration: Duration,
        details: Option<&HolderDetails>,
    ) -> impl Future<Output = Result<StoreReply, BackendError>> + Send {
        let (name, token, details) = (name.to_owned(), token.to_owned(), details.cloned());
        self.call(move |db| db.lock_acquire_answer(&name, &token, duration, details.as_ref()))
    }

    /// (SQLite keeps no queue: a queued acquire is a plain one)
    fn acquire_queued_answer(
        &self,
        name: &str,
        token: &str,
        (duration, _wait): (Duration, Duration),
        details: Option<&HolderDetails>,
    ) -> impl Future<Output = Result<StoreReply, BackendError>> + Send {
        self.acquire_answer(name, token, duration, details)
    }

    fn revoke(
        &self,
        name: &str,
        reason: &RevokeReason,
    ) -> impl Future<Output = Result<Option<Revocation>, BackendError>> + Send {
        let (name, reason) = (name.to_owned(), reason.clone());
        self.call(move |db| db.lock_revoke(&name, &reason))
    }

    fn release(&self, name: &str, token: &str) -> impl Future<Output = Result<bool, BackendError>> + Send {
        let (owned_name, token) = (name.to_owned(), token.to_owned());
        self.released(name, self.call(move |db| db.lock_release(&owned_name, &token)))
    }

    fn locked(&self, name: &str) -> impl Future<Output = Result<bool, BackendError>> + Send {
        let name = name.to_owned();
        self.call(move |db| db.lock_locked(&name))
    }

    fn owned(&self, name: &str, token: &str) -> impl Future<Output = Result<bool, BackendError>> + Send {
        let (name, token) = (name.to_owned(), token.to_owned());
        self.call(move |db| db.lock_owned(&name, &token))
    }

    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        Some(self.inner.released.ticket(name))
    }

    fn read_write(&self) -> Option<Arc<dyn ReadWriteLockBackend>> {
        Some(Arc::new(self.clone()))
    }

    fn semaphore(&self) -> Option<Arc<dyn SemaphoreBackend>> {
        Some(Arc::new(self.clone()))
    }
}

impl SemaphoreOperations for SqliteBackend {
    fn acquire(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        permits: u32,
        wait: Option<Duration>,
    ) -> impl Future<Output = Result<PermitAnswer, BackendError>> + Send {
        self.acquire_with_details(name, token, (lease, permits, wait), None)
    }

    fn acquire_with_details(
        &self,
        name: &str,
        token: &str,
        asked: (Duration, u32, Option<Duration>),
        details: Option<&HolderDetails>,
    ) -> impl Future<Output = Result<PermitAnswer, BackendError>> + Send {
        let (name, token, details) = (name.to_owned(), token.to_owned(), details.cloned());
        self.call(move |db| db.sem_acquire(&name, &token, asked, details.as_ref()))
    }

    fn release(&self, name: &str, token: &str) -> impl Future<Output = Result<bool, BackendError>> + Send {
        let (this, name, token) = (self.clone(), name.to_owned(), token.to_owned());
        let owned_name = name.clone();
        let released = self.call(move |db| db.sem_release(&owned_name, &token));
        async move {
            let (released, wake) = released.await?;
            if wake {
                this.inner.released.ring(&name);
            }
            Ok(released)
        }
    }

    fn owned(&self, name: &str, token: &str) -> impl Future<Output = Result<bool, BackendError>> + Send {
        let (name, token) = (name.to_owned(), token.to_owned());
        self.call(move |db| db.sem_owned(&name, &token))
    }

    fn state(&self, name: &str) -> impl Future<Output = Result<SemState, BackendError>> + Send {
        let name = name.to_owned();
        self.call(move |db| db.sem_state(&name))
    }

    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        Some(self.inner.released.ticket(name))
    }
}

impl ReadWriteOperations for SqliteBackend {
    fn acquire_read(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
    ) -> impl Future<Output = Result<Option<FencingToken>, BackendError>> + Send {
        self.acquire_read_with_details(name, token, lease, None)
    }

    fn acquire_read_with_details(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        details: Option<&HolderDetails>,
    ) -> impl Future<Output = Result<Option<FencingToken>, BackendError>> + Send {
        let (name, token, details) = (name.to_owned(), token.to_owned(), details.cloned());
        self.call(move |db| db.rw_acquire_read(&name, &token, lease, details.as_ref()))
    }

    fn acquire_write(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        intent: bool,
    ) -> impl Future<Output = Result<Option<WriteGrant>, BackendError>> + Send {
        self.acquire_write_with_details(name, token, (lease, intent), None)
    }

    fn acquire_write_with_details(
        &self,
        name: &str,
        token: &str,
        asked: (Duration, bool),
        details: Option<&HolderDetails>,
    ) -> impl Future<Output = Result<Option<WriteGrant>, BackendError>> + Send {
        let (name, token, details) = (name.to_owned(), token.to_owned(), details.cloned());
        self.call(move |db| db.rw_acquire_write(&name, &token, asked, details.as_ref()))
    }

    fn release_read(&self, name: &str, token: &str) -> impl Future<Output = Result<bool, BackendError>> + Send {
        let (owned_name, token) = (name.to_owned(), token.to_owned());
        self.released(name, self.call(move |db| db.rw_release_read(&owned_name, &token)))
    }

    fn release_write(&self, name: &str, token: &str) -> impl Future<Output = Result<bool, BackendError>> + Send {
        let (owned_name, token) = (name.to_owned(), token.to_owned());
        self.released(name, self.call(move |db| db.rw_release_write(&owned_name, &token)))
    }

    fn cancel_intent(&self, name: &str, token: &str) -> impl Future<Output = Result<bool, BackendError>> + Send {
        let (owned_name, token) = (name.to_owned(), token.to_owned());
        self.released(name, self.call(move |db| db.rw_cancel_intent(&owned_name, &token)))
    }

    fn downgrade(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
    ) -> impl Future<Output = Result<Option<FencingToken>, BackendError>> + Send {
        let (name, token) = (name.to_owned(), token.to_owned());
        let this = self.clone();
        let downgraded = self.call({
            let name = name.clone();
            move |db| db.rw_downgrade(&name, &token, lease)
        });
        async move {
            let downgraded = downgraded.await;
            if matches!(downgraded, Ok(Some(_))) {
                this.inner.released.ring(&name); // waiting readers may read now
            }
            downgraded
        }
    }

    fn state(&self, name: &str) -> impl Future<Output = Result<RwState, BackendError>> + Send {
        let name = name.to_owned();
        self.call(move |db| db.rw_state(&name))
    }

    fn owned_read(&self, name: &str, token: &str) -> impl Future<Output = Result<bool, BackendError>> + Send {
        let (name, token) = (name.to_owned(), token.to_owned());
        self.call(move |db| db.rw_owned_read(&name, &token))
    }

    fn owned_write(&self, name: &str, token: &str) -> impl Future<Output = Result<bool, BackendError>> + Send {
        let (name, token) = (name.to_owned(), token.to_owned());
        self.call(move |db| db.rw_owned_write(&name, &token))
    }

    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        Some(self.inner.released.ticket(name))
    }
}

impl LeaderElectionOperations for SqliteBackend {
    fn acquire_or_renew(
        &self,
        name: &str,
        token: &str,
        duration: Duration,
        metadata: &Metadata,
    ) -> impl Future<Output = Result<LeaderRecord, BackendError>> + Send {
        self.acquire_or_renew_with_details(name, token, (duration, metadata), None)
    }

    fn acquire_or_renew_with_details(
        &self,
        name: &str,
        token: &str,
        (duration, metadata): (Duration, &Metadata),
        details: Option<&HolderDetails>,
    ) -> impl Future<Output = Result<LeaderRecord, BackendError>> + Send {
        let (name, token, metadata, details) = (name.to_owned(), token.to_owned(), metadata.clone(), details.cloned());
        self.call(move |db| db.leader_acquire_or_renew(&name, &token, (duration, &metadata), details.as_ref()))
    }

    fn release(&self, name: &str, token: &str) -> impl Future<Output = Result<bool, BackendError>> + Send {
        let (owned_name, token) = (name.to_owned(), token.to_owned());
        self.released(name, self.call(move |db| db.leader_release(&owned_name, &token)))
    }

    fn get(&self, name: &str) -> impl Future<Output = Result<Option<LeaderRecord>, BackendError>> + Send {
        let name = name.to_owned();
        self.call(move |db| db.leader_get(&name))
    }

    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        Some(self.inner.released.ticket(name))
    }
}

impl ScheduleBackend for SqliteBackend {
    fn claim<'a>(&'a self, name: &'a str, due: f64) -> BackendFuture<'a, bool> {
        let name = name.to_owned();
        self.call(move |db| db.schedule_claim(&name, due))
    }

    fn last_fired<'a>(&'a self, name: &'a str) -> BackendFuture<'a, Option<f64>> {
        let name = name.to_owned();
        self.call(move |db| db.schedule_last_fired(&name))
    }
}

impl Inspect for SqliteBackend {
    fn lock_states(&self, keys: Vec<String>) -> BackendFuture<'static, Vec<LockState>> {
        self.call(move |db| db.lock_states(&keys))
    }

    fn leader_states(&self, keys: Vec<String>) -> BackendFuture<'static, Vec<LeaderState>> {
        self.call(move |db| db.leader_states(&keys))
    }

    fn shared_states(&self, keys: Vec<String>) -> BackendFuture<'static, Vec<SharedState>> {
        self.call(move |db| db.shared_states(&keys))
    }
}
