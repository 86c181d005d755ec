//! # tenure-redis
//!
//! Tenure's Redis store: locks with fencing tokens, leader elections and schedule claims on a
//! Redis (6 or later) or Valkey server or cluster, shared by every process that reaches it.
//!
//! The layout is grelmicro 0.44's, so grelmicro services and Tenure services coordinate on the
//! same names:
//!
//! - a lock is the string `lock:<name>` (`tasklock:<name>`) = `"<fence>:<token>"` with a TTL in
//!   whole milliseconds, rounded up and never zero; its fencing counter is `fence:lock:<name>`,
//!   which never expires and is never deleted, so tokens keep climbing across releases;
//! - a leader record is the hash `le_us:leader:<name>` with integer-microsecond fields, judged
//!   live by the server's clock (`TIME`), never the client's;
//! - a schedule claim is the string `<name>` holding the last fired epoch.
//!
//! Read-write locks keep grelmicro 0.44's hash and sorted sets (`rwlock:<name>`, `…:r`, `…:i`);
//! semaphores, which grelmicro lacks, keep Tenure's own (`semaphore:<name>` with `…:h`, `…:hf`,
//! `…:w`, `…:we`: holders by expiry with their fencing tokens, waiters by arrival).
//!
//! Every decision runs in one Lua script, loaded once and called by hash.
//!
//! **Fair turns, handed over in the store.** A waiting `acquire` keeps a place in the name's
//! queue (`queue:<name>`, `queue-places:<name>`; a place lasts three pauses between attempts,
//! 100 ms to 2 s, and the waiter renews it at each attempt). A release hands the lock to the
//! oldest waiter whose place is live inside the same script — the next fence, that waiter's
//! lease — and publishes the grant on the waiter's backend's channel, so the waiter holds at the
//! push, without another round trip (counting its lease from its first attempt the store answered "queued", DESIGN §4.1). A
//! waiter that vanished is skipped once its place lapses. grelmicro's processes on the same name
//! never find a handed-over lock free; their releases hand nothing over, and the queue's head
//! takes the lock at its next attempt.
//!
//! A release with nobody queued publishes on `tenure:released:<name>`, for waiters that do not
//! queue ([`tenure::backend::LockBackend::wakeup`]'s, older Tenure processes'): such a waiter
//! subscribes (on the same connection, before the attempt that fails) and retries at once, with
//! `retry_interval` polling as the fallback for releases that publish nothing (grelmicro's, lease
//! expiry). A queued waiter does not subscribe to it: the store hands it the lock. Such a release wakes one lock waiter per process — the longest waiting; the others
//! would only be refused — and every election follower.
//!
//! Connections are RESP3, reconnect after a server restart (subscriptions restored, every waiter
//! woken to look again), and every command is bounded by the command timeout.
//!
//! **Connecting.** [`RedisOptions::from_url`] reads `redis://[user:password@]host:6379/0`,
//! `rediss://` (TLS, trusting the system's roots, or `?tls_root_cert=/path/ca.pem`; `#insecure`
//! skips the check, for tests only), `redis+unix:///path.sock`, and Tenure's own parameters
//! `prefix`, `connect_timeout` and `command_timeout` (seconds, default 5). Passwords are never
//! shown in errors or `Debug` output. `tenure-open` reads grelmicro's variables (`REDIS_URL`,
//! or `REDIS_HOST`/`PORT`/`DB`/`PASSWORD`), so both share one configuration.
//! The connection speaks RESP3, so the server must be Redis 6
//! or later (or Valkey). One multiplexed connection per backend carries every call in order, as
//! the driver requires of calls made under one token.
//!
//! **Durability.** Fencing tokens only increase as long as the server keeps the `fence:` keys:
//! run Redis with `appendonly yes` and `appendfsync always` where a crash must not lose a fence
//! (the fault tests run so). A failover to a replica that missed the last `INCR` can repeat a
//! fence, as with grelmicro; the driver then refuses the lower token as `FenceRegression`.
//!
//! **Redis Cluster.** `redis+cluster://host:port,host:port` (or [`RedisOptions::cluster`]) routes
//! each call by its key; the key prefix must then hold a hash tag (`?prefix={app}:`), so a
//! name's lock key and fence key — which one script touches together — land in one slot
//! (grelmicro's rule). Releases are published cluster-wide.
//!
//! **Runtimes.** The backend is handed its runtime when it opens ([`tenure::net::Net`]): a
//! single server over plain TCP is reached with that runtime's socket and timer, on a
//! connection of Tenure's own whose callers do its I/O — the task making a call writes the
//! request and reads the reply itself, so a call costs one write and one read, with no hop to a
//! connection task (a listener task reads published releases while no call does). A host's own
//! event loop can be the runtime: the Python package puts the socket in its asyncio loop's
//! selector. TLS, Unix sockets and clusters go through the redis crate's connection manager,
//! which picks tokio or smol by itself.
//!
//! **Sentinel.** `redis+sentinel://[user:password@]h1:26379,h2:26379/<master>[/<db>]` (or
//! `valkey+sentinel://`, grelmicro's grammar; `?sentinel_password=` for sentinels that run with
//! `requirepass`) finds the master through its sentinels at each dial and checks its `ROLE`;
//! every later request carries a `ROLE` in the same write, so a server demoted by a failover is
//! never taken for the master (its answer is discarded and the connection dropped), and a
//! `READONLY` or a timeout drops the connection too. The next call asks the sentinels again;
//! the redial wakes every waiter and subscribes afresh on the new master. What a failover
//! guarantees: replication is asynchronous, so a grant or a renewal the master acknowledged just
//! before it died may be missing on the promoted replica. A holder whose lease is missing there
//! cannot renew it and learns it lost it when its validity runs out — a rival is granted only
//! after the lease's time, as the test suite checks — but a fence increment can be lost with it,
//! and the next holder can then get a fence already handed out: the driver refuses a fence lower
//! than one it saw as `FenceRegression`. [`RedisOptions::min_replicas`] (`?min_replicas=N`)
//! closes that gap as far as `WAIT` can: every grant, renewal, fence increment and task claim is
//! confirmed by N replicas before anyone is told of it, so a promoted replica that acknowledged
//! continues above every fence handed out. Sentinels also fail over again and again under too
//! short a `down-after-milliseconds` (seen with 500 ms on loopback), leaving two masters that
//! both take writes for a while: keep it at 1 s or more.
//!
//! `rediss+sentinel://` reaches the sentinels and the master over TLS (rustls; the system's
//! roots, `tls_root_cert=`, or `#insecure` for tests). The master's certificate is checked
//! against the address the sentinels announce for it (usually an IP address, which the
//! certificate must then name).
//!
//! **Not yet:** wake-ups on lease expiry (waiters notice an expired lease at their next
//! `retry_interval` attempt).
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use tenure::Coordination;
//! use tenure_redis::RedisBackend;
//!
//! let store = RedisBackend::open("redis://127.0.0.1:6379/0", tenure_tokio::Tokio::current()).await?;
//! let coordination = Coordination::new(tenure_tokio::Tokio::current()).source(&store);
//! let lock = coordination.lock("cart")?.build()?;
//! # Ok(()) }
//! ```

