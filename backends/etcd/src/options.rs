//! How an etcd cluster is reached: its endpoints (any member; the client fails over between
//! them), credentials, the key prefix, and the connect and command timeouts.

use std::time::Duration;

use tenure_store::{percent_decode, scheme_in, url_seconds as seconds};

use crate::open::{SCHEMES, shown_url};
use tenure_core::SettingsError;

/// How long connecting may take by default.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one request may wait for its answer by default.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(5);

/// Options for opening an [`EtcdBackend`](crate::EtcdBackend).
#[derive(Clone)]
pub struct EtcdOptions {
    pub(crate) endpoints: Vec<String>,
    pub(crate) user: Option<(String, String)>,
    pub(crate) prefix: String,
    pub(crate) connect_timeout: Duration,
    pub(crate) command_timeout: Duration,
    /// TLS (`etcds://`): the certificate authorities to trust and a client identity.
    pub(crate) tls: Option<Tls>,
    /// The URL as it may be shown (no password).
    pub(crate) shown: String,
}

/// TLS to the cluster's members: the CA file to trust (none: the system's roots) and a client
/// certificate and key for members that require one (PEM files).
#[derive(Clone, Debug, Default)]
pub(crate) struct Tls {
    pub(crate) ca: Option<std::path::PathBuf>,
    pub(crate) cert: Option<std::path::PathBuf>,
    pub(crate) key: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for EtcdOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdOptions")
            .field("url", &self.shown)
            .field("prefix", &self.prefix)
            .field("connect_timeout", &self.connect_timeout)
            .field("command_timeout", &self.command_timeout)
            .field("tls", &self.tls)
            .finish_non_exhaustive()
    }
}

impl EtcdOptions {
    /// The cluster at `url`: `etcd://[user:password@]host:port[,host:port…][/]` (or `etcds://`
    /// for TLS), with Tenure's parameters `prefix` (put before every key, default none),
    /// `connect_timeout` and `command_timeout` (seconds), and for `etcds://` `ca` (a PEM file of
    /// the certificate authorities to trust; default the system's) and `cert` + `key` (a client
    /// certificate and its key, PEM files, for members started with `--client-cert-auth`). A
    /// name's keys live under `<prefix><name>/`, one per contender, as etcd's own
    /// `concurrency.Mutex` lays them out.
    pub fn from_url(url: &str) -> Result<Self, SettingsError> {
        let shown = shown_url(url);
        let (scheme, rest) = url.split_once("://").ok_or_else(|| bad_url(format!("{shown} is not an etcd:// URL")))?;
        let scheme = scheme.to_ascii_lowercase();
        if !scheme_in(SCHEMES, &scheme) {
            return Err(bad_url(format!("{shown} is not an etcd:// URL")));
        }
        let secure = scheme == "etcds";
        let (base, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, path) = base.split_once('/').unwrap_or((base, ""));
        if !path.is_empty() {
            return Err(bad_url(format!("{shown} has a path; give a key prefix as ?prefix=…")));
        }
        let (userinfo, hosts) = authority.rsplit_once('@').map_or((None, authority), |(u, h)| (Some(u), h));
        let user = userinfo
            .map(|info| {
                let (user, password) = info.split_once(':').unwrap_or((info, ""));
                let decode = |text: &str, what: &str| {
                    percent_decode(text)
                        .ok_or_else(|| bad_url(format!("the {what} in {shown} is not valid percent-encoded UTF-8")))
                };
                Ok::<_, SettingsError>((decode(user, "user")?, decode(password, "password")?))
            })
            .transpose()?;
        let mut endpoints = Vec::new();
        for host in hosts.split(',') {
            let (name, port) = host.rsplit_once(':').unwrap_or((host, "2379"));
            let port: u16 = port.parse().ok().filter(|p| *p > 0).ok_or_else(|| {
                bad_url(format!("{shown} has an endpoint whose port is not a number from 1 to 65535"))
            })?;
            if name.is_empty() {
                return Err(bad_url(format!("{shown} has an endpoint with no host")));
            }
            endpoints.push(format!("{}://{name}:{port}", if secure { "https" } else { "http" }));
        }
        let mut options = Self {
            endpoints,
            user,
            prefix: String::new(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
            tls: secure.then(Tls::default),
            shown,
        };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = percent_decode(value)
                .ok_or_else(|| bad_url("a parameter is not valid percent-encoded UTF-8".to_owned()))?;
            match key {
                "prefix" => options.prefix = value,
                "connect_timeout" => options.connect_timeout = seconds("connect_timeout", &value)?,
                "command_timeout" => options.command_timeout = seconds("command_timeout", &value)?,
                "ca" | "cert" | "key" => {
                    let Some(tls) = options.tls.as_mut() else {
                        return Err(bad_url(format!("{key} is a TLS parameter: give it with an etcds:// URL")));
                    };
                    let path = Some(std::path::PathBuf::from(value));
                    match key {
                        "ca" => tls.ca = path,
                        "cert" => tls.cert = path,
                        _ => tls.key = path,
                    }
                }
                other => {
                    // Named only if it looks like a parameter: a password holding `?` would put
                    // part of itself here.
                    let named = other.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
                    let what =
                        if named { format!("{other} is not one of its parameters") } else { "one is not".to_owned() };
                    return Err(bad_url(format!(
                        "an etcd:// URL takes the parameters prefix, connect_timeout, command_timeout, and with \
                         etcds:// ca, cert and key; {what}"
                    )));
                }
            }
        }
        if let Some(tls) = &options.tls
            && tls.cert.is_some() != tls.key.is_some()
        {
            return Err(bad_url("a client certificate needs both cert and key".to_owned()));
        }
        Ok(options)
    }

