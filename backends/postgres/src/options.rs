//! How a PostgreSQL store is reached: the server URL (credentials, database, TLS), the tables,
//! the connect, command and statement timeouts, and whether releases are pushed.

use std::path::PathBuf;
use std::time::Duration;

use tenure_store::{percent_decode, scheme_in, url_seconds};

use crate::open::{SCHEMES, shown_url};
use tenure_core::SettingsError;
use tokio_postgres::Config;

/// How long connecting (TCP, TLS, authentication, preparing statements) may take by default.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one statement may wait for its answer by default.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(5);
/// How many connections a backend opens by default.
pub const DEFAULT_CONNECTIONS: usize = 4;
/// The most connections a backend may open.
const MAX_CONNECTIONS: usize = 64;

/// The longest table name: PostgreSQL cuts identifiers at 63 bytes, and the leader table's
/// function adds `_le_acquire_or_renew_v2` (23 bytes) to its name.
const MAX_LEADER_TABLE: usize = 63 - "_le_acquire_or_renew_v2".len();

/// How the connection is secured (libpq's `sslmode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    /// Plain TCP.
    Disable,
    /// TLS if the server offers it, unverified; plain otherwise (libpq's `allow` is read so too).
    Prefer,
    /// TLS, unverified (encryption only) unless a root certificate is given.
    Require,
    /// TLS with the server's chain verified against the roots, not its name.
    VerifyCa,
    /// TLS with the chain and the host name verified.
    VerifyFull,
}

/// Options for opening a [`PostgresBackend`](crate::PostgresBackend).
///
/// ```no_run
/// # async fn example() -> Result<(), tenure_postgres::OpenError> {
/// use std::time::Duration;
/// use tenure_postgres::PostgresOptions;
/// let store = PostgresOptions::from_url("postgresql://app:secret@db.internal/app?sslmode=verify-full")?
///     .command_timeout(Duration::from_secs(2))
///     .open(tenure_tokio::Tokio::current())
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PostgresOptions {
    url: String,
    pub(crate) config: Config,
    pub(crate) ssl_mode: SslMode,
    pub(crate) root_certificate: Option<PathBuf>,
    pub(crate) lock_table: String,
    pub(crate) leader_table: String,
    pub(crate) schedule_table: String,
    pub(crate) rwlock_table: String,
    pub(crate) semaphore_table: String,
    pub(crate) connect_timeout: Duration,
    pub(crate) command_timeout: Duration,
    pub(crate) statement_timeout: Option<Duration>,
    pub(crate) notify: bool,
    pub(crate) connections: usize,
}