#![deny(missing_docs)]

mod connection;
mod dial;
mod frame;
mod inspect;
mod inspect_shared;
mod open;
mod options;
mod queue;
mod record;
mod replicas;
mod revoke;
mod rw;
mod scripts;
mod sem;
mod sentinel;
mod tls;
mod wake;
mod wire;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::aio::ConnectionManagerConfig;
use redis::cluster::ClusterClientBuilder;
use redis::{Client, ConnectionAddr, ConnectionInfo, IntoConnectionInfo, ProtocolVersion, RedisError, TlsCertificates};
use tenure::backend::{
    BackendFuture, LeaderElectionOperations, LockOperations, ReadWriteLockBackend, ScheduleBackend, SemaphoreBackend,
    Wakeup,
};
use tenure::{Inspect, LeaderState, LockState, SharedState};
use tenure_core::{
    BackendError, BackendErrorKind, FencingToken, HolderDetails, LeaderRecord, Metadata, Revocation, RevokeReason,
    SettingsError, StoreReply,
};
pub use tenure_store::OpenError;

use connection::Connection;
use dial::{Dial, Dialed, Target};
pub use open::SCHEMES;
pub use options::{DEFAULT_COMMAND_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, DEFAULT_REPLICA_TIMEOUT, RedisOptions};
use replicas::{Confirm, Grant};
use scripts::Scripts;
pub use sentinel::DEFAULT_SENTINEL_PORT;
use tenure::net::Net;
use wake::{Subscriptions, Wake};