    /// Puts `prefix` before every key.
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// How long one request may wait for its answer.
    #[must_use]
    pub fn command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = timeout;
        self
    }

    /// The members' client URLs, as the client takes them.
    pub fn endpoints(&self) -> &[String] {
        &self.endpoints
    }

    /// The URL as it may be shown in messages (no password).
    pub fn shown_url(&self) -> &str {
        &self.shown
    }
}

fn bad_url(message: String) -> SettingsError {
    SettingsError::field("url", message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_credentials_and_parameters_are_read_and_nothing_shows_the_password() {
        let o = EtcdOptions::from_url("etcd://app:s3cr%40t@h1:2379,h2:22379/?prefix=/svc/&command_timeout=0.5")
            .expect("a good URL");
        assert_eq!(o.endpoints, ["http://h1:2379", "http://h2:22379"]);
        assert_eq!(o.user, Some(("app".to_owned(), "s3cr@t".to_owned())));
        assert_eq!((o.prefix.as_str(), o.command_timeout), ("/svc/", Duration::from_millis(500)));
        assert!(!format!("{o:?}").contains("s3cr"));
        assert_eq!(EtcdOptions::from_url("etcd://h").expect("no port").endpoints, ["http://h:2379"]);
        let tls = EtcdOptions::from_url("etcds://h1,h2:2380/?ca=/etc/etcd/ca%20file.pem&cert=c.pem&key=k.pem")
            .expect("a TLS URL");
        assert_eq!(tls.endpoints, ["https://h1:2379", "https://h2:2380"]);
        let files = tls.tls.expect("TLS");
        assert_eq!(files.ca.as_deref(), Some(std::path::Path::new("/etc/etcd/ca file.pem")));
        assert_eq!((files.cert.is_some(), files.key.is_some()), (true, true));
        assert!(EtcdOptions::from_url("etcds://h").expect("system roots").tls.is_some_and(|t| t.ca.is_none()));
    }

    #[test]
    fn bad_urls_say_what_is_wrong_without_the_password() {
        for (url, words) in [
            ("redis://h:1", "is not an etcd:// URL"),
            ("etcd://u:pw@h:0", "port is not a number"),
            ("etcd://u:pw@h:1,:2", "no host"),
            ("etcd://u:pw@h:1/db", "has a path"),
            ("etcd://u:pw@h:1?ttl=3", "ttl is not one of its parameters"),
            ("etcd://u:pw@h:1?command_timeout=-1", "command_timeout must be a positive number"),
            ("etcd://u:p?w@h:1/?prefix=x", "not a number"),
            ("etcd://h:1/?pw@x=1", "; one is not"),
            ("etcd://u:pw@h:1/?ca=/tmp/ca.pem", "give it with an etcds:// URL"),
            ("etcds://u:pw@h:1/?cert=/tmp/c.pem", "needs both cert and key"),
        ] {
            let e = EtcdOptions::from_url(url).expect_err(url).to_string();
            assert!(e.contains(words), "{url}: {e}");
            assert!(!e.contains("pw@"), "{url}: {e}");
        }
    }
}
