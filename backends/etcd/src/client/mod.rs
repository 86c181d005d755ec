//! The store's own etcd v3 client: gRPC over tonic, with the message and client code generated
//! from etcd's protocol files and kept in the repository (`src/pb`, generated again and compared
//! by the test of `backends/etcd/codegen`), so that building this crate needs no protobuf
//! compiler.
//!
//! It does what the store asks of a client and nothing more: one balanced channel over every
//! endpoint (members leave and rejoin it, see `health`), a bounded connect and request time,
//! HTTP/2 pings, `hasleader` on every request (a member without a leader refuses at once), a
//! login with a user's password and one more login when the cluster says the token expired,
//! ranges and transactions, lease grants, one-shot refreshes, revokes and lookups, and a watch.

mod error;
mod kv;
mod stream;

use std::future::Future;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tonic::metadata::{AsciiMetadataValue, MetadataValue};
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::channel::Change;
use tonic::transport::{Channel, Endpoint, Uri};

use crate::pb::etcdserverpb as rpc;
pub(crate) use error::Error;
pub(crate) use kv::{Compare, CompareOp, GetOptions, GetResponse, PutOptions, SortOrder, SortTarget, Txn, TxnOp};
pub(crate) use kv::{TxnOpResponse, TxnResponse};
pub(crate) use stream::{WatchStream, is_deletion};
pub(crate) use tonic::transport::{Certificate, ClientTlsConfig as TlsOptions, Identity};

/// A key and its value with their revisions and lease, as etcd answers them.
pub(crate) type KeyValue = crate::pb::mvccpb::KeyValue;

/// How a [`Client`] reaches the members. (No `Debug`: it holds the password.)
#[derive(Clone, Default)]
pub(crate) struct ConnectOptions {
    connect_timeout: Option<Duration>,
    timeout: Option<Duration>,
    /// HTTP/2 pings: their interval and how long one may wait for its answer.
    keep_alive: Option<(Duration, Duration)>,
    require_leader: bool,
    user: Option<(String, String)>,
    tls: Option<TlsOptions>,
}

impl ConnectOptions {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// How long connecting to a member may take.
    pub(crate) fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }

    /// How long a request may wait for its answer.
    pub(crate) fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Pings every `interval` while calls or watches are open (etcd refuses pings on an idle
    /// connection); a ping unanswered within `timeout` drops the connection.
    pub(crate) fn with_keep_alive(mut self, interval: Duration, timeout: Duration) -> Self {
        self.keep_alive = Some((interval, timeout));
        self
    }

    /// Every request asks for a member that has a leader.
    pub(crate) fn with_require_leader(mut self, require: bool) -> Self {
        self.require_leader = require;
        self
    }

    /// Logs in as `user`.
    pub(crate) fn with_user(mut self, user: String, password: String) -> Self {
        self.user = Some((user, password));
        self
    }

    /// TLS to members named by `https://` endpoints.
    pub(crate) fn with_tls(mut self, tls: TlsOptions) -> Self {
        self.tls = Some(tls);
        self
    }

    /// The channel endpoint for `url` (`http://host:port` or `https://host:port`).
    fn endpoint(&self, url: &str) -> Result<Endpoint, Error> {
        let mut endpoint = Endpoint::from_shared(url.to_owned())
            .map_err(|e| Error::Invalid(format!("the endpoint {url} is not a URL: {e}")))?;
        if url.starts_with("https://") {
            endpoint = endpoint
                .tls_config(self.tls.clone().unwrap_or_default())
                .map_err(|e| Error::Invalid(format!("the TLS settings for {url} cannot be used: {}", chain(&e))))?;
        }
        if let Some((interval, timeout)) = self.keep_alive {
            endpoint =
                endpoint.http2_keep_alive_interval(interval).keep_alive_timeout(timeout).keep_alive_while_idle(false);
        }
        if let Some(timeout) = self.timeout {
            endpoint = endpoint.timeout(timeout);
        }
        if let Some(timeout) = self.connect_timeout {
            endpoint = endpoint.connect_timeout(timeout);
        }
        Ok(endpoint)
    }
}