/// A lease store on a Redis server. Clones share one multiplexed connection.
#[derive(Clone)]
pub struct RedisBackend {
    inner: Arc<Inner>,
}

struct Inner {
    connection: Mutex<Option<Connection>>,
    scripts: Scripts,
    subscriptions: Arc<Subscriptions>,
    options: RedisOptions,
    /// Set by `min_replicas`: grants wait for replicas ([`replicas`]).
    confirm: Option<Confirm>,
}

impl RedisBackend {
    /// Connects to the server at `url` (see [`RedisOptions::from_url`]) with default options, on
    /// `runtime`.
    pub async fn open(url: &str, runtime: impl Net) -> Result<Self, OpenError> {
        RedisOptions::from_url(url)?.open(runtime).await
    }

    /// The options it was opened with.
    pub fn options(&self) -> &RedisOptions {
        &self.inner.options
    }

    /// Closes the connection. Calls made afterwards, through any clone, fail with
    /// [`BackendErrorKind::Closed`]. Leases need no cleanup: their TTLs end them.
    pub fn close(&self) {
        self.inner.connection.lock().unwrap_or_else(PoisonError::into_inner).take();
    }

    fn connection(&self) -> Result<Connection, BackendError> {
        self.inner
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or_else(|| BackendError::new(BackendErrorKind::Closed, "the Redis backend is closed"))
    }

    fn key(&self, name: &str) -> String {
        format!("{}{name}", self.inner.options.key_prefix())
    }

    /// grelmicro's acquire; a refusal by a revocation's placeholder is answered `Revoked`.
    async fn lock_acquire(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        details: Option<&HolderDetails>,
    ) -> Result<StoreReply, BackendError> {
        let mut con = self.connection()?;
        self.inner.subscriptions.subscribe_wanted(&mut con, name).await;
        let mut invocation = self.inner.scripts.lock_acquire.key(self.key(name));
        invocation
            .key(self.key(&format!("fence:{name}")))
            .key(self.key(&format!("details:{name}")))
            .arg(token)
            .arg(tenure_core::time::ceil_millis(lease))
            .arg(details.map_or("", HolderDetails::as_str));
        let grant = Grant {
            what: "lock acquire",
            name,
            // (An expired key is gone: a value read is a live lease.)
            before: || vec![redis::cmd("GET").arg(self.key(name)).clone()],
            granted: |answer: &redis::Value, _| matches!(answer, redis::Value::Int(_)),
            kept: |before: &[redis::Value], _: &redis::Value| {
                let held = before.first().and_then(|v| redis::from_redis_value_ref::<Option<String>>(v).ok());
                let held = held.flatten();
                let held = held.as_deref().and_then(|v| record::lock_value(name, v).ok());
                held.is_some_and(|(_, t)| t == token).then_some(replicas::RENEWAL)
            },
            give_back: || self.lock_release(name, token),
        };
        let answer: redis::Value = self.grant(&mut con, &invocation, token, grant).await?;
        revoke::acquired(name, &answer)
    }

    /// Runs a release script on `key`: deletes it iff `token` holds it, and publishes on
    /// `name`'s channel if it did.
    async fn release_by(
        &self,
        script: &redis::Script,
        key: String,
        name: &str,
        token: &str,
        what: &str,
    ) -> Result<bool, BackendError> {
        let mut con = self.connection()?;
        let released: i64 = script
            .key(key)
            .arg(token)
            .arg(self.inner.subscriptions.channel(name))
            .invoke_async(&mut con)
            .await
            .map_err(|e| error(what, name, &e))?;
        Ok(released == 1)
    }

