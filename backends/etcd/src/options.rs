//! How an etcd cluster is reached: its endpoints (any member; the client fails over between
//! them), credentials, the key prefix, and the connect and command timeouts.

use std::time::Duration;

use tenure::backend::{StoreKind, percent_decode, shown_url, url_seconds as seconds};
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
    /// The URL as it may be shown (no password).
    pub(crate) shown: String,
}

impl std::fmt::Debug for EtcdOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdOptions")
            .field("url", &self.shown)
            .field("prefix", &self.prefix)
            .field("connect_timeout", &self.connect_timeout)
            .field("command_timeout", &self.command_timeout)
            .finish_non_exhaustive()
    }
}

impl EtcdOptions {
    /// The cluster at `url`: `etcd://[user:password@]host:port[,host:port…][/]`, with Tenure's
    /// parameters `prefix` (put before every key, default none), `connect_timeout` and
    /// `command_timeout` (seconds). A name's keys live under `<prefix><name>/`, one per contender,
    /// as etcd's own `concurrency.Mutex` lays them out.
    pub fn from_url(url: &str) -> Result<Self, SettingsError> {
        let shown = shown_url(url);
        let (scheme, rest) = url.split_once("://").ok_or_else(|| bad_url(format!("{shown} is not an etcd:// URL")))?;
        if !StoreKind::Etcd.accepts(&scheme.to_ascii_lowercase()) {
            return Err(bad_url(format!("{shown} is not an etcd:// URL")));
        }
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
            endpoints.push(format!("http://{name}:{port}"));
        }
        let mut options = Self {
            endpoints,
            user,
            prefix: String::new(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
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
                other => {
                    // Named only if it looks like a parameter: a password holding `?` would put
                    // part of itself here.
                    let named = other.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
                    let what =
                        if named { format!("{other} is not one of its parameters") } else { "one is not".to_owned() };
                    return Err(bad_url(format!(
                        "an etcd:// URL takes the parameters prefix, connect_timeout and command_timeout; {what}"
                    )));
                }
            }
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

    /// The members' client URLs, as `etcd-client` takes them.
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
        ] {
            let e = EtcdOptions::from_url(url).expect_err(url).to_string();
            assert!(e.contains(words), "{url}: {e}");
            assert!(!e.contains("pw@"), "{url}: {e}");
        }
    }
}
