//! # tenure-etcd
//!
//! Tenure's etcd store: locks with fencing tokens on a consensus cluster, in the key layout of
//! etcd's own `concurrency.Mutex`, so that `etcdctl lock` and Go services using the `concurrency`
//! package exclude Tenure processes on the same names and the other way round.
//!
//! - A name's contenders are the keys under `<prefix><name>/`, each named by its etcd lease id in
//!   hex and attached to that lease; the one with the lowest create revision holds the name.
//!   Tenure stores its ownership token as the key's value (etcd's recipe leaves it empty).
//! - The fencing token is the holder's key's **create revision**: etcd makes it strictly
//!   increasing across holders, restarts and leader changes, and it is the `ETCD_LOCK_REV` an
//!   `etcdctl lock` child is given, so the two are comparable.
//! - A lease is an etcd lease of the requested duration rounded up to whole seconds (the
//!   cluster may grant more): the store holds at least as long as the holder believes, which
//!   counts the requested duration from the send. Renewing moves the key onto a new lease of
//!   the requested length; its create revision, the fence, stays.
//! - An attempt that does not end up holding the name removes its key at once (`TryLock`'s
//!   rule), so the reference's try-then-retry semantics hold.
//!
//! - Elections use etcd's `concurrency.Election` layout the same way (the `election`
//!   module says how records and transitions are kept), so `etcdctl elect` and Tenure follow each other.
//! - A watch on the store's prefix pushes every deletion (a release, an expiry) to the waiters of
//!   its name.
//!
//! etcd's client speaks gRPC through tokio: on a tokio runtime (the CLI, the bindings) calls run
//! where they are polled; elsewhere (smol, async-std) on a small tokio runtime of this crate's.

mod call;
mod client;
mod contender;
mod details;
mod election;
mod health;
mod inspect;
mod known;
mod lease;
mod open;
mod options;
mod pb;
mod revoke;
mod rw;
mod schedule;
mod sem;
mod takeover;
mod txn;
mod wake;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use client::{Client, ConnectOptions, KeyValue};
use tenure::backend::{LockOperations, Wakeup};
use tenure_core::{BackendError, BackendErrorKind, FencingToken, HolderDetails, Revocation, RevokeReason, StoreReply};
use tenure_store::Wake;

use call::{failed, on_tokio};
use contender::{Held, Taken};
pub use open::SCHEMES;
pub use options::{DEFAULT_COMMAND_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, EtcdOptions};

/// How often a connection with calls or a watch open is pinged: etcd closes a connection pinged
/// more often than every 5 s (`--grpc-keepalive-min-time`, with `too_many_pings`), which broke the
/// store's watch every few seconds when it pinged every second; 10 s is what etcd's own Go
/// client allows at the least.
const PING_INTERVAL: Duration = Duration::from_secs(10);

/// An etcd cluster as Tenure's store.
#[derive(Clone)]
pub struct EtcdBackend {
    client: Arc<Client>,
    options: Arc<EtcdOptions>,
    watch: Arc<wake::Watch>,
    members: Arc<health::Members>,
    state: Arc<State>,
}

/// What a store knows of its own keys and leases (hints: every write that relies on one is
/// guarded by the key's create revision and lease, and a stale hint only costs a read).
#[derive(Default)]
struct State {
    /// Spare leases without keys.
    spares: lease::Spares,
    /// The keys this store put and holds, by name and token.
    locks: known::Known<Held>,
    /// The leaders' keys this store put and holds, with their records.
    leaders: known::Known<(Held, tenure_core::LeaderRecord)>,
    /// What each follower's last refused attempt read.
    standings: known::Known<takeover::Standing>,
    /// This process's calls on a multi-key name, one at a time (see [`txn`]).
    turns: txn::Turns,
}

impl std::fmt::Debug for EtcdBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdBackend").field("url", &self.options.shown).finish_non_exhaustive()
    }
}