    /// The keys a lock's scripts touch: the lock, its fence, its queue, the queue's places and
    /// its holder's details.
    fn lock_keys<'a>(&self, script: &'a redis::Script, name: &str) -> redis::ScriptInvocation<'a> {
        let mut invocation = script.key(self.key(name));
        invocation
            .key(self.key(&format!("fence:{name}")))
            .key(self.key(&format!("queue:{name}")))
            .key(self.key(&format!("queue-places:{name}")))
            .key(self.key(&format!("details:{name}")));
        invocation
    }

    /// Frees `name` if `token` holds it, and hands it to the oldest live waiter queued, or
    /// publishes the release.
    async fn lock_release(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        let mut con = self.connection()?;
        let released: i64 = self
            .lock_keys(&self.inner.scripts.lock_release, name)
            .arg(token)
            .arg(self.inner.subscriptions.channel(name))
            .arg(name)
            .invoke_async(&mut con)
            .await
            .map_err(|e| error("lock release", name, &e))?;
        Ok(released == 1)
    }

    /// A queued acquire: subscribes this backend's grant channel first, so a
    /// hand-off after a refusal is heard.
    async fn lock_acquire_queued(
        &self,
        name: &str,
        token: &str,
        (lease, wait): (Duration, Duration),
        details: Option<&HolderDetails>,
    ) -> Result<StoreReply, BackendError> {
        if self.inner.confirm.is_some() {
            // A hand-off is a grant the releaser's write makes and a push announces before any
            // `WAIT`: with min_replicas, waiters are woken instead, and take the lock themselves.
            return self.lock_acquire(name, token, lease, details).await;
        }
        let mut con = self.connection()?;
        self.inner.subscriptions.subscribe_wanted(&mut con, name).await;
        self.inner.subscriptions.subscribe_grants(&mut con).await;
        let answer: redis::Value = self
            .lock_keys(&self.inner.scripts.lock_acquire_queued, name)
            .arg(token)
            .arg(tenure_core::time::ceil_millis(lease))
            .arg(tenure_core::time::ceil_millis(wait))
            .arg(self.inner.subscriptions.grant_channel())
            .arg(name)
            .arg(details.map_or("", HolderDetails::as_str))
            .invoke_async(&mut con)
            .await
            .map_err(|e| error("lock acquire", name, &e))?;
        revoke::acquired(name, &answer)
    }

    /// The holder token of `name`'s live lease, if any.
    async fn lock_holder(&self, name: &str) -> Result<Option<String>, BackendError> {
        let mut con = self.connection()?;
        let value: Option<String> = redis::cmd("GET")
            .arg(self.key(name))
            .query_async(&mut con)
            .await
            .map_err(|e| error("lock read", name, &e))?;
        value.map(|v| record::lock_value(name, &v).map(|(_, token)| token.to_owned())).transpose()
    }

    async fn leader_acquire_or_renew(
        &self,
        name: &str,
        token: &str,
        (lease, metadata): (Duration, &Metadata),
        details: Option<&HolderDetails>,
    ) -> Result<LeaderRecord, BackendError> {
        let mut con = self.connection()?;
        self.inner.subscriptions.subscribe_wanted(&mut con, name).await;
        let mut invocation = self.inner.scripts.leader_acquire_or_renew.key(self.key(&format!("le_us:{name}")));
        invocation.key(self.key(&format!("fence:{name}"))).key(self.key(&format!("details:{name}")));
        invocation
            .arg(token)
            .arg(tenure_core::time::ceil_micros(lease))
            .arg(record::metadata_json(metadata))
            .arg(details.map_or("", HolderDetails::as_str));
        let grant = Grant {
            what: "leader acquire_or_renew",
            name,
            before: Vec::new,
            // The record's first field is its holder.
            granted: |raw: &Vec<Option<String>>, token| raw.first().and_then(Option::as_deref) == Some(token),
            // The record tells a take (acquired = renewed) from a renewal.
            kept: |_: &[redis::Value], raw: &Vec<Option<String>>| {
                let renewal = record::leader(name, raw).is_ok_and(|l| l.acquired_at != l.renewed_at);
                renewal.then_some(replicas::RENEWAL)
            },
            give_back: || self.leader_release(name, token),
        };
        let raw = self.grant(&mut con, &invocation, token, grant).await?;
        record::leader(name, &raw)
    }

    async fn leader_release(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        let key = self.key(&format!("le_us:{name}"));
        self.release_by(&self.inner.scripts.leader_release, key, name, token, "leader release").await
    }

    async fn leader_get(&self, name: &str) -> Result<Option<LeaderRecord>, BackendError> {
        let mut con = self.connection()?;
        let raw: Option<Vec<Option<String>>> = self
            .inner
            .scripts
            .leader_get
            .key(self.key(&format!("le_us:{name}")))
            .key(self.key(&format!("fence:{name}")))
            .invoke_async(&mut con)
            .await
            .map_err(|e| error("leader get", name, &e))?;
        raw.map(|raw| record::leader(name, &raw)).transpose()
    }

    async fn schedule_claim(&self, name: &str, due: f64) -> Result<bool, BackendError> {
        if !due.is_finite() {
            return Err(BackendError::new(
                BackendErrorKind::Rejected,
                format!("schedule due {due} is not a finite time"),
            ));
        }
        let mut con = self.connection()?;
        let mut invocation = self.inner.scripts.schedule_claim.key(self.key(name));
        invocation.arg(record::python_float(due));
        // A claim cannot be taken back without racing the next: an unconfirmed one skips its run.
        let grant = Grant {
            what: "schedule claim",
            name,
            before: Vec::new,
            granted: |won: &i64, _| *won == 1,
            kept: |_: &[redis::Value], _: &i64| Some("this run is skipped"),
            give_back: || async { Ok(false) },
        };
        let won = self.grant(&mut con, &invocation, "", grant).await?;
        Ok(won == 1)
    }

    async fn schedule_last_fired(&self, name: &str) -> Result<Option<f64>, BackendError> {
        let mut con = self.connection()?;
        let value: Option<String> = redis::cmd("GET")
            .arg(self.key(name))
            .query_async(&mut con)
            .await
            .map_err(|e| error("schedule last_fired", name, &e))?;
        value
            .map(|v| {
                v.trim().parse::<f64>().ok().filter(|f| f.is_finite()).ok_or_else(|| {
                    BackendError::new(
                        BackendErrorKind::MalformedRecord,
                        format!("the schedule key {} holds no number", self.key(name)),
                    )
                })
            })
            .transpose()
    }
}

