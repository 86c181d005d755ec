//! grelmicro's provider settings: a store given in code (`url=`, `host=`, `port=`, …) or by the
//! environment (`REDIS_URL`, `POSTGRES_HOST`, `SQLITE_PATH`, …), read into one URL.
//!
//! The rules, as grelmicro 0.44's providers read them:
//!
//! - **Redis** (`REDIS_` by default): `url` or `host`, not both; with neither, `{prefix}URL` xor
//!   `{prefix}HOST`, and then `{prefix}PORT` (6379), `{prefix}DB` (0), `{prefix}PASSWORD` for
//!   what was not given in code. A password given apart from a URL that carries none goes into
//!   it (a URL with credentials and a password besides is an error: they may disagree). The
//!   sentinels' password is `sentinel_password`, else `{prefix}SENTINEL_PASSWORD` when the
//!   environment named the store; it applies to a `redis+sentinel://` URL only (with another, it
//!   is ignored with a warning, as grelmicro does: one environment often serves several services).
//! - **PostgreSQL** (`POSTGRES_`): the same for the address, with `{prefix}PORT` (5432),
//!   `{prefix}DB` or else `{prefix}DATABASE`, `{prefix}USER`, `{prefix}PASSWORD`; and
//!   `command_timeout`, else `{prefix}COMMAND_TIMEOUT` (seconds), whatever named the address.
//! - **SQLite** (`SQLITE_`): `path`, else `{prefix}PATH`; `{prefix}SYNCHRONOUS` (`full` or
//!   `normal`).
//!
//! A value that is wrong is a [`SettingsError`] whose field is the keyword or the variable.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tenure_store::{percent_encode, url_seconds};

use crate::StoreKind;
use tenure_core::{EnvVars, SettingsError};

/// Settings given in code beside (or instead of) a URL, as grelmicro's providers take them;
/// what is left `None` may come from the environment.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct Keywords {
    /// The whole URL.
    pub url: Option<String>,
    /// The host (Redis, PostgreSQL), instead of a URL.
    pub host: Option<String>,
    /// The port.
    pub port: Option<u16>,
    /// The Redis database number.
    pub db: Option<u32>,
    /// The PostgreSQL database.
    pub database: Option<String>,
    /// The PostgreSQL user.
    pub user: Option<String>,
    /// The password.
    pub password: Option<String>,
    /// The Redis sentinels' own password.
    pub sentinel_password: Option<String>,
    /// The SQLite file.
    pub path: Option<PathBuf>,
    /// The bound on one PostgreSQL statement.
    pub command_timeout: Option<Duration>,
}

impl std::fmt::Debug for Keywords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keywords")
            .field("url", &self.url.as_deref().map(crate::shown_url))
            .field("host", &self.host)
            .field("port", &self.port)
            .field("db", &self.db)
            .field("database", &self.database)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("sentinel_password", &self.sentinel_password.as_ref().map(|_| "***"))
            .field("path", &self.path)
            .field("command_timeout", &self.command_timeout)
            .finish()
    }
}

/// The URL of the `kind` store that `keywords`, else the variables `vars` under `prefix`, name.
/// The URL holds the password, if one was given: show it through
/// [`shown_url`](crate::shown_url).
pub fn resolve_url(
    kind: StoreKind,
    keywords: &Keywords,
    prefix: &str,
    vars: &EnvVars,
) -> Result<String, SettingsError> {
    (kind.entry().settings)(keywords, &Env { prefix, vars })
}

/// The variables under one prefix.
pub(crate) struct Env<'a> {
    prefix: &'a str,
    vars: &'a EnvVars,
}

impl Env<'_> {
    fn name(&self, field: &str) -> String {
        format!("{}{field}", self.prefix)
    }

    /// The variable's value, trimmed; unset and blank are the same.
    fn get(&self, field: &str) -> Option<&str> {
        self.vars.get(&self.name(field)).map(str::trim).filter(|v| !v.is_empty())
    }

    fn number<T: std::str::FromStr>(&self, field: &str, rule: &str) -> Result<Option<T>, SettingsError> {
        let Some(text) = self.get(field) else { return Ok(None) };
        let name = self.name(field);
        text.parse().map(Some).map_err(|_| SettingsError::field(&name, format!("{name} must be {rule}")))
    }
}

