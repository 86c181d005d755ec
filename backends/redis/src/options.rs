//! How a Redis store is reached: the server URL (with credentials, database and TLS), the key
//! prefix, the connect and command timeouts, and a private root certificate.

use std::path::PathBuf;
use std::time::Duration;

use tenure_store::{percent_decode, scheme_in, url_seconds as seconds};

use crate::open::{SCHEMES, shown_url};
use tenure_core::SettingsError;

use crate::sentinel::{self, Sentinels};

/// How long connecting (TCP, TLS, `HELLO`, `AUTH`) may take by default.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one command may wait for its answer by default.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a grant waits for `min_replicas` replicas to acknowledge it by default.
pub const DEFAULT_REPLICA_TIMEOUT: Duration = Duration::from_secs(1);

/// Options for opening a [`RedisBackend`](crate::RedisBackend).
///
/// ```no_run
/// # async fn example() -> Result<(), tenure_redis::OpenError> {
/// use std::time::Duration;
/// use tenure_redis::RedisOptions;
/// let store = RedisOptions::from_url("redis://:secret@cache.internal:6379/2")?
///     .prefix("billing:")
///     .command_timeout(Duration::from_secs(2))
///     .open(tenure_tokio::Tokio::current())
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisOptions {
    url: String,
    cluster: Vec<String>,
    sentinel: Option<Sentinels>,
    prefix: String,
    connect_timeout: Duration,
    command_timeout: Duration,
    root_certificate: Option<PathBuf>,
    min_replicas: u32,
    /// Set by the user; else [`DEFAULT_REPLICA_TIMEOUT`], at most half the command timeout.
    replica_timeout: Option<Duration>,
}