impl RedisOptions {
    /// Connects on `runtime` and loads the scripts: validates the options, then opens one RESP3
    /// connection within the connect timeout. A single server over plain TCP is dialed through
    /// `runtime` ([`Net`]: its socket, its timer, its task drives the connection — a host's own
    /// event loop can be one); TLS, a Unix socket and a cluster connect through the
    /// redis crate's own connection manager, which runs on tokio when called inside a tokio
    /// runtime and on smol's reactor otherwise.
    pub async fn open(self, runtime: impl Net) -> Result<RedisBackend, OpenError> {
        self.validate()?;
        if let Some(sentinels) = self.sentinels() {
            let info = self.connection_info()?.redis_settings().clone();
            let target = Target::Sentinels(sentinels.clone());
            return self.open_dialed(runtime, target, info).await;
        }
        let info = if self.is_cluster() { None } else { Some(self.connection_info()?) };
        let Some((info, ConnectionAddr::Tcp(host, port))) =
            info.map(|i| (i.redis_settings().clone(), i.addr().clone()))
        else {
            return self.open_managed().await;
        };
        self.open_dialed(runtime, Target::Server { host, port }, info).await
    }

    /// Opens a connection of Tenure's own on `runtime` to `target`.
    async fn open_dialed(
        self,
        runtime: impl Net,
        target: Target,
        info: redis::RedisConnectionInfo,
    ) -> Result<RedisBackend, OpenError> {
        let subscriptions = Arc::new(Subscriptions::new(self.key_prefix()));
        let tls = match &target {
            Target::Sentinels(s) if s.tls => {
                Some(tls::Tls::new(self.root_certificate().map(|p| p.as_path()), s.insecure)?)
            }
            _ => None,
        };
        let dial = Dial {
            target,
            info,
            connect_timeout: self.connect_timeout_value(),
            command_timeout: self.command_timeout_value(),
            tls,
        };
        let dialed = Dialed::new(Arc::new(runtime), dial, subscriptions.clone());
        self.finish_open(Connection::Dialed(Arc::new(dialed)), subscriptions).await
    }