/// Where the address came from.
enum Address {
    Url(String),
    /// A host, and whether the environment named it (then it names the other fields too).
    Host(String, bool),
}

/// `url` xor `host` in code, else `{prefix}URL` xor `{prefix}HOST`.
fn address(keywords: &Keywords, env: &Env<'_>) -> Result<Address, SettingsError> {
    match (&keywords.url, &keywords.host) {
        (Some(_), Some(_)) => Err(SettingsError::field("url", "pass either url or host, not both")),
        (Some(url), None) => Ok(Address::Url(url.clone())),
        (None, Some(host)) => Ok(Address::Host(host.clone(), false)),
        (None, None) => {
            let (url_var, host_var) = (env.name("URL"), env.name("HOST"));
            match (env.get("URL"), env.get("HOST")) {
                (Some(_), Some(_)) => {
                    Err(SettingsError::field(&url_var, format!("set either {url_var} or {host_var}, not both")))
                }
                (None, None) => Err(SettingsError::field(
                    &url_var,
                    format!("no store given: pass url or host, or set {url_var} or {host_var}"),
                )),
                (Some(url), None) => Ok(Address::Url(url.to_owned())),
                (None, Some(host)) => Ok(Address::Host(host.to_owned(), true)),
            }
        }
    }
}

/// A host as a URL's authority writes it (an IPv6 address in brackets).
fn authority_host(host: &str) -> String {
    if host.contains(':') && !host.starts_with('[') { format!("[{host}]") } else { host.to_owned() }
}

pub(crate) fn redis(keywords: &Keywords, env: &Env<'_>) -> Result<String, SettingsError> {
    let (url, fallback) = match address(keywords, env)? {
        Address::Url(url) => {
            let from_env = keywords.url.is_none();
            let fallback = from_env.then_some(env);
            let (password, source) = match (&keywords.password, fallback.and_then(|env| env.get("PASSWORD"))) {
                (Some(password), _) => (Some(password.as_str()), "password".to_owned()),
                (None, Some(password)) => (Some(password), env.name("PASSWORD")),
                (None, None) => (None, String::new()),
            };
            (with_password(url, password, &source)?, fallback)
        }
        Address::Host(host, from_env) => {
            let fallback = from_env.then_some(env);
            let port = given_or(keywords.port, fallback, "PORT", "a port number")?.unwrap_or(6379);
            let db = given_or(keywords.db, fallback, "DB", "a whole number")?.unwrap_or(0);
            let password = keywords.password.as_deref().or_else(|| fallback?.get("PASSWORD"));
            let auth = password.map(|p| format!(":{}@", percent_encode(p))).unwrap_or_default();
            (format!("redis://{auth}{}:{port}/{db}", authority_host(&host)), fallback)
        }
    };
    let sentinel_password = keywords.sentinel_password.as_deref().or_else(|| fallback?.get("SENTINEL_PASSWORD"));
    let Some(sentinel_password) = sentinel_password else { return Ok(url) };
    let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase()).unwrap_or_default();
    if !scheme.ends_with("+sentinel") {
        tracing::warn!(
            "a Sentinel password is configured but the URL scheme is {scheme:?}, so it was not applied: it is for \
             the sentinels, which only a redis+sentinel:// URL connects to"
        );
        return Ok(url);
    }
    if url.contains("sentinel_password=") {
        return Err(SettingsError::field(
            "sentinel_password",
            "the URL already carries sentinel_password: keep one of the two, they may disagree",
        ));
    }
    Ok(with_parameter(&url, "sentinel_password", &percent_encode(sentinel_password)))
}