/// A client of one cluster: cheap to clone, every clone on the same channel and login.
#[derive(Clone)]
pub(crate) struct Client {
    channel: Channel,
    changes: tokio::sync::mpsc::Sender<Change<Uri, Endpoint>>,
    options: Arc<ConnectOptions>,
    login: Arc<Login>,
    /// How many members it was given: a call refused for want of a leader goes again only
    /// where there is another member to go to.
    members: usize,
}

/// The login token the requests carry, and how to get a new one.
#[derive(Default)]
struct Login {
    token: RwLock<Option<AsciiMetadataValue>>,
    /// One login at a time: calls that found the same token expired log in once.
    renewing: tokio::sync::Mutex<()>,
}

impl Login {
    fn token(&self) -> Option<AsciiMetadataValue> {
        self.token.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

/// What every request carries: `hasleader` where asked for, and the login token but on a login.
#[derive(Clone)]
struct Metadata {
    require_leader: bool,
    login: Option<Arc<Login>>,
}

impl Interceptor for Metadata {
    fn call(&mut self, mut request: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if self.require_leader {
            request.metadata_mut().insert("hasleader", MetadataValue::from_static("true"));
        }
        if let Some(token) = self.login.as_ref().and_then(|login| login.token()) {
            request.metadata_mut().insert("token", token);
        }
        Ok(request)
    }
}

type Intercepted = InterceptedService<Channel, Metadata>;

impl Client {
    /// A client balancing over `endpoints`, logged in if `options` name a user (so a wrong
    /// password fails here). Must be called on a tokio runtime: the balancer runs there.
    pub(crate) async fn connect<S: AsRef<str>>(
        endpoints: impl IntoIterator<Item = S>,
        options: ConnectOptions,
    ) -> Result<Self, Error> {
        let endpoints: Vec<S> = endpoints.into_iter().collect();
        if endpoints.is_empty() {
            return Err(Error::Invalid("no endpoint to connect to".to_owned()));
        }
        let (channel, changes) = Channel::balance_channel(64);
        let members = endpoints.len();
        let client = Self { channel, changes, options: Arc::new(options), login: Arc::default(), members };
        for endpoint in &endpoints {
            client.add_endpoint(endpoint.as_ref()).await?;
        }
        if client.options.user.is_some() {
            client.log_in(None).await?;
        }
        Ok(client)
    }

    /// Puts `url`'s member (back) into the balancer.
    pub(crate) async fn add_endpoint(&self, url: &str) -> Result<(), Error> {
        let endpoint = self.options.endpoint(url)?;
        self.change(Change::Insert(endpoint.uri().clone(), endpoint)).await
    }

    /// Takes `url`'s member out of the balancer.
    pub(crate) async fn remove_endpoint(&self, url: &str) -> Result<(), Error> {
        let uri = url.parse::<Uri>().map_err(|e| Error::Invalid(format!("the endpoint {url} is not a URL: {e}")))?;
        self.change(Change::Remove(uri)).await
    }

    async fn change(&self, change: Change<Uri, Endpoint>) -> Result<(), Error> {
        self.changes.send(change).await.map_err(|_| Error::Invalid("the client's balancer has stopped".to_owned()))
    }

    fn metadata(&self, with_token: bool) -> Metadata {
        Metadata { require_leader: self.options.require_leader, login: with_token.then(|| self.login.clone()) }
    }

    fn kv(&self) -> rpc::kv_client::KvClient<Intercepted> {
        rpc::kv_client::KvClient::with_interceptor(self.channel.clone(), self.metadata(true))
    }

    fn leases(&self) -> rpc::lease_client::LeaseClient<Intercepted> {
        rpc::lease_client::LeaseClient::with_interceptor(self.channel.clone(), self.metadata(true))
    }

    fn watches(&self) -> rpc::watch_client::WatchClient<Intercepted> {
        rpc::watch_client::WatchClient::with_interceptor(self.channel.clone(), self.metadata(true))
    }

    /// Logs in unless another call replaced the token `stale` (the one it found expired) already.
    async fn log_in(&self, stale: Option<AsciiMetadataValue>) -> Result<(), Error> {
        let Some((name, password)) = &self.options.user else { return Ok(()) };
        let _turn = self.login.renewing.lock().await;
        if stale.is_some() && self.login.token() != stale {
            return Ok(());
        }
        let mut auth = rpc::auth_client::AuthClient::with_interceptor(self.channel.clone(), self.metadata(false));
        let request = rpc::AuthenticateRequest { name: name.clone(), password: password.clone() };
        let token = auth.authenticate(request).await?.into_inner().token;
        let token = token
            .parse()
            .map_err(|_| Error::Invalid("the cluster answered a login token that is not ASCII".to_owned()))?;
        *self.login.token.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(token);
        Ok(())
    }

    /// Runs `call`, and once more after a new login if the cluster says the token expired
    /// (which it checks before it applies anything: a retried write is never applied twice).
    /// A member without a leader refuses at once (`hasleader`), before it applies anything: with
    /// several members the call goes again, the balancer sending it to a member picked afresh,
    /// up to [`NO_LEADER_TRIES`] times — so a process that opens the store while one member is
    /// cut from the others does not fail on it (the health probes take a member out only after a
    /// while). With one member it fails at once, as before: going back to the same member only
    /// kept the call going past its caller's timeout, and a take applied then held the name for
    /// nobody (a single member's chaos test stopped recovering).
    async fn call<T, F: Future<Output = Result<T, tonic::Status>>>(&self, call: impl Fn() -> F) -> Result<T, Error> {
        let mut tries = 1;
        loop {
            let sent = self.login.token();
            match call().await {
                Err(status) if self.options.user.is_some() && expired_token(status.code(), status.message()) => {
                    self.log_in(sent).await?;
                    return Ok(call().await?);
                }
                Err(status) if no_leader(&status) && self.members > 1 && tries < NO_LEADER_TRIES => {
                    // (a pause: the balancer picks among members it is connected to, and those
                    // it is still connecting to join them meanwhile)
                    tokio::time::sleep(NO_LEADER_PAUSE * tries).await;
                    tries += 1;
                }
                answer => return Ok(answer?),
            }
        }
    }

    /// The keys `key` and `options` name.
    pub(crate) async fn get(&self, key: impl Into<Vec<u8>>, options: Option<GetOptions>) -> Result<GetResponse, Error> {
        let request = options.unwrap_or_default().range(key.into());
        self.call(|| async { Ok(GetResponse(self.kv().range(request.clone()).await?.into_inner())) }).await
    }

    /// Puts `value` under `key` (without a lease): the store puts keys in transactions only,
    /// but `benches/etcd.rs` (which compiles this module too) measures one write's commit.
    #[allow(dead_code)]
    pub(crate) async fn put(&self, key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) -> Result<(), Error> {
        let request = rpc::PutRequest { key: key.into(), value: value.into(), ..Default::default() };
        self.call(|| async { self.kv().put(request.clone()).await.map(drop) }).await
    }

    /// Runs `txn` in one revision.
    pub(crate) async fn txn(&self, txn: Txn) -> Result<TxnResponse, Error> {
        let request = txn.into_request();
        self.call(|| async { Ok(TxnResponse(self.kv().txn(request.clone()).await?.into_inner())) }).await
    }

    /// A new lease of `ttl` seconds; its id.
    pub(crate) async fn lease_grant(&self, ttl: i64) -> Result<i64, Error> {
        let request = rpc::LeaseGrantRequest { ttl, id: 0 };
        self.call(|| async { Ok(self.leases().lease_grant(request).await?.into_inner().id) }).await
    }

    /// Ends lease `id` and deletes its keys; false if it had ended already.
    pub(crate) async fn lease_revoke(&self, id: i64) -> Result<bool, Error> {
        let revoked = self.call(|| async { self.leases().lease_revoke(rpc::LeaseRevokeRequest { id }).await }).await;
        match revoked {
            Ok(_) => Ok(true),
            Err(Error::Status(status)) if status.message().contains("lease not found") => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Lease `id`'s remaining and granted TTL in seconds (a remaining TTL of -1: it ended).
    pub(crate) async fn lease_time_to_live(&self, id: i64) -> Result<rpc::LeaseTimeToLiveResponse, Error> {
        let request = rpc::LeaseTimeToLiveRequest { id, keys: false };
        self.call(|| async { Ok(self.leases().lease_time_to_live(request).await?.into_inner()) }).await
    }

    /// Refreshes lease `id` to its whole TTL, once; false if it ended.
    pub(crate) async fn lease_keep_alive(&self, id: i64) -> Result<bool, Error> {
        self.call(|| stream::keep_alive_once(self.leases(), id)).await
    }

    /// Watches the deletions of every key under `prefix`, once the cluster confirmed the watch.
    /// A watch made with an expired token is not refused with a status but created cancelled,
    /// with the reason: then once more after a new login. (etcd 3.4 gives such a watch the
    /// reason "permission denied", as it does a user without the right, so that reason also
    /// logs in once more; a user without the right is refused again, and the watch backs off.)
    pub(crate) async fn watch_deletions(&self, prefix: &str) -> Result<WatchStream, Error> {
        let watch = || async {
            self.call(|| stream::watch_deletions(self.watches(), prefix.as_bytes())).await?.created().await
        };
        let sent = self.login.token();
        match watch().await {
            Err(Error::Refused(reason))
                if self.options.user.is_some()
                    && (reason.contains("permission denied") || expired_token(tonic::Code::Ok, &reason)) =>
            {
                self.log_in(sent).await?;
                watch().await
            }
            answer => answer,
        }
    }
}

/// How many times a call goes to members picked afresh while each answers it has no leader,
/// and the pause before the next time (times the tries so far: 375 ms in all at most; 200 ms
/// left a fresh process's first calls failing on a cut member, the others not connected yet).
const NO_LEADER_TRIES: u32 = 6;
const NO_LEADER_PAUSE: Duration = Duration::from_millis(25);

/// Whether a member refused a call for having no leader (etcd's `ErrNoLeader`, answered before
/// anything is applied).
fn no_leader(status: &tonic::Status) -> bool {
    status.code() == tonic::Code::Unavailable && status.message() == "etcdserver: no leader"
}

/// `e` and its causes, one after the other.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text = format!("{text}: {cause}");
        source = cause.source();
    }
    text
}

/// Whether an answer with `code` and `message` says the login token is no longer good: etcd
/// answers `Unauthenticated`, or one of these messages under other codes (an invalid token
/// after a restart, users or roles changed since the token was issued, no token at all), which
/// a refused watch carries inside its reason (`rpc error: code = … desc = …`) from etcd 3.5.
/// etcd's own Go client logs in again on the same messages, whatever the code.
fn expired_token(code: tonic::Code, message: &str) -> bool {
    const STALE: [&str; 3] = [
        "etcdserver: invalid auth token",
        "etcdserver: revision of auth store is old",
        "etcdserver: user name is empty",
    ];
    code == tonic::Code::Unauthenticated || STALE.iter().any(|stale| message.contains(stale))
}

#[cfg(test)]
mod tests {
    use tonic::Code;

    #[test]
    fn a_stale_token_is_told_by_etcds_messages_whatever_their_code() {
        assert!(super::expired_token(Code::Unauthenticated, "etcdserver: invalid auth token"));
        assert!(super::expired_token(Code::InvalidArgument, "etcdserver: revision of auth store is old"));
        assert!(super::expired_token(Code::InvalidArgument, "etcdserver: user name is empty"));
        // A refused watch's reason, as etcd 3.5 and later write it.
        assert!(super::expired_token(
            Code::Ok,
            "rpc error: code = Unauthenticated desc = etcdserver: invalid auth token"
        ));
        assert!(!super::expired_token(Code::PermissionDenied, "etcdserver: permission denied"));
        assert!(!super::expired_token(Code::Unavailable, "etcdserver: no leader"));
    }
}