    /// Opens a TLS, Unix-socket or cluster connection through the redis crate's connection
    /// manager.
    async fn open_managed(self) -> Result<RedisBackend, OpenError> {
        // rustls needs a process-wide crypto provider; keep the application's if it set one.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let root =
            match self.root_certificate() {
                None => None,
                Some(path) => Some(std::fs::read(path).map_err(|e| {
                    SettingsError::field("tls_root_cert", format!("cannot read {}: {e}", path.display()))
                })?),
            };
        let subscriptions = Arc::new(Subscriptions::new(self.key_prefix()));
        let connection = if self.is_cluster() {
            self.connect_cluster(root, &subscriptions).await?
        } else {
            self.connect_single(root, &subscriptions).await?
        };
        self.finish_open(connection, subscriptions).await
    }

    /// Loads the scripts on `connection` (its first use) and makes the backend.
    async fn finish_open(
        self,
        mut connection: Connection,
        subscriptions: Arc<Subscriptions>,
    ) -> Result<RedisBackend, OpenError> {
        let scripts = Scripts::new();
        scripts.load(&mut connection).await.map_err(|e| self.unreachable(&e))?;
        Ok(RedisBackend {
            inner: Arc::new(Inner {
                connection: Mutex::new(Some(connection)),
                scripts,
                subscriptions,
                confirm: self.replicas().map(|(replicas, timeout)| Confirm { replicas, timeout }),
                options: self,
            }),
        })
    }

    /// The URL's address and settings, speaking RESP3 and naming the library.
    fn connection_info(&self) -> Result<ConnectionInfo, SettingsError> {
        let url = self.sentinels().map_or(self.url(), |s| s.settings.as_str());
        let info = url.into_connection_info().map_err(|e| self.settings_error(&e))?;
        let redis = info
            .redis_settings()
            .clone()
            .set_protocol(ProtocolVersion::RESP3)
            .set_lib_name("tenure", env!("CARGO_PKG_VERSION"));
        Ok(info.set_redis_settings(redis))
    }

    fn settings_error(&self, e: &RedisError) -> SettingsError {
        SettingsError::field("url", format!("{} cannot be used: {e}", self.shown_url()))
    }

    async fn connect_single(
        &self,
        root: Option<Vec<u8>>,
        subscriptions: &Arc<Subscriptions>,
    ) -> Result<Connection, OpenError> {
        let info = self.connection_info()?;
        let client = match root {
            None => Client::open(info),
            Some(root) => Client::build_with_tls(info, TlsCertificates { client_tls: None, root_cert: Some(root) }),
        }
        .map_err(|e| self.settings_error(&e))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(self.connect_timeout_value()))
            .set_response_timeout(Some(self.command_timeout_value()))
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(10))
            .set_max_delay(Duration::from_millis(100))
            .set_push_sender(Subscriptions::push_sender(subscriptions))
            .set_automatic_resubscription();
        let manager = client.get_connection_manager_with_config(config).await.map_err(|e| self.unreachable(&e))?;
        Ok(Connection::Single(manager))
    }

    async fn connect_cluster(
        &self,
        root: Option<Vec<u8>>,
        subscriptions: &Arc<Subscriptions>,
    ) -> Result<Connection, OpenError> {
        let mut builder = ClusterClientBuilder::new(self.cluster_nodes().iter().map(String::as_str))
            .use_protocol(ProtocolVersion::RESP3)
            .connection_timeout(self.connect_timeout_value())
            .response_timeout(self.command_timeout_value())
            .retries(1)
            .push_sender(Subscriptions::push_sender(subscriptions));
        if let Some(root) = root {
            builder = builder.certs(TlsCertificates { client_tls: None, root_cert: Some(root) });
        }
        let client = builder.build().map_err(|e| self.settings_error(&e))?;
        let cluster = client.get_async_connection().await.map_err(|e| self.unreachable(&e))?;
        Ok(Connection::Cluster(cluster))
    }

    fn unreachable(&self, e: &RedisError) -> BackendError {
        BackendError::new(kind(e), format!("cannot connect to Redis at {}: {e}", self.shown_url()))
    }
}