/// `url` with the query parameter `key=value` added (before a `#fragment`, if any).
fn with_parameter(url: &str, key: &str, value: &str) -> String {
    let (base, fragment) = url.split_once('#').map_or((url, None), |(b, f)| (b, Some(f)));
    let separator = if base.contains('?') { '&' } else { '?' };
    let fragment = fragment.map(|f| format!("#{f}")).unwrap_or_default();
    format!("{base}{separator}{key}={value}{fragment}")
}

/// `url` with `password` (from `source`) in its userinfo, as grelmicro folds a password kept
/// apart (a Kubernetes Secret beside a ConfigMap's URL); a URL that has credentials already and
/// a password besides is refused, since the two may disagree.
fn with_password(url: String, password: Option<&str>, source: &str) -> Result<String, SettingsError> {
    let Some(password) = password else { return Ok(url) };
    let Some((scheme, rest)) = url.split_once("://") else { return Ok(url) };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    if rest[..end].contains('@') {
        return Err(SettingsError::field(
            source,
            format!(
                "the Redis URL already carries credentials, so {source} is ambiguous: keep the password in the \
                 URL or drop it from the URL, not both"
            ),
        ));
    }
    if end == 0 {
        return Ok(url);
    }
    Ok(format!("{scheme}://:{}@{rest}", percent_encode(password)))
}

/// An etcd cluster: a URL, else one member's host (more members only through a URL), port
/// (2379), user and password, given in code or as `ETCD_*` variables (Tenure's own names:
/// grelmicro has no etcd store).
pub(crate) fn etcd(keywords: &Keywords, env: &Env<'_>) -> Result<String, SettingsError> {
    let (host, fallback) = match address(keywords, env)? {
        Address::Url(url) => return Ok(url),
        Address::Host(host, from_env) => (host, from_env.then_some(env)),
    };
    let port = given_or(keywords.port, fallback, "PORT", "a port number")?.unwrap_or(2379);
    let user = keywords.user.as_deref().or_else(|| fallback?.get("USER"));
    let password = keywords.password.as_deref().or_else(|| fallback?.get("PASSWORD"));
    let auth = match (user, password) {
        (Some(user), password) => format!("{}:{}@", percent_encode(user), percent_encode(password.unwrap_or(""))),
        (None, Some(_)) => {
            return Err(SettingsError::field("password", "an etcd password needs its user (user=… or ETCD_USER)"));
        }
        (None, None) => String::new(),
    };
    Ok(format!("etcd://{auth}{}:{port}", authority_host(&host)))
}

/// A number given in code, else read from `fallback` (the environment, when it named the host).
fn given_or<T: std::str::FromStr>(
    given: Option<T>,
    fallback: Option<&Env<'_>>,
    field: &str,
    rule: &str,
) -> Result<Option<T>, SettingsError> {
    match (given, fallback) {
        (Some(value), _) => Ok(Some(value)),
        (None, Some(env)) => env.number(field, rule),
        (None, None) => Ok(None),
    }
}

pub(crate) fn postgres(keywords: &Keywords, env: &Env<'_>) -> Result<String, SettingsError> {
    let mut url = match address(keywords, env)? {
        Address::Url(url) => url,
        Address::Host(host, from_env) => {
            let fallback = from_env.then_some(env);
            let text = |field| fallback.and_then(|env| env.get(field)).map(str::to_owned);
            let port = given_or(keywords.port, fallback, "PORT", "a port number")?.unwrap_or(5432);
            let database = keywords.database.clone().or_else(|| text("DB")).or_else(|| text("DATABASE"));
            let user = keywords.user.clone().or_else(|| text("USER"));
            let password = keywords.password.clone().or_else(|| text("PASSWORD"));
            let auth = match (user, password) {
                (Some(u), Some(p)) => format!("{}:{}@", percent_encode(&u), percent_encode(&p)),
                (Some(u), None) => format!("{}@", percent_encode(&u)),
                (None, Some(p)) => format!(":{}@", percent_encode(&p)),
                (None, None) => String::new(),
            };
            let database = database.as_deref().map(percent_encode).unwrap_or_default();
            format!("postgresql://{auth}{}:{port}/{database}", authority_host(&host))
        }
    };
    let timeout = match keywords.command_timeout {
        Some(timeout) if timeout.is_zero() => {
            return Err(SettingsError::field("command_timeout", "command_timeout must be greater than zero"));
        }
        Some(timeout) => Some(timeout.as_secs_f64().to_string()),
        None => match env.get("COMMAND_TIMEOUT") {
            Some(text) => {
                url_seconds(&env.name("COMMAND_TIMEOUT"), text)?;
                Some(text.to_owned())
            }
            None => None,
        },
    };
    if let Some(timeout) = timeout {
        url = with_parameter(&url, "command_timeout", &timeout);
    }
    Ok(url)
}

