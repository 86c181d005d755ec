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
mod election;
mod inspect;
mod options;
mod schedule;
mod wake;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Client, Compare, CompareOp, GetOptions, KeyValue, PutOptions, SortOrder, SortTarget, Txn, TxnOp};
use etcd_client::{ConnectOptions, TxnOpResponse};
use tenure::backend::{LockOperations, Wake, Wakeup};
use tenure_core::{BackendError, BackendErrorKind, FencingToken};

use call::{failed, on_tokio};
pub use options::{DEFAULT_COMMAND_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, EtcdOptions};

/// An etcd cluster as Tenure's store.
#[derive(Clone)]
pub struct EtcdBackend {
    client: Arc<Client>,
    options: Arc<EtcdOptions>,
    watch: Arc<wake::Watch>,
}

impl std::fmt::Debug for EtcdBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdBackend").field("url", &self.options.shown).finish_non_exhaustive()
    }
}

impl EtcdBackend {
    /// Connects to the cluster `options` name.
    pub async fn open(options: EtcdOptions) -> Result<Self, BackendError> {
        // HTTP/2 pings find a member that stopped answering (frozen, cut off) within the command
        // timeout, so that requests go to the others; a member without a leader refuses at once.
        let ping = options.command_timeout.min(Duration::from_secs(1));
        let mut connect = ConnectOptions::new()
            .with_connect_timeout(options.connect_timeout)
            .with_timeout(options.command_timeout)
            .with_keep_alive(ping, options.command_timeout)
            .with_keep_alive_while_idle(true)
            .with_require_leader(true)
            .with_auto_token_refresh(true);
        if let Some((user, password)) = &options.user {
            connect = connect.with_user(user.clone(), password.clone());
        }
        let endpoints = options.endpoints.clone();
        let shown = options.shown.clone();
        let client = on_tokio(async move { Client::connect(endpoints, Some(connect)).await })
            .await?
            .map_err(|e| failed(&format!("connecting to {shown}"), &e))?;
        let watch = Arc::new(wake::Watch::start(client.clone(), options.prefix.clone()).await?);
        Ok(Self { client: Arc::new(client), options: Arc::new(options), watch })
    }

    /// Connects to the cluster at `url` (see [`EtcdOptions::from_url`]).
    pub async fn open_url(url: &str) -> Result<Self, BackendError> {
        let options =
            EtcdOptions::from_url(url).map_err(|e| BackendError::new(BackendErrorKind::Rejected, e.to_string()))?;
        Self::open(options).await
    }

    /// Closes the store: later calls fail, and the watch stops (leases end by their expiry).
    pub fn close(&self) {
        self.watch.stop();
    }

    /// The keys of `name`'s contenders live under this prefix.
    fn contenders_prefix(&self, name: &str) -> String {
        format!("{}{name}/", self.options.prefix)
    }

    /// Runs `call` with a client of this store, where etcd's client can run.
    async fn run<T, F>(
        &self,
        what: &'static str,
        call: impl FnOnce(Client) -> F + Send + 'static,
    ) -> Result<T, BackendError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, etcd_client::Error>> + Send + 'static,
    {
        if self.watch.is_stopped() {
            return Err(BackendError::new(BackendErrorKind::Closed, "etcd: the store is closed"));
        }
        let client = Client::clone(&self.client);
        on_tokio(async move { call(client).await }).await?.map_err(|e| failed(what, &e))
    }

    /// `prefix`'s contenders, the holder first (lowest create revision): the keys directly under
    /// it (a name holding `/` has its own keys further down, which are not its contenders).
    async fn contenders(&self, prefix: String) -> Result<Vec<KeyValue>, BackendError> {
        let all = self
            .run("reading a lock's contenders", {
                let prefix = prefix.clone();
                move |mut client| async move {
                    let options = GetOptions::new().with_prefix().with_sort(SortTarget::Create, SortOrder::Ascend);
                    Ok(client.get(prefix, Some(options)).await?.take_kvs())
                }
            })
            .await?;
        Ok(all.into_iter().filter(|kv| direct(kv.key(), &prefix)).collect())
    }