fn kind(e: &RedisError) -> BackendErrorKind {
    let text = e.to_string();
    if e.is_timeout() {
        BackendErrorKind::Timeout
    } else if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() {
        BackendErrorKind::Unavailable
    } else if text.contains(scripts::MALFORMED) || text.contains("WRONGTYPE") || text.contains("not an integer") {
        BackendErrorKind::MalformedRecord
    } else if matches!(e.kind(), redis::ErrorKind::Parse | redis::ErrorKind::UnexpectedReturnType) {
        BackendErrorKind::Protocol
    } else if e.code().is_some()
        || matches!(e.kind(), redis::ErrorKind::Server(_) | redis::ErrorKind::AuthenticationFailed)
    {
        BackendErrorKind::Rejected
    } else {
        BackendErrorKind::Other
    }
}

/// The backend error for `e`, raised by `what` on `name`.
fn error(what: &str, name: &str, e: &RedisError) -> BackendError {
    let kind = kind(e);
    let message = match kind {
        BackendErrorKind::MalformedRecord => {
            format!("{what} of {name}: the record in Redis is not in grelmicro's layout: {}", e)
        }
        _ => format!("{what} of {name} on Redis: {}", e),
    };
    BackendError::new(kind, message)
}

impl std::fmt::Debug for RedisBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBackend")
            .field("url", &self.inner.options.shown_url())
            .field("prefix", &self.inner.options.key_prefix())
            .finish_non_exhaustive()
    }
}

impl LockOperations for RedisBackend {
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
        self.lock_release(name, token)
    }

    async fn locked(&self, name: &str) -> Result<bool, BackendError> {
        self.lock_holder(name).await.map(|h| h.is_some())
    }

    async fn owned(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        self.lock_holder(name).await.map(|h| h.as_deref() == Some(token))
    }

    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        Some(self.inner.subscriptions.wakeup(name, Wake::One))
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
        // With min_replicas there is no queue (see `lock_acquire_queued`).
        self.inner.confirm.is_none().then(|| self.inner.subscriptions.turn(name, token))
    }

    fn take_grant(&self, name: &str, token: &str) -> Option<FencingToken> {
        self.inner.subscriptions.take_grant(name, token)
    }

    fn read_write(&self) -> Option<Arc<dyn ReadWriteLockBackend>> {
        Some(Arc::new(self.clone()))
    }

    fn semaphore(&self) -> Option<Arc<dyn SemaphoreBackend>> {
        Some(Arc::new(self.clone()))
    }
}

impl LeaderElectionOperations for RedisBackend {
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
        self.leader_release(name, token)
    }

    fn get(&self, name: &str) -> impl Future<Output = Result<Option<LeaderRecord>, BackendError>> + Send {
        self.leader_get(name)
    }

    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        Some(self.inner.subscriptions.wakeup(name, Wake::All))
    }
}

impl ScheduleBackend for RedisBackend {
    fn claim<'a>(&'a self, name: &'a str, due: f64) -> BackendFuture<'a, bool> {
        Box::pin(self.schedule_claim(name, due))
    }

    fn last_fired<'a>(&'a self, name: &'a str) -> BackendFuture<'a, Option<f64>> {
        Box::pin(self.schedule_last_fired(name))
    }
}

impl Inspect for RedisBackend {
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