pub(crate) fn sqlite(keywords: &Keywords, env: &Env<'_>) -> Result<String, SettingsError> {
    let path = match (&keywords.path, env.get("PATH")) {
        (Some(path), _) => path.clone(),
        (None, Some(path)) => PathBuf::from(path),
        (None, None) => {
            let var = env.name("PATH");
            return Err(SettingsError::field(&var, format!("no SQLite path given and {var} is not set")));
        }
    };
    let mut url = if path == Path::new(":memory:") {
        "sqlite::memory:".to_owned()
    } else {
        let path = std::path::absolute(&path).map_err(|e| {
            SettingsError::field("path", format!("cannot make {} an absolute path: {e}", path.display()))
        })?;
        let text = path.to_str().ok_or_else(|| SettingsError::field("path", "the SQLite path must be UTF-8"))?;
        let escaped: Vec<String> = text.split('/').map(percent_encode).collect();
        format!("sqlite://{}", escaped.join("/"))
    };
    if let Some(synchronous) = env.get("SYNCHRONOUS") {
        let var = env.name("SYNCHRONOUS");
        let synchronous = synchronous.to_ascii_lowercase();
        if synchronous != "full" && synchronous != "normal" {
            return Err(SettingsError::field(&var, format!("{var} must be full or normal")));
        }
        url.push_str(&format!("?synchronous={synchronous}"));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> EnvVars {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn keywords(f: impl FnOnce(&mut Keywords)) -> Keywords {
        let mut k = Keywords::default();
        f(&mut k);
        k
    }

    #[test]
    fn redis_comes_from_keywords_or_the_environment() {
        let none = Keywords::default();
        let url = |k: &Keywords, v: &[(&str, &str)]| resolve_url(StoreKind::Redis, k, "REDIS_", &vars(v));
        let given = keywords(|k| {
            k.host = Some("h".into());
            k.port = Some(7000);
            k.db = Some(2);
            k.password = Some("p@ss".into());
        });
        assert_eq!(url(&given, &[("REDIS_PORT", "1")]).expect("keywords"), "redis://:p%40ss@h:7000/2");
        assert_eq!(url(&none, &[("REDIS_URL", "redis://h:1/2")]).expect("url"), "redis://h:1/2");
        let env = [("redis_host", "cache"), ("REDIS_PASSWORD", "p@ss:w/rd"), ("REDIS_DB", "3")];
        assert_eq!(url(&none, &env).expect("host"), "redis://:p%40ss%3Aw%2Frd@cache:6379/3");
        assert_eq!(url(&keywords(|k| k.host = Some("::1".into())), &[]).expect("v6"), "redis://[::1]:6379/0");
        let both = url(&none, &[("REDIS_URL", "redis://h"), ("REDIS_HOST", "h")]).expect_err("both");
        assert!(both.to_string().contains("not both"), "{both}");
        let neither = url(&none, &[]).expect_err("neither");
        assert_eq!(neither.field_name(), Some("REDIS_URL"));
        for (var, value) in [("REDIS_PORT", "abc"), ("REDIS_PORT", "70000"), ("REDIS_DB", "-1")] {
            let e = url(&none, &[("REDIS_HOST", "h"), (var, value)]).expect_err(var);
            assert_eq!(e.field_name(), Some(var), "{e}");
            assert!(!e.to_string().contains(value), "the value is not echoed: {e}");
        }
        let twice = keywords(|k| {
            k.url = Some("redis://h".into());
            k.host = Some("h".into());
        });
        assert_eq!(url(&twice, &[]).expect_err("url and host").field_name(), Some("url"));
    }

    #[test]
    fn a_password_apart_joins_the_url_and_the_sentinels_password_joins_a_sentinel_url() {
        let none = Keywords::default();
        let url = |k: &Keywords, v: &[(&str, &str)]| resolve_url(StoreKind::Redis, k, "REDIS_", &vars(v));
        // A Kubernetes split: the URL in a ConfigMap, the password in a Secret.
        let split = [("REDIS_URL", "redis://cache:6379/1"), ("REDIS_PASSWORD", "s3/cret")];
        assert_eq!(url(&none, &split).expect("folded"), "redis://:s3%2Fcret@cache:6379/1");
        let twice = [("REDIS_URL", "redis://:other@cache:6379/1"), ("REDIS_PASSWORD", "s3cret")];
        let e = url(&none, &twice).expect_err("two passwords");
        assert_eq!(e.field_name(), Some("REDIS_PASSWORD"));
        assert!(e.to_string().contains("ambiguous") && !e.to_string().contains("s3cret"), "{e}");
        let code = keywords(|k| {
            k.url = Some("redis+sentinel://a:26379,b:26379/mymaster/0".into());
            k.password = Some("m".into());
            k.sentinel_password = Some("s p".into());
        });
        assert_eq!(
            url(&code, &[("REDIS_SENTINEL_PASSWORD", "ignored: the store came from code")]).expect("sentinel"),
            "redis+sentinel://:m@a:26379,b:26379/mymaster/0?sentinel_password=s%20p"
        );
        let env = [("REDIS_URL", "valkey+sentinel://a/m?prefix=x"), ("REDIS_SENTINEL_PASSWORD", "sp")];
        assert_eq!(url(&none, &env).expect("env"), "valkey+sentinel://a/m?prefix=x&sentinel_password=sp");
        // Not a Sentinel URL: warned about and left out, as grelmicro does.
        let plain = [("REDIS_URL", "redis://h/0"), ("REDIS_SENTINEL_PASSWORD", "sp")];
        assert_eq!(url(&none, &plain).expect("ignored"), "redis://h/0");
        let both = [("REDIS_URL", "redis+sentinel://a/m?sentinel_password=x"), ("REDIS_SENTINEL_PASSWORD", "sp")];
        assert_eq!(url(&none, &both).expect_err("twice").field_name(), Some("sentinel_password"));
    }

    #[cfg(feature = "backend-etcd")]
    #[test]
    fn etcd_comes_from_keywords_or_the_environment() {
        let none = Keywords::default();
        let url = |k: &Keywords, v: &[(&str, &str)]| resolve_url(StoreKind::Etcd, k, "ETCD_", &vars(v));
        let given = keywords(|k| {
            k.host = Some("h".into());
            k.user = Some("app".into());
            k.password = Some("p@ss".into());
        });
        assert_eq!(url(&given, &[]).expect("keywords"), "etcd://app:p%40ss@h:2379");
        assert_eq!(url(&none, &[("ETCD_URL", "etcd://a:1,b:2")]).expect("url"), "etcd://a:1,b:2");
        assert_eq!(url(&none, &[("ETCD_HOST", "e1"), ("ETCD_PORT", "22379")]).expect("host"), "etcd://e1:22379");
        let lone = url(&none, &[("ETCD_HOST", "e1"), ("ETCD_PASSWORD", "secret")]).expect_err("no user");
        assert!(lone.to_string().contains("needs its user") && !lone.to_string().contains("secret"), "{lone}");
        assert_eq!(url(&none, &[]).expect_err("neither").field_name(), Some("ETCD_URL"));
        let target = crate::Target::from_url(&url(&given, &[]).expect("keywords")).expect("a URL etcd reads");
        assert_eq!(target.kind(), StoreKind::Etcd);
    }

    #[test]
    fn postgres_comes_from_keywords_or_the_environment() {
        let url = |k: &Keywords, v: &[(&str, &str)]| resolve_url(StoreKind::Postgres, k, "POSTGRES_", &vars(v));
        let given = keywords(|k| {
            k.host = Some("db".into());
            k.port = Some(6543);
            k.database = Some("app".into());
            k.user = Some("svc".into());
            k.password = Some("p@ss".into());
            k.command_timeout = Some(Duration::from_secs(2));
        });
        assert_eq!(url(&given, &[]).expect("keywords"), "postgresql://svc:p%40ss@db:6543/app?command_timeout=2");
        let env = [
            ("POSTGRES_HOST", "db"),
            ("POSTGRES_DATABASE", "x"),
            ("POSTGRES_DB", "main"),
            ("POSTGRES_USER", "svc"),
            ("POSTGRES_COMMAND_TIMEOUT", "1.5"),
        ];
        let none = Keywords::default();
        assert_eq!(url(&none, &env).expect("env"), "postgresql://svc@db:5432/main?command_timeout=1.5");
        let e = url(&none, &[("POSTGRES_HOST", "h"), ("POSTGRES_PORT", "tcp://1.2.3.4:5432")]).expect_err("port");
        assert_eq!(e.field_name(), Some("POSTGRES_PORT"));
        let e = url(&none, &[("POSTGRES_URL", "postgresql://h/d"), ("POSTGRES_COMMAND_TIMEOUT", "soon")])
            .expect_err("timeout");
        assert_eq!(e.field_name(), Some("POSTGRES_COMMAND_TIMEOUT"));
        let e = url(&none, &[("POSTGRES_URL", "postgresql://h"), ("POSTGRES_HOST", "h")]).expect_err("both");
        assert!(e.to_string().contains("not both"), "{e}");
        assert!(e.to_string().contains("not both"), "{e}");
    }

    #[cfg(feature = "backend-postgres")]
    #[test]
    fn a_postgres_password_from_the_environment_is_never_shown() {
        let env = [("pg_host", "db"), ("PG_USER", "app"), ("PG_PASSWORD", "p@ss:w/rd"), ("PG_DB", "main")];
        let target = crate::Target::from_settings(StoreKind::Postgres, &Keywords::default(), "PG_", &vars(&env))
            .expect("PG_HOST names a PostgreSQL server");
        let shown = format!("{target:?}");
        assert!(shown.contains("postgresql://app:***@db:5432/main"), "{shown}");
        assert!(!shown.contains("p%40ss") && !shown.contains("p@ss"), "{shown}");
    }

    #[test]
    fn sqlite_comes_from_a_path_or_the_environment() {
        let url = |k: &Keywords, v: &[(&str, &str)]| resolve_url(StoreKind::Sqlite, k, "SQLITE_", &vars(v));
        let given = keywords(|k| k.path = Some("/var/lib/my app/locks.db".into()));
        assert_eq!(url(&given, &[]).expect("path"), "sqlite:///var/lib/my%20app/locks.db");
        let memory = keywords(|k| k.path = Some(":memory:".into()));
        assert_eq!(
            url(&memory, &[("SQLITE_SYNCHRONOUS", "NORMAL")]).expect("memory"),
            "sqlite::memory:?synchronous=normal"
        );
        let none = Keywords::default();
        assert_eq!(url(&none, &[("SQLITE_PATH", "/tmp/a.db")]).expect("env"), "sqlite:///tmp/a.db");
        assert_eq!(url(&none, &[]).expect_err("missing").field_name(), Some("SQLITE_PATH"));
        let e = url(&none, &[("SQLITE_PATH", "/a.db"), ("SQLITE_SYNCHRONOUS", "off")]).expect_err("sync");
        assert_eq!(e.field_name(), Some("SQLITE_SYNCHRONOUS"));
        let relative = url(&keywords(|k| k.path = Some("rel.db".into())), &[]).expect("relative");
        assert!(relative.starts_with("sqlite:///") && relative.ends_with("/rel.db"), "{relative}");
    }
}