    /// Revokes `lease` (its keys go with it); false if it had ended already.
    async fn revoke(&self, lease: i64) -> Result<bool, BackendError> {
        self.run("revoking a lease", move |mut client| async move {
            match client.lease_revoke(lease).await {
                Ok(_) => Ok(true),
                Err(etcd_client::Error::GRpcStatus(s)) if s.message().contains("lease not found") => Ok(false),
                Err(e) => Err(e),
            }
        })
        .await
    }

    async fn grant(&self, lease: Duration) -> Result<i64, BackendError> {
        let ttl = ttl_of(lease);
        self.run("granting a lease", move |mut client| async move { Ok(client.lease_grant(ttl, None).await?.id()) })
            .await
    }

    /// Moves `held` onto a new lease of `lease` with `value`, keeping the key (and its create
    /// revision, the fence); false if the key is gone or moved meanwhile (by a call of the same
    /// token that was overtaken: its older lease is never put back).
    async fn renew(&self, held: &Held, value: Vec<u8>, lease: Duration) -> Result<bool, BackendError> {
        let granted = self.grant(lease).await?;
        let (key, revision, old) = (held.key.clone(), held.revision, held.lease);
        let moved = self
            .run("renewing a lease", move |mut client| async move {
                let txn = Txn::new()
                    .when([
                        Compare::create_revision(key.clone(), CompareOp::Equal, revision),
                        Compare::lease(key.clone(), CompareOp::Equal, old),
                    ])
                    .and_then([TxnOp::put(key, value, Some(PutOptions::new().with_lease(granted)))]);
                Ok(client.txn(txn).await?.succeeded())
            })
            .await;
        let moved = match moved {
            Ok(moved) => moved,
            Err(e) => {
                // Whether it moved is unknown: the caller believes nothing, and the lease not
                // used ends by itself.
                return Err(e);
            }
        };
        let spent = if moved { held.lease } else { granted };
        if let Err(e) = self.revoke(spent).await {
            // Only waste: a lease without keys, or the old one, which ends by itself.
            tracing::debug!(error = %e, "etcd: a lease no longer used was not revoked");
        }
        Ok(moved)
    }

    /// Deletes `held` if it is still on the lease it was read with, then revokes that lease;
    /// whether it deleted it.
    async fn vacate(&self, held: &Held) -> Result<bool, BackendError> {
        let (key, revision, lease) = (held.key.clone(), held.revision, held.lease);
        let deleted = self
            .run("releasing", move |mut client| async move {
                let txn = Txn::new()
                    .when([
                        Compare::create_revision(key.clone(), CompareOp::Equal, revision),
                        Compare::lease(key.clone(), CompareOp::Equal, lease),
                    ])
                    .and_then([TxnOp::delete(key, None)]);
                Ok(client.txn(txn).await?.succeeded())
            })
            .await?;
        if deleted && let Err(e) = self.revoke(held.lease).await {
            tracing::debug!(error = %e, "etcd: a released key's lease was not revoked (it ends by itself)");
        }
        Ok(deleted)
    }

