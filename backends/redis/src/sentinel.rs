//! Redis Sentinel: a master found through the sentinels that watch it, and found again after
//! they fail it over.
//!
//! The URL is grelmicro's: `redis+sentinel://[user:password@]h1[:26379],h2[:26379]/<master>[/<db>]`
//! (or `valkey+sentinel://`), where the credentials are the master's; the sentinels' own password
//! is `sentinel_password` (a Tenure URL parameter, or `REDIS_SENTINEL_PASSWORD`), as redis-py's
//! `Sentinel(sentinel_kwargs={"password": …})` takes it.
//!
//! Each dial asks the sentinels in turn `SENTINEL get-master-addr-by-name`, connects to the
//! address the first one that knows names, and checks with `ROLE` that it is a master (a
//! sentinel that has not yet heard of a failover names the old one). Every later request carries
//! a `ROLE` in the same write ([`crate::dial`]): a connection whose server says it is a replica,
//! answers `READONLY` or stops answering is dropped, so the next call asks the sentinels again.

use std::sync::Arc;
use std::time::Duration;

use redis::{ErrorKind, RedisError, RedisResult, Value};
use tenure::net::{Net, Socket, within};
use tenure_core::SettingsError;
use tenure_store::percent_decode;

use crate::tls::Tls;
use crate::wire::Wire;

/// The port a sentinel listens on when the URL names none.
pub const DEFAULT_SENTINEL_PORT: u16 = 26379;

/// The sentinels watching one master, and how to talk to them.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Sentinels {
    pub(crate) nodes: Vec<(String, u16)>,
    pub(crate) master: String,
    pub(crate) password: Option<String>,
    /// The master's connection settings (credentials, database) as a URL on a placeholder
    /// host that is never dialed.
    pub(crate) settings: String,
    /// `rediss+sentinel://`: the sentinels and the master are reached over TLS.
    pub(crate) tls: bool,
    /// `#insecure`: their certificates are not checked (tests only).
    pub(crate) insecure: bool,
}

impl std::fmt::Debug for Sentinels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sentinels")
            .field("nodes", &self.nodes)
            .field("master", &self.master)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .finish_non_exhaustive()
    }
}

/// Reads `redis+sentinel://[userinfo@]hosts/<master>[/<db>]` (Tenure's parameters already
/// removed).
pub(crate) fn parse(url: &str) -> Result<Sentinels, SettingsError> {
    let (scheme, rest) = url.split_once("://").unwrap_or((url, ""));
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (userinfo, hosts) = authority.rsplit_once('@').map_or(("", authority), |(u, h)| (u, h));
    let mut nodes = Vec::new();
    for item in hosts.split(',').filter(|h| !h.is_empty()) {
        nodes.push(host_port(item).ok_or_else(|| bad(format!("{scheme} URL has a bad sentinel address {item:?}")))?);
    }
    if nodes.is_empty() {
        return Err(bad(format!("a {scheme} URL must list at least one sentinel")));
    }
    let mut segments = path.split('/').filter(|s| !s.is_empty());
    let master =
        segments.next().ok_or_else(|| bad(format!("a {scheme} URL must name the master: …/<master>[/<db>]")))?;
    let master = percent_decode(master).ok_or_else(|| bad("the master's name has a broken escape"))?;
    let db = match segments.next() {
        None => 0,
        Some(db) => db.parse::<u32>().map_err(|_| bad(format!("invalid database index in the URL: {db:?}")))?,
    };
    if segments.next().is_some() {
        return Err(bad(format!("a {scheme} URL's path is /<master>[/<db>], nothing more")));
    }
    let at = if userinfo.is_empty() { String::new() } else { format!("{userinfo}@") };
    let tls = scheme.eq_ignore_ascii_case("rediss+sentinel") || scheme.eq_ignore_ascii_case("valkeys+sentinel");
    let insecure = url.split_once('#').is_some_and(|(_, fragment)| fragment == "insecure");
    let settings = format!("redis://{at}sentinel-master/{db}");
    Ok(Sentinels { nodes, master, password: None, settings, tls, insecure })
}

/// `host[:port]` or `[v6][:port]`.
fn host_port(item: &str) -> Option<(String, u16)> {
    let (host, port) = match item.strip_prefix('[') {
        Some(v6) => {
            let (host, after) = v6.split_once(']')?;
            (host, after.strip_prefix(':'))
        }
        None => match item.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (item, None),
        },
    };
    let port = match port {
        None => DEFAULT_SENTINEL_PORT,
        Some(port) => port.parse().ok().filter(|p| *p != 0)?,
    };
    (!host.is_empty()).then(|| (host.to_owned(), port))
}

fn bad(message: impl Into<String>) -> SettingsError {
    SettingsError::field("url", message)
}

/// The master's address, as the first sentinel that knows it names it. Each sentinel gets
/// `timeout` to connect and answer; the error, if none answers, says what each one did.
pub(crate) async fn master_address(
    net: &Arc<dyn Net>,
    sentinels: &Sentinels,
    tls: Option<&Tls>,
    timeout: Duration,
) -> RedisResult<(String, u16)> {
    let mut failures = Vec::new();
    for (host, port) in &sentinels.nodes {
        let asked = within(&**net, timeout, ask(net, host, *port, sentinels, tls, timeout)).await;
        match asked.unwrap_or_else(|| Err(RedisError::from((ErrorKind::Io, "no answer in time")))) {
            Ok(Some(address)) => return Ok(address),
            Ok(None) => failures.push(format!("{host}:{port} knows no master named {:?}", sentinels.master)),
            Err(e) => failures.push(format!("{host}:{port}: {e}")),
        }
    }
    let detail = failures.join("; ");
    Err(RedisError::from((ErrorKind::Io, "no sentinel named the master", detail)))
}