impl EtcdBackend {
    /// Connects to the cluster `options` name.
    pub async fn open(options: EtcdOptions) -> Result<Self, BackendError> {
        // HTTP/2 pings on a connection with calls or a watch open find a member that stopped
        // answering (frozen, cut off), so that the watch is made again elsewhere; each call is
        // bounded by the command timeout anyway, and the probes below take such a member out of
        // the balancer. A member without a leader refuses at once.
        let mut connect = ConnectOptions::new()
            .with_connect_timeout(options.connect_timeout)
            .with_timeout(options.command_timeout)
            .with_keep_alive(PING_INTERVAL, options.command_timeout)
            .with_require_leader(true);
        if let Some((user, password)) = &options.user {
            connect = connect.with_user(user.clone(), password.clone());
        }
        if let Some(tls) = &options.tls {
            connect = connect.with_tls(tls_config(tls)?);
        }
        let endpoints = options.endpoints.clone();
        let shown = options.shown.clone();
        let probes = connect.clone();
        let client = on_tokio(async move { Client::connect(endpoints, connect).await })
            .await?
            .map_err(|e| failed(&format!("connecting to {shown}"), &e))?;
        // The client connects lazily: the watch is the first request, and its failure says where.
        let watch = wake::Watch::start(client.clone(), options.prefix.clone()).await.map_err(|e| {
            let cause = e.message().trim_start_matches("etcd: ");
            BackendError::new(e.kind(), format!("etcd: connecting to {}: {cause}", options.shown))
        })?;
        let watch = Arc::new(watch);
        let probe_key = format!("{}tenure:probe", options.prefix);
        let within = options.command_timeout.min(Duration::from_secs(1));
        let members = Arc::new(health::watch_members(client.clone(), &options.endpoints, &probes, within, &probe_key));
        Ok(Self { client: Arc::new(client), options: Arc::new(options), watch, members, state: Arc::default() })
    }

    /// Connects to the cluster at `url` (see [`EtcdOptions::from_url`]).
    pub async fn open_url(url: &str) -> Result<Self, BackendError> {
        let options =
            EtcdOptions::from_url(url).map_err(|e| BackendError::new(BackendErrorKind::Rejected, e.to_string()))?;
        Self::open(options).await
    }

    /// Closes the store: later calls fail, the watch stops and the spare leases are revoked
    /// (held leases end by their expiry).
    pub fn close(&self) {
        self.watch.stop();
        self.members.stop();
        for spare in self.state.spares.drain() {
            self.revoke_later(spare.id);
        }
    }

    /// The keys of `name`'s contenders live under this prefix.
    fn contenders_prefix(&self, name: &str) -> String {
        format!("{}{name}/", self.options.prefix)
    }

    /// Runs `call` with a client of this store, where etcd's client can run; a failure says
    /// `what` failed `about` what (a name).
    async fn run<T, F>(
        &self,
        what: &'static str,
        about: &str,
        call: impl FnOnce(Client) -> F + Send + 'static,
    ) -> Result<T, BackendError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, client::Error>> + Send + 'static,
    {
        if self.watch.is_stopped() {
            return Err(BackendError::new(BackendErrorKind::Closed, "etcd: the store is closed"));
        }
        let client = Client::clone(&self.client);
        // Boxed: a request of etcd's client is a large future, and calls nest several.
        on_tokio(Box::pin(async move { call(client).await }))
            .await?
            .map_err(|e| failed(&format!("{what} of {about}"), &e))
    }

    /// Takes `name` for `token` on a lease of `lease`, or renews it if `token` holds it.
    /// Takes `name` for `token`: the key held, or refused with the holder's value if it is a
    /// revocation's placeholder.
    async fn lock_take(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        details: Option<&HolderDetails>,
    ) -> Result<Result<Held, Option<String>>, BackendError> {
        let prefix = self.contenders_prefix(name);
        let beside = self.beside_take(name, details);
        let (taken, _) = self.take_ready(prefix.clone(), token.into(), lease, beside, name).await?;
        match taken {
            Taken::Holds(held) => Ok(Ok(held)),
            Taken::Crowded(leased) => Ok(self.candidate(prefix, token.into(), leased, name).await?.ok_or(None)),
            Taken::Contended(contenders) => {
                let Some(mine) = contenders.iter().find(|kv| is_token(kv, token)) else {
                    let first = contenders.first().and_then(KeyValue::value_str).map(str::to_owned);
                    return Ok(Err(first.filter(|v| v.starts_with(tenure_core::REVOKED_PREFIX))));
                };
                if contenders[0].key() != mine.key() {
                    // A place behind another holder (an attempt that could not remove its key):
                    // gone, and the name is held.
                    self.vacate(&Held::of(mine), Vec::new(), name).await?;
                    return Ok(Err(None));
                }
                Ok(self.renew(&Held::of(mine), token.into(), false, lease, name).await?.ok_or(None))
            }
        }
    }
}