    /// A new candidate's key under `prefix` holding `value`: the key if it is first at once,
    /// else none (and the key is gone again).
    async fn candidate(&self, prefix: String, value: &str, lease: Duration) -> Result<Option<Held>, BackendError> {
        let granted = self.grant(lease).await?;
        let key = format!("{prefix}{granted:x}");
        let (value, put_key, get_prefix) = (value.to_owned(), key.clone(), prefix.clone());
        let outcome = self
            .run("taking a lock", move |mut client| async move {
                let all =
                    GetOptions::new().with_prefix().with_keys_only().with_sort(SortTarget::Create, SortOrder::Ascend);
                let txn = Txn::new().when([Compare::create_revision(put_key.clone(), CompareOp::Equal, 0)]).and_then([
                    TxnOp::put(put_key, value, Some(PutOptions::new().with_lease(granted))),
                    TxnOp::get(get_prefix, Some(all)),
                ]);
                let response = client.txn(txn).await?;
                let mine = response.header().map_or(0, etcd_client::ResponseHeader::revision);
                let contenders = response.op_responses().into_iter().find_map(|op| match op {
                    TxnOpResponse::Get(mut get) => Some(get.take_kvs()),
                    _ => None,
                });
                Ok((mine, contenders.unwrap_or_default()))
            })
            .await;
        let (mine, contenders) = match outcome {
            Ok(outcome) => outcome,
            Err(e) => {
                // The key may have been put: the caller believes nothing, so it goes (best effort).
                let _ = self.revoke(granted).await;
                return Err(e);
            }
        };
        let first = contenders.iter().find(|kv| direct(kv.key(), &prefix)).map(KeyValue::create_revision);
        if mine > 0 && first == Some(mine) {
            return Ok(Some(Held { key: key.into_bytes(), revision: mine, lease: granted }));
        }
        self.revoke(granted).await?;
        Ok(None)
    }
}

/// Whether `key` is directly under `prefix` (a contender of that name, not of a longer one).
fn direct(key: &[u8], prefix: &str) -> bool {
    key.strip_prefix(prefix.as_bytes()).is_some_and(|rest| !rest.contains(&b'/'))
}

/// A candidate's key as held: its name, create revision and lease.
struct Held {
    key: Vec<u8>,
    revision: i64,
    lease: i64,
}

impl Held {
    fn of(kv: &KeyValue) -> Self {
        Self { key: kv.key().to_vec(), revision: kv.create_revision(), lease: kv.lease() }
    }
}

/// etcd's TTL for `lease`: whole seconds, rounded up, at least 1 (the cluster may raise it to
/// its minimum).
fn ttl_of(lease: Duration) -> i64 {
    i64::try_from(lease.as_nanos().div_ceil(1_000_000_000)).unwrap_or(i64::MAX).max(1)
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
    async fn acquire(&self, name: &str, token: &str, lease: Duration) -> Result<Option<FencingToken>, BackendError> {
        let prefix = self.contenders_prefix(name);
        let contenders = self.contenders(prefix.clone()).await?;
        if let Some(mine) = contenders.iter().find(|kv| is_token(kv, token)) {
            let holds = contenders.first().is_some_and(|first| first.key() == mine.key());
            if holds && self.renew(&Held::of(mine), token.as_bytes().to_vec(), lease).await? {
                return fence(mine.create_revision()).map(Some);
            }
            if !holds {
                // A place behind another holder (an attempt that could not remove its key): gone,
                // and the name is held.
                self.vacate(&Held::of(mine)).await?;
                return Ok(None);
            }
        } else if !contenders.is_empty() {
            return Ok(None);
        }
        match self.candidate(prefix, token, lease).await? {
            Some(held) => fence(held.revision).map(Some),
            None => Ok(None),
        }
    }

    async fn release(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        let contenders = self.contenders(self.contenders_prefix(name)).await?;
        let Some(mine) = contenders.iter().find(|kv| is_token(kv, token)) else { return Ok(false) };
        let held = contenders.first().is_some_and(|first| first.key() == mine.key());
        Ok(self.vacate(&Held::of(mine)).await? && held)
    }

    async fn locked(&self, name: &str) -> Result<bool, BackendError> {
        Ok(!self.contenders(self.contenders_prefix(name)).await?.is_empty())
    }

    async fn owned(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        Ok(self.contenders(self.contenders_prefix(name)).await?.first().is_some_and(|kv| is_token(kv, token)))
    }

    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        Some(self.watch.queues.wakeup(name, Wake::One))
    }
}