impl RedisOptions {
    /// The server at `url`: `redis://[user[:password]@]host[:port][/db]`, `rediss://…` for TLS
    /// (add `#insecure` to skip certificate checks — tests only), or `redis+unix:///path.sock`;
    /// or a Redis Cluster: `redis+cluster://[user:password@]host:port,host:port,…` (and
    /// `rediss+cluster://`), whose nodes are the seeds the cluster's layout is read from; or a
    /// master behind Redis Sentinel: `redis+sentinel://[user:password@]h1:26379,h2:26379/<master>[/<db>]`
    /// (grelmicro's grammar; the credentials are the master's, the sentinels' own password is
    /// the `sentinel_password` parameter), or `rediss+sentinel://…` to reach the sentinels and
    /// the master over TLS (`tls_root_cert`, `#insecure` as for `rediss://`). `valkey…` schemes
    /// are the same.
    /// Tenure's own query parameters are read and removed: `prefix`, `connect_timeout` and
    /// `command_timeout` (seconds), `tls_root_cert` (a PEM file trusted instead of the system's),
    /// `sentinel_password`, `min_replicas` and `replica_timeout` (seconds; see
    /// [`RedisOptions::min_replicas`]).
    pub fn from_url(url: &str) -> Result<Self, SettingsError> {
        let (base, fragment) = url.split_once('#').map_or((url, None), |(b, f)| (b, Some(f)));
        let (base, query) = base.split_once('?').unwrap_or((base, ""));
        let scheme = base.split_once("://").map(|(s, _)| s).unwrap_or_default();
        let scheme = scheme.to_ascii_lowercase();
        if !scheme_in(SCHEMES, &scheme) {
            return Err(bad_url(format!(
                "{} is not a redis://, rediss://, redis+unix://, redis+cluster://, redis+sentinel:// or \
                 rediss+sentinel:// URL",
                shown_url(url)
            )));
        }
        let cluster = scheme.ends_with("+cluster");
        let mut options = Self::new(String::new());
        let mut prefix_given = false;
        let mut sentinel_password = None;
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                "prefix" => {
                    prefix_given = true;
                    options.prefix = percent_decode(value).ok_or_else(|| bad_url("the prefix has a broken escape"))?;
                }
                "connect_timeout" => options.connect_timeout = seconds("connect_timeout", value)?,
                "command_timeout" => options.command_timeout = seconds("command_timeout", value)?,
                "replica_timeout" => options.replica_timeout = Some(seconds("replica_timeout", value)?),
                "min_replicas" => {
                    options.min_replicas = value.parse().map_err(|_| {
                        SettingsError::field(
                            "min_replicas",
                            format!("min_replicas must be a whole number, not {value:?}"),
                        )
                    })?;
                }
                "tls_root_cert" => {
                    let path = percent_decode(value).ok_or_else(|| bad_url("tls_root_cert has a broken escape"))?;
                    options.root_certificate = Some(path.into());
                }
                "sentinel_password" => {
                    let password =
                        percent_decode(value).ok_or_else(|| bad_url("sentinel_password has a broken escape"))?;
                    sentinel_password = Some(password);
                }
                _ => kept.push(pair),
            }
        }
        let mut server = base.to_owned();
        if !kept.is_empty() {
            server = format!("{server}?{}", kept.join("&"));
        }
        if let Some(fragment) = fragment {
            server = format!("{server}#{fragment}");
        }
        if cluster {
            options.cluster = cluster_nodes(&server)?;
        }
        if scheme.ends_with("+sentinel") {
            let mut sentinels = sentinel::parse(&server)?;
            sentinels.password = sentinel_password;
            options.sentinel = Some(sentinels);
        } else if sentinel_password.is_some() {
            return Err(SettingsError::field(
                "sentinel_password",
                "sentinel_password applies only to a redis+sentinel:// URL: the sentinels are what it opens",
            ));
        }
        options.url = server;
        // A cluster's prefix may still come from `.prefix()`: its hash tag is checked on open.
        options.check(prefix_given)?;
        Ok(options)
    }

    /// A Redis Cluster reached through the seed nodes `nodes` (`redis://host:port` URLs, all with
    /// the same credentials and TLS). The key prefix must then hold a hash tag.
    pub fn cluster(nodes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let nodes: Vec<String> = nodes.into_iter().map(Into::into).collect();
        let mut options = Self::new(nodes.first().cloned().unwrap_or_default());
        options.cluster = nodes;
        options
    }

    /// Whether this is a Redis Cluster.
    pub fn is_cluster(&self) -> bool {
        !self.cluster.is_empty()
    }

    pub(crate) fn cluster_nodes(&self) -> &[String] {
        &self.cluster
    }

    /// A master behind Redis Sentinel: `sentinels` (`(host, port)`) watch it under the name
    /// `master`; the master's credentials and database come from [`RedisOptions::from_url`]'s
    /// URL or stay unset here.
    pub fn sentinel(sentinels: impl IntoIterator<Item = (impl Into<String>, u16)>, master: impl Into<String>) -> Self {
        let nodes: Vec<(String, u16)> = sentinels.into_iter().map(|(h, p)| (h.into(), p)).collect();
        let master = master.into();
        let shown: Vec<String> = nodes.iter().map(|(h, p)| format!("{h}:{p}")).collect();
        let mut options = Self::new(format!("redis+sentinel://{}/{}", shown.join(","), master));
        options.sentinel = Some(Sentinels {
            nodes,
            master,
            password: None,
            settings: "redis://sentinel-master/0".into(),
            tls: false,
            insecure: false,
        });
        options
    }

    /// The sentinels' own password (they run with `requirepass`), for a master behind Sentinel.
    pub fn sentinel_password(mut self, password: impl Into<String>) -> Self {
        if let Some(sentinels) = &mut self.sentinel {
            sentinels.password = Some(password.into());
        }
        self
    }

    /// Whether the master is found through Redis Sentinel.
    pub fn is_sentinel(&self) -> bool {
        self.sentinel.is_some()
    }

    pub(crate) fn sentinels(&self) -> Option<&Sentinels> {
        self.sentinel.as_ref()
    }

    fn new(url: String) -> Self {
        Self {
            url,
            cluster: Vec::new(),
            sentinel: None,
            prefix: String::new(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
            root_certificate: None,
            min_replicas: 0,
            replica_timeout: None,
        }
    }

    /// Prepends `prefix` to every key (and to the release channels), to share one server between
    /// applications. On Redis Cluster it must hold a hash tag (`{app}:`) so a name's lock key
    /// and fence key land in one slot; a prefix with a `{` must have a well-formed tag.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// How long connecting (and reconnecting) may take before calls fail (default 5 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long a command may wait for its answer before it fails with a timeout (default 5 s).
    /// The lock and election calls are also bounded by their own `backend_timeout`.
    pub fn command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = timeout;
        self
    }

    /// Makes every grant, renewal and fence increment (of locks, task locks, elections, read-write
    /// locks and semaphores) wait until `replicas` replicas have
    /// acknowledged it (`WAIT`, in the same round trip as the write) before the holder is told it
    /// holds (default 0: Redis's asynchronous replication alone). A grant fewer replicas confirm
    /// within [`RedisOptions::replica_timeout`] is a failed grant: a new lease is given back (or
    /// left to its TTL if the master is gone), a renewal fails without being given back, a task
    /// claim fails (its run is skipped). With it, a fencing token handed out is on `replicas`
    /// replicas before anyone sees it, so a replica promoted by Sentinel continues above it.
    /// `WAIT` is not a consensus write: a replica that acknowledged may still not be the one
    /// promoted unless `replicas` is every replica (see docs/guarantees.md), and while replicas
    /// are missing each grant's `WAIT` holds the shared connection, and the calls behind it, for
    /// up to the timeout. Waiters are then woken on a release rather than handed
    /// the lock, so every grant is a write of its own holder. Not on Redis Cluster.
    pub fn min_replicas(mut self, replicas: u32) -> Self {
        self.min_replicas = replicas;
        self
    }

    /// How long a grant waits for [`RedisOptions::min_replicas`] acknowledgements (default 1 s,
    /// or half the command timeout if that is shorter; it must be less than the command timeout,
    /// which bounds the whole round trip).
    pub fn replica_timeout(mut self, timeout: Duration) -> Self {
        self.replica_timeout = Some(timeout);
        self
    }

    /// Trusts the PEM certificate(s) in `path` instead of the system's roots for `rediss://`.
    pub fn tls_root_certificate(mut self, path: impl Into<PathBuf>) -> Self {
        self.root_certificate = Some(path.into());
        self
    }

    /// The key prefix.
    pub fn key_prefix(&self) -> &str {
        &self.prefix
    }

    /// The server URL without Tenure's parameters; the password is in it.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// The server URL with any password hidden, for messages and logs.
    pub fn shown_url(&self) -> String {
        shown_url(&self.url)
    }

    pub(crate) fn connect_timeout_value(&self) -> Duration {
        self.connect_timeout
    }

    pub(crate) fn command_timeout_value(&self) -> Duration {
        self.command_timeout
    }

    pub(crate) fn root_certificate(&self) -> Option<&PathBuf> {
        self.root_certificate.as_ref()
    }

    /// `(min_replicas, replica_timeout)` when grants wait for replicas.
    pub(crate) fn replicas(&self) -> Option<(u32, Duration)> {
        (self.min_replicas > 0).then_some((self.min_replicas, self.replica_timeout_value()))
    }

    fn replica_timeout_value(&self) -> Duration {
        self.replica_timeout.unwrap_or_else(|| DEFAULT_REPLICA_TIMEOUT.min(self.command_timeout / 2))
    }

    /// Checks every option; the message names the one that is wrong.
    pub fn validate(&self) -> Result<(), SettingsError> {
        self.check(true)
    }

    fn check(&self, cluster_prefix_final: bool) -> Result<(), SettingsError> {
        let timeouts = [
            ("connect_timeout", self.connect_timeout),
            ("command_timeout", self.command_timeout),
            ("replica_timeout", self.replica_timeout_value()),
        ];
        for (field, value) in timeouts {
            if value.is_zero() {
                return Err(SettingsError::field(field, format!("{field} must be greater than zero")));
            }
        }
        if self.min_replicas > 0 {
            if self.is_cluster() {
                return Err(SettingsError::field(
                    "min_replicas",
                    "min_replicas is not supported on Redis Cluster (WAIT answers for one node, not the slot's)",
                ));
            }
            if self.replica_timeout_value() >= self.command_timeout {
                return Err(SettingsError::field(
                    "replica_timeout",
                    format!(
                        "replica_timeout ({:?}) must be less than command_timeout ({:?}), which bounds the grant and \
                         its WAIT together",
                        self.replica_timeout_value(),
                        self.command_timeout
                    ),
                ));
            }
        }
        check_prefix(&self.prefix, self.is_cluster() && cluster_prefix_final)?;
        if self.sentinel.as_ref().is_some_and(|s| s.nodes.is_empty()) {
            return Err(bad_url("Sentinel needs at least one sentinel"));
        }
        let nodes = match &self.sentinel {
            Some(sentinels) => std::slice::from_ref(&sentinels.settings),
            None if self.is_cluster() => self.cluster.as_slice(),
            None => std::slice::from_ref(&self.url),
        };
        for node in nodes {
            if redis::parse_redis_url(node).is_none() && !node.starts_with("redis+unix:") {
                return Err(bad_url(format!("{} is not a valid Redis URL", shown_url(node))));
            }
        }
        Ok(())
    }
}