impl PostgresOptions {
    /// The server at `url`: `postgresql://[user[:password]@]host[:port][/database][?params]`
    /// (`postgres://` too, and `postgresql+asyncpg://` as grelmicro reads it). libpq's
    /// parameters `sslmode` (`disable`, `allow`, `prefer` — the default —, `require`,
    /// `verify-ca`, `verify-full`), `sslrootcert` (a PEM file, or `system`),
    /// `connect_timeout`, `host` (a Unix socket directory), `application_name` and `options`
    /// are read; so are Tenure's own: `command_timeout` and `statement_timeout` (seconds),
    /// `lock_table`, `leader_table`, `schedule_table`, `rwlock_table` (grelmicro's defaults
    /// `locks`, `grelmicro_leader_election`, `schedules`, `grelmicro_rwlocks`),
    /// `semaphore_table` (Tenure's `tenure_semaphores`), `connections` (1 to 64, default 4), and
    /// `notify=false` for a connection pooler in transaction mode, where LISTEN cannot work
    /// (waiters then poll).
    pub fn from_url(url: &str) -> Result<Self, SettingsError> {
        let (scheme, rest) = url.split_once("://").ok_or_else(|| not_postgres(url))?;
        let scheme = scheme.to_ascii_lowercase();
        if !scheme_in(SCHEMES, &scheme) {
            return Err(not_postgres(url));
        }
        let (base, query) = rest.split_once('?').unwrap_or((rest, ""));
        let mut options = Self::new(String::new());
        let mut kept = Vec::new();
        let mut libpq_options: Option<String> = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let text = || percent_decode(value).ok_or_else(|| bad_url(format!("{key} has a broken escape")));
            match key {
                "sslmode" => options.ssl_mode = ssl_mode(&text()?)?,
                "sslrootcert" => options.root_certificate = Some(text()?.into()),
                "connect_timeout" => options.connect_timeout = url_seconds(key, &text()?)?,
                "command_timeout" => options.command_timeout = url_seconds(key, &text()?)?,
                "statement_timeout" => options.statement_timeout = Some(url_seconds(key, &text()?)?),
                "lock_table" => options.lock_table = text()?,
                "leader_table" => options.leader_table = text()?,
                "schedule_table" => options.schedule_table = text()?,
                "rwlock_table" => options.rwlock_table = text()?,
                "semaphore_table" => options.semaphore_table = text()?,
                "notify" => {
                    options.notify = match text()?.as_str() {
                        "true" | "1" | "on" => true,
                        "false" | "0" | "off" => false,
                        _ => return Err(SettingsError::field("notify", "notify must be true or false")),
                    }
                }
                "options" => libpq_options = Some(text()?),
                "connections" => {
                    options.connections = text()?.parse().map_err(|_| {
                        SettingsError::field("connections", "connections must be a whole number from 1 to 64")
                    })?;
                }
                _ => kept.push(pair),
            }
        }
        let server = if kept.is_empty() {
            format!("postgresql://{base}")
        } else {
            format!("postgresql://{base}?{}", kept.join("&"))
        };
        options.config = server
            .parse::<Config>()
            .map_err(|e| bad_url(format!("{} is not a PostgreSQL URL tenure can use: {e}", shown_url(&server))))?;
        if let Some(extra) = libpq_options {
            options.config.options(&extra);
        }
        options.url = server;
        options.validate()?;
        Ok(options)
    }

    fn new(url: String) -> Self {
        Self {
            url,
            config: Config::new(),
            ssl_mode: SslMode::Prefer,
            root_certificate: None,
            lock_table: "locks".into(),
            leader_table: "grelmicro_leader_election".into(),
            schedule_table: "schedules".into(),
            rwlock_table: "grelmicro_rwlocks".into(),
            semaphore_table: "tenure_semaphores".into(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
            statement_timeout: None,
            notify: true,
            connections: DEFAULT_CONNECTIONS,
        }
    }

    /// The table of locks and task locks (grelmicro's `locks`).
    pub fn lock_table(mut self, table: impl Into<String>) -> Self {
        self.lock_table = table.into();
        self
    }

    /// The table of leader records (grelmicro's `grelmicro_leader_election`); its function is
    /// `<table>_le_acquire_or_renew_v2`.
    pub fn leader_table(mut self, table: impl Into<String>) -> Self {
        self.leader_table = table.into();
        self
    }

    /// The table of schedule claims (grelmicro's `schedules`).
    pub fn schedule_table(mut self, table: impl Into<String>) -> Self {
        self.schedule_table = table.into();
        self
    }

    /// The table of read-write locks (grelmicro's `grelmicro_rwlocks`); its readers and
    /// writers' intents are in `<table>_holders`, its functions `<table>_acquire_read_v2`,
    /// `<table>_acquire_write_v2` and `<table>_downgrade_v2`.
    pub fn rwlock_table(mut self, table: impl Into<String>) -> Self {
        self.rwlock_table = table.into();
        self
    }

    /// The table of semaphores (Tenure's `tenure_semaphores`); holders and waiters are in
    /// `<table>_holders`, its function `<table>_acquire`.
    pub fn semaphore_table(mut self, table: impl Into<String>) -> Self {
        self.semaphore_table = table.into();
        self
    }

    /// How connecting (and reconnecting) is secured; see [`SslMode`].
    pub fn ssl_mode(mut self, mode: SslMode) -> Self {
        self.ssl_mode = mode;
        self
    }

    /// Trusts the PEM certificate(s) in `path` instead of the system's roots.
    pub fn tls_root_certificate(mut self, path: impl Into<PathBuf>) -> Self {
        self.root_certificate = Some(path.into());
        self
    }

    /// How long connecting (and reconnecting) may take before calls fail (default 5 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long a statement may wait for its answer before it fails with a timeout (default
    /// 5 s). The lock and election calls are also bounded by their own `backend_timeout`.
    pub fn command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = timeout;
        self
    }

    /// Has the server cancel a statement running longer than `timeout` (its
    /// `statement_timeout`, set when connecting); none by default.
    pub fn statement_timeout(mut self, timeout: Duration) -> Self {
        self.statement_timeout = Some(timeout);
        self
    }

    /// Whether releases are pushed with NOTIFY and heard with LISTEN (default true). Turn it
    /// off behind a pooler in transaction mode; waiters then poll at their `retry_interval`.
    pub fn notify(mut self, notify: bool) -> Self {
        self.notify = notify;
        self
    }

    /// How many connections to open (default 4): a name's calls all use one of them, so calls
    /// on different names commit side by side. The first also LISTENs for releases.
    pub fn connections(mut self, connections: usize) -> Self {
        self.connections = connections;
        self
    }

    /// The server URL with any password hidden, for messages and logs.
    pub fn shown_url(&self) -> String {
        shown_url(&self.url)
    }

    /// Checks every option; the message names the one that is wrong.
    pub fn validate(&self) -> Result<(), SettingsError> {
        for (field, value) in [("connect_timeout", self.connect_timeout), ("command_timeout", self.command_timeout)] {
            if value.is_zero() {
                return Err(SettingsError::field(field, format!("{field} must be greater than zero")));
            }
        }
        if !(1..=MAX_CONNECTIONS).contains(&self.connections) {
            return Err(SettingsError::field("connections", "connections must be a whole number from 1 to 64"));
        }
        if self.statement_timeout.is_some_and(|t| t < Duration::from_millis(1)) {
            return Err(SettingsError::field("statement_timeout", "statement_timeout must be at least 1 ms"));
        }
        check_table("lock_table", &self.lock_table, 63)?;
        check_table("leader_table", &self.leader_table, MAX_LEADER_TABLE)?;
        check_table("schedule_table", &self.schedule_table, 63)?;
        check_table("rwlock_table", &self.rwlock_table, 63 - "_acquire_write_v2".len())?;
        check_table("semaphore_table", &self.semaphore_table, 63 - "_holders".len())?;
        if self.config.get_hosts().is_empty() {
            return Err(bad_url(format!("{} names no host", self.shown_url())));
        }
        Ok(())
    }
}