/// The TLS settings of `tls`, its files read.
fn tls_config(tls: &options::Tls) -> Result<client::TlsOptions, BackendError> {
    let read = |path: &std::path::Path, what: &str| {
        std::fs::read(path).map_err(|e| {
            BackendError::new(
                BackendErrorKind::Rejected,
                format!("etcd: cannot read the {what} {}: {e}", path.display()),
            )
        })
    };
    let mut config = client::TlsOptions::new();
    config = match &tls.ca {
        Some(ca) => config.ca_certificate(client::Certificate::from_pem(read(ca, "CA file")?)),
        None => config.with_native_roots(),
    };
    if let (Some(cert), Some(key)) = (&tls.cert, &tls.key) {
        config =
            config.identity(client::Identity::from_pem(read(cert, "client certificate")?, read(key, "client key")?));
    }
    Ok(config)
}

fn fence(revision: i64) -> Result<FencingToken, BackendError> {
    u64::try_from(revision).ok().filter(|r| *r > 0).map(FencingToken::new).ok_or_else(|| {
        BackendError::new(
            BackendErrorKind::Protocol,
            format!("etcd answered create revision {revision} for a held key"),
        )
    })
}

fn is_token(kv: &KeyValue, token: &str) -> bool {
    kv.value() == token.as_bytes()
}

impl LockOperations for EtcdBackend {
    fn lock_state(&self, key: &str) -> Option<tenure::backend::BackendFuture<'static, Option<tenure::LockState>>> {
        tenure::backend::state_of(self, key)
    }

    async fn acquire(&self, name: &str, token: &str, lease: Duration) -> Result<Option<FencingToken>, BackendError> {
        tenure::backend::granted(self.acquire_answer(name, token, lease, None).await?)
    }

    /// grelmicro's acquire; a refusal by a revocation's placeholder is answered `Revoked`.
    async fn acquire_answer(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        details: Option<&HolderDetails>,
    ) -> Result<StoreReply, BackendError> {
        let mut held = None;
        if let Some(known) = self.state.locks.take(name, token) {
            held = self.renew(&known, token.into(), false, lease, name).await?;
        }
        let held = match held {
            Some(held) => held,
            None => match self.lock_take(name, token, lease, details).await? {
                Ok(held) => held,
                Err(placeholder) => return Ok(tenure::backend::refused(placeholder.as_deref())),
            },
        };
        let fence = fence(held.revision)?;
        self.state.locks.put(name, token, held);
        Ok(StoreReply::Fence(Some(fence)))
    }

    /// (etcd keeps no queue: a queued acquire is a plain one)
    async fn acquire_queued_answer(
        &self,
        name: &str,
        token: &str,
        (lease, _wait): (Duration, Duration),
        details: Option<&HolderDetails>,
    ) -> Result<StoreReply, BackendError> {
        self.acquire_answer(name, token, lease, details).await
    }

    async fn revoke(&self, name: &str, reason: &RevokeReason) -> Result<Option<Revocation>, BackendError> {
        self.lock_revoke(name, reason).await
    }

    async fn release(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        // A key this store holds was first when taken and keeps its revision: still first.
        if let Some(held) = self.state.locks.take(name, token)
            && self.vacate(&held, Vec::new(), name).await?
        {
            return Ok(true);
        }
        let contenders = self.contenders(self.contenders_prefix(name), name).await?;
        let Some(mine) = contenders.iter().find(|kv| is_token(kv, token)) else { return Ok(false) };
        let held = contenders.first().is_some_and(|first| first.key() == mine.key());
        Ok(self.vacate(&Held::of(mine), Vec::new(), name).await? && held)
    }

    async fn locked(&self, name: &str) -> Result<bool, BackendError> {
        Ok(!self.contenders(self.contenders_prefix(name), name).await?.is_empty())
    }

    async fn owned(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        Ok(self.contenders(self.contenders_prefix(name), name).await?.first().is_some_and(|kv| is_token(kv, token)))
    }

    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        Some(self.watch.queues.wakeup(name, Wake::One))
    }

    fn read_write(&self) -> Option<Arc<dyn tenure::backend::ReadWriteLockBackend>> {
        Some(Arc::new(self.clone()))
    }

    fn semaphore(&self) -> Option<Arc<dyn tenure::backend::SemaphoreBackend>> {
        Some(Arc::new(self.clone()))
    }
}