impl std::fmt::Debug for RedisOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisOptions")
            .field("url", &self.shown_url())
            .field("sentinel", &self.sentinel)
            .field("prefix", &self.prefix)
            .field("connect_timeout", &self.connect_timeout)
            .field("command_timeout", &self.command_timeout)
            .field("root_certificate", &self.root_certificate)
            .field("min_replicas", &self.min_replicas)
            .field("replica_timeout", &self.replica_timeout_value())
            .finish()
    }
}

/// The Redis Cluster hash-tag rule: a script touches a name's lock key and fence key together,
/// so on a cluster both must land in one slot: the prefix must hold a hash tag (`{app}:`). Any
/// prefix with a `{` must close the tag on a non-empty name, or the keys would silently spread.
fn check_prefix(prefix: &str, cluster: bool) -> Result<(), SettingsError> {
    let tag = prefix.find('{').map(|open| prefix[open + 1..].find('}'));
    match tag {
        Some(Some(0) | None) => Err(SettingsError::field(
            "prefix",
            "the prefix opens a Redis Cluster hash tag without a non-empty closing `{…}` (write e.g. `{app}:`)",
        )),
        None if cluster => Err(SettingsError::field(
            "prefix",
            "a Redis Cluster needs a hash tag in the key prefix (e.g. `{app}:`) so every key of a lock \
             lands in one slot",
        )),
        _ => Ok(()),
    }
}