impl std::fmt::Debug for PostgresOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresOptions")
            .field("url", &self.shown_url())
            .field("ssl_mode", &self.ssl_mode)
            .field("root_certificate", &self.root_certificate)
            .field("lock_table", &self.lock_table)
            .field("leader_table", &self.leader_table)
            .field("schedule_table", &self.schedule_table)
            .field("rwlock_table", &self.rwlock_table)
            .field("semaphore_table", &self.semaphore_table)
            .field("connect_timeout", &self.connect_timeout)
            .field("command_timeout", &self.command_timeout)
            .field("statement_timeout", &self.statement_timeout)
            .field("notify", &self.notify)
            .field("connections", &self.connections)
            .finish()
    }
}

/// grelmicro's rule for table names (a plain SQL identifier), and PostgreSQL's length limit.
fn check_table(field: &str, name: &str, max: usize) -> Result<(), SettingsError> {
    let mut chars = name.chars();
    let plain = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !plain {
        return Err(SettingsError::field(field, format!("table name {name:?} is not a valid SQL identifier")));
    }
    if name.len() > max {
        return Err(SettingsError::field(field, format!("table name {name:?} is longer than {max} characters")));
    }
    Ok(())
}

fn ssl_mode(text: &str) -> Result<SslMode, SettingsError> {
    Ok(match text {
        "disable" => SslMode::Disable,
        "allow" | "prefer" => SslMode::Prefer,
        "require" => SslMode::Require,
        "verify-ca" => SslMode::VerifyCa,
        "verify-full" => SslMode::VerifyFull,
        _ => {
            return Err(SettingsError::field(
                "sslmode",
                format!("sslmode {text:?} is not disable, allow, prefer, require, verify-ca or verify-full"),
            ));
        }
    })
}