/// One sentinel's answer: the master's address, or `None` if it watches no such master.
async fn ask(
    net: &Arc<dyn Net>,
    host: &str,
    port: u16,
    sentinels: &Sentinels,
    tls: Option<&Tls>,
    timeout: Duration,
) -> RedisResult<Option<(String, u16)>> {
    let socket = connect(net, host, port, tls, timeout).await?;
    let wire = Wire::new(socket.stream, Arc::new(|_| Ok(())));
    let mut pipeline = redis::pipe();
    if let Some(password) = &sentinels.password {
        pipeline.cmd("AUTH").arg(password);
    }
    pipeline.cmd("SENTINEL").arg("get-master-addr-by-name").arg(&sentinels.master);
    let packed = pipeline.get_packed_pipeline();
    let replies = usize::from(sentinels.password.is_some()) + 1;
    let mut values = wire.request(move |out| out.extend_from_slice(&packed), replies, false).await?;
    let answer = values.pop().unwrap_or(Value::Nil);
    for value in values {
        value.extract_error()?;
    }
    match answer.extract_error()? {
        Value::Nil => Ok(None),
        Value::Array(parts) if parts.len() == 2 => {
            let host: String = redis::from_redis_value_ref(&parts[0])?;
            let port: u16 = redis::from_redis_value_ref(&parts[1])?;
            Ok(Some((host, port)))
        }
        other => Err(RedisError::from((
            ErrorKind::Parse,
            "a sentinel answered get-master-addr-by-name with neither an address nor nil",
            format!("{other:?}"),
        ))),
    }
}

/// A connection to `host:port`, over TLS if `tls`.
pub(crate) async fn connect(
    net: &Arc<dyn Net>,
    host: &str,
    port: u16,
    tls: Option<&Tls>,
    timeout: Duration,
) -> std::io::Result<Socket> {
    let socket = net.connect_tcp(host, port, timeout).await?;
    match tls {
        Some(tls) => tls.wrap(host, socket).await,
        None => Ok(socket),
    }
}

/// Whether `role`, the reply to `ROLE`, is a master's.
pub(crate) fn is_master(role: &Value) -> bool {
    let Value::Array(parts) = role else { return false };
    parts.first().and_then(|v| redis::from_redis_value_ref::<String>(v).ok()).as_deref() == Some("master")
}

/// Whether `reply` is a `READONLY` error: the server is a replica now.
pub(crate) fn is_demoted_reply(reply: &Value) -> bool {
    matches!(reply, Value::ServerError(e) if e.code() == "READONLY" || e.details().is_some_and(|d| d.contains("READONLY")))
}

/// Whether `e` says the server is a replica now (a master demoted by a failover).
pub(crate) fn is_demoted(e: &RedisError) -> bool {
    e.code() == Some("READONLY") || e.to_string().contains("READONLY")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grelmicros_sentinel_urls_are_read() {
        let s = parse("redis+sentinel://:pw@a:26380,b,[::1]:26381/mymaster/2").expect("valid");
        assert_eq!(
            s.nodes,
            [("a".to_owned(), 26380), ("b".to_owned(), DEFAULT_SENTINEL_PORT), ("::1".to_owned(), 26381)]
        );
        assert_eq!(s.master, "mymaster");
        assert_eq!(s.settings, "redis://:pw@sentinel-master/2");
        let s = parse("valkey+sentinel://h/primary").expect("valid");
        assert_eq!(
            (s.nodes.len(), s.master.as_str(), s.settings.as_str()),
            (1, "primary", "redis://sentinel-master/0")
        );
    }

    #[test]
    fn bad_sentinel_urls_say_what_is_wrong_without_the_password() {
        for (url, says) in [
            ("redis+sentinel://:secret@h1,h2", "name the master"),
            ("redis+sentinel://:secret@h1/m/x", "database index"),
            ("redis+sentinel://:secret@/m", "at least one sentinel"),
            ("redis+sentinel://:secret@h:0/m", "bad sentinel address"),
            ("redis+sentinel://:secret@h:port/m", "bad sentinel address"),
            ("redis+sentinel://:secret@h/m/0/extra", "nothing more"),
        ] {
            let e = parse(url).expect_err(url);
            assert!(e.to_string().contains(says), "{url}: {e}");
            assert!(!e.to_string().contains("secret"), "{url}: {e}");
        }
    }

    #[test]
    fn roles_and_demotions_are_told() {
        let master = Value::Array(vec![Value::BulkString(b"master".to_vec()), Value::Int(0), Value::Array(vec![])]);
        let replica = Value::Array(vec![Value::BulkString(b"slave".to_vec()), Value::BulkString(b"h".to_vec())]);
        assert!(is_master(&master) && !is_master(&replica) && !is_master(&Value::Nil));
        let readonly = RedisError::from((ErrorKind::Client, "script failed", "READONLY You can't write".to_owned()));
        assert!(is_demoted(&readonly));
        assert!(!is_demoted(&RedisError::from((ErrorKind::Io, "connection refused"))));
    }
}