/// The node URLs of `redis+cluster://[userinfo@]h1:p1,h2:p2[/0][?params][#fragment]`.
fn cluster_nodes(url: &str) -> Result<Vec<String>, SettingsError> {
    let (scheme, rest) = url.split_once("://").unwrap_or((url, ""));
    let scheme = scheme.replace("+cluster", "");
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let (userinfo, hosts) = authority.rsplit_once('@').map_or(("", authority), |(u, h)| (u, h));
    let path_end = tail.find(['?', '#']).unwrap_or(tail.len());
    if !matches!(&tail[..path_end], "" | "/" | "/0") {
        return Err(bad_url("a Redis Cluster has only database 0"));
    }
    let at = if userinfo.is_empty() { String::new() } else { format!("{userinfo}@") };
    let nodes: Vec<String> = hosts
        .split(',')
        .filter(|h| !h.is_empty())
        .map(|h| format!("{scheme}://{at}{h}{}", &tail[path_end..]))
        .collect();
    if nodes.is_empty() {
        return Err(bad_url(format!("{} names no cluster node", shown_url(url))));
    }
    Ok(nodes)
}

fn bad_url(message: impl Into<String>) -> SettingsError {
    SettingsError::field("url", message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenure_parameters_are_read_and_removed() {
        let o = RedisOptions::from_url("redis://h:6380/2?prefix=%7Bapp%7D%3A&command_timeout=0.5&protocol=resp3")
            .expect("valid");
        assert_eq!(o.key_prefix(), "{app}:");
        assert_eq!(o.command_timeout_value(), Duration::from_millis(500));
        assert_eq!(o.connect_timeout_value(), DEFAULT_CONNECT_TIMEOUT);
        assert_eq!(o.url(), "redis://h:6380/2?protocol=resp3");
    }

    #[test]
    fn bad_urls_and_values_are_named_without_the_password() {
        let e = RedisOptions::from_url("http://u:hunter2@h").expect_err("not redis");
        assert_eq!(e.field_name(), Some("url"));
        assert!(!e.to_string().contains("hunter2"), "{e}");
        for bad in ["redis://h?command_timeout=0", "redis://h?connect_timeout=nan", "redis://h?command_timeout=-1"] {
            let e = RedisOptions::from_url(bad).expect_err(bad);
            assert!(e.to_string().contains("timeout"), "{bad}: {e}");
        }
        let e = RedisOptions::from_url("redis://h?prefix=%7Bapp:").expect_err("open tag");
        assert!(e.to_string().contains("hash tag"), "{e}");
        let e = RedisOptions::from_url("redis://h?prefix=%7B%7D:").expect_err("empty tag");
        assert!(e.to_string().contains("hash tag"), "{e}");
        let e = RedisOptions::from_url("redis+cluster://h1:7000,h2:7001?prefix=app:").expect_err("no tag");
        assert!(e.to_string().contains("hash tag"), "{e}");
        let e = RedisOptions::from_url("redis+cluster://h1:7000/3?prefix=%7Bapp%7D:").expect_err("db 3");
        assert!(e.to_string().contains("database 0"), "{e}");
    }

    #[test]
    fn sentinel_urls_name_the_sentinels_the_master_and_hide_both_passwords() {
        let url = "valkey+sentinel://:m%40ster@a:26380,b/mymaster/2?sentinel_password=s%2Fp&prefix=app:";
        let o = RedisOptions::from_url(url).expect("valid");
        let sentinels = o.sentinels().expect("sentinel");
        assert_eq!(sentinels.nodes, [("a".to_owned(), 26380), ("b".to_owned(), crate::DEFAULT_SENTINEL_PORT)]);
        assert_eq!((sentinels.master.as_str(), sentinels.password.as_deref()), ("mymaster", Some("s/p")));
        assert_eq!(sentinels.settings, "redis://:m%40ster@sentinel-master/2");
        assert_eq!(o.key_prefix(), "app:");
        let shown = format!("{o:?} {}", o.shown_url());
        assert!(!shown.contains("m%40ster") && !shown.contains("s/p") && !shown.contains("s%2Fp"), "{shown}");
        let e = RedisOptions::from_url("redis://:pw@h/0?sentinel_password=x").expect_err("not sentinel");
        assert_eq!(e.field_name(), Some("sentinel_password"));
        let built = RedisOptions::sentinel([("h1", 26379), ("h2", 26380)], "primary").sentinel_password("sp");
        assert!(built.is_sentinel() && built.validate().is_ok());
        assert_eq!(built.shown_url(), "redis+sentinel://h1:26379,h2:26380/primary");
        let none = RedisOptions::sentinel(Vec::<(String, u16)>::new(), "m");
        assert!(none.validate().expect_err("no sentinel").to_string().contains("at least one sentinel"));
    }

    #[test]
    fn cluster_urls_name_their_seed_nodes() {
        let o =
            RedisOptions::from_url("rediss+cluster://:pw@h1:7000,h2:7001/?prefix=%7Bapp%7D:&protocol=resp3#insecure")
                .expect("valid");
        assert!(o.is_cluster());
        assert_eq!(
            o.cluster_nodes(),
            ["rediss://:pw@h1:7000?protocol=resp3#insecure", "rediss://:pw@h2:7001?protocol=resp3#insecure"]
        );
        assert_eq!(o.key_prefix(), "{app}:");
    }
}