fn not_postgres(url: &str) -> SettingsError {
    bad_url(format!("{} is not a postgres:// or postgresql:// URL", shown_url(url)))
}

fn bad_url(message: impl Into<String>) -> SettingsError {
    SettingsError::field("url", message)
}

#[cfg(test)]
mod tests {
    use tokio_postgres::config::Host;

    use super::*;

    #[test]
    fn tenure_and_libpq_parameters_are_read() {
        let o = PostgresOptions::from_url(
            "postgres://u:p%40ss@db:6543/app?sslmode=verify-full&command_timeout=0.5&lock_table=my_locks\
             &statement_timeout=2&notify=false&application_name=svc&connections=2",
        )
        .expect("valid");
        assert_eq!(o.ssl_mode, SslMode::VerifyFull);
        assert_eq!(o.command_timeout, Duration::from_millis(500));
        assert_eq!(o.statement_timeout, Some(Duration::from_secs(2)));
        assert_eq!((o.lock_table.as_str(), o.notify, o.connections), ("my_locks", false, 2));
        assert_eq!(o.config.get_user(), Some("u"));
        assert_eq!(o.config.get_password(), Some(&b"p@ss"[..]));
        assert_eq!(o.config.get_dbname(), Some("app"));
        assert_eq!(o.config.get_hosts(), [Host::Tcp("db".into())]);
        assert_eq!(o.config.get_ports(), [6543]);
        assert_eq!(o.config.get_application_name(), Some("svc"));
        let o = PostgresOptions::from_url("postgresql+asyncpg://h/db").expect("driver suffix");
        assert_eq!(o.ssl_mode, SslMode::Prefer);
        assert_eq!(o.leader_table, "grelmicro_leader_election");
    }

    #[test]
    fn bad_urls_and_values_are_named_without_the_password() {
        let e = PostgresOptions::from_url("mysql://u:hunter2@h/db").expect_err("not postgres");
        assert_eq!(e.field_name(), Some("url"));
        assert!(!e.to_string().contains("hunter2"), "{e}");
        let e = PostgresOptions::from_url("postgres://u:hunter2@h/db?bogus=1").expect_err("unknown parameter");
        assert!(e.to_string().contains("bogus") && !e.to_string().contains("hunter2"), "{e}");
        for (bad, field) in [
            ("postgres://h?command_timeout=0", "command_timeout"),
            ("postgres://h?connect_timeout=nan", "connect_timeout"),
            ("postgres://h?sslmode=maybe", "sslmode"),
            ("postgres://h?lock_table=drop%20table", "lock_table"),
            ("postgres://h?notify=perhaps", "notify"),
            ("postgres://h?connections=0", "connections"),
            ("postgres://h?connections=65", "connections"),
            ("postgres://h?connections=two", "connections"),
        ] {
            let e = PostgresOptions::from_url(bad).expect_err(bad);
            assert_eq!(e.field_name(), Some(field), "{bad}: {e}");
        }
        let long = "t".repeat(41);
        let e = PostgresOptions::from_url("postgres://h").expect("valid").leader_table(long).validate();
        assert_eq!(e.expect_err("too long").field_name(), Some("leader_table"));
    }
}
