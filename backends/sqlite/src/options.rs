//! How a SQLite store is opened: the file, the busy timeout, durability, table names, and the
//! `sqlite:` URL form of all of it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tenure_core::{SettingsError, WallTime};
use tenure_store::percent_decode;

use crate::time::{self, Clock};

/// SQLite's `synchronous` setting: how hard a commit waits for the disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Synchronous {
    /// Every commit reaches the disk before it returns: fencing counters survive a power loss.
    /// SQLite's default, and grelmicro's.
    #[default]
    Full,
    /// Commits survive a process crash but the last ones may roll back on a power loss or an OS
    /// crash — and a fencing counter with them. Faster.
    Normal,
}

/// Options for opening a [`SqliteBackend`](crate::SqliteBackend).
///
/// ```no_run
/// # async fn example() -> Result<(), tenure_sqlite::OpenError> {
/// use tenure_sqlite::SqliteOptions;
/// let store = SqliteOptions::new("/var/lib/app/locks.db").open().await?;
/// let same = SqliteOptions::from_url("sqlite:///var/lib/app/locks.db?busy_timeout=2")?.open().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct SqliteOptions {
    path: PathBuf,
    busy_timeout: Duration,
    synchronous: Synchronous,
    lock_table: String,
    leader_table: String,
    schedule_table: String,
    rwlock_table: String,
    semaphore_table: String,
    clock: Option<Clock>,
}

/// grelmicro's busy timeout: how long a write waits for another process holding the file.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

impl SqliteOptions {
    /// The file at `path` (created if missing), with grelmicro 0.44's tables (`locks`,
    /// `grelmicro_leader_election`, `schedules`, `rwlocks` and `rwlocks_holders`) and Tenure's
    /// `semaphores` and `semaphores_holders`, a 5 s busy timeout and `synchronous = FULL`.
    pub fn new(path: impl AsRef<Path>) -> Self {
        Self {
            path: path.as_ref().to_path_buf(),
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
            synchronous: Synchronous::Full,
            lock_table: "locks".into(),
            leader_table: "grelmicro_leader_election".into(),
            schedule_table: "schedules".into(),
            rwlock_table: "rwlocks".into(),
            semaphore_table: "semaphores".into(),
            clock: None,
        }
    }

    /// A private in-memory database: one process, gone when the backend closes (tests).
    pub fn in_memory() -> Self {
        Self::new(":memory:")
    }

    /// Reads a URL: `sqlite:///abs/path.db`, `sqlite://relative.db`, `sqlite:path.db`, or
    /// `sqlite::memory:`; percent-escapes in the path are decoded. Query parameters:
    /// `busy_timeout` (seconds) and `synchronous` (`full` or `normal`).
    pub fn from_url(url: &str) -> Result<Self, SettingsError> {
        let bad = |message: String| SettingsError::field("url", message);
        let rest = url.strip_prefix("sqlite:").ok_or_else(|| bad(format!("{url:?} is not a sqlite: URL")))?;
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let path = path.strip_prefix("//").unwrap_or(path);
        let path = percent_decode(path).ok_or_else(|| bad(format!("{url:?} has a broken percent-escape")))?;
        if path.is_empty() {
            return Err(bad(format!("{url:?} names no file (write sqlite:///absolute/path.db or sqlite::memory:)")));
        }
        let mut options = Self::new(path);
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                "busy_timeout" => {
                    let secs: f64 =
                        value.parse().map_err(|_| bad(format!("busy_timeout={value:?} is not a number of seconds")))?;
                    options.busy_timeout = tenure_core::time::seconds("busy_timeout", secs)
                        .map_err(|e| bad(format!("busy_timeout: {e}")))?;
                }
                "synchronous" => {
                    options.synchronous = match value.to_ascii_lowercase().as_str() {
                        "full" => Synchronous::Full,
                        "normal" => Synchronous::Normal,
                        _ => return Err(bad(format!("synchronous={value:?}: expected full or normal"))),
                    }
                }
                _ => return Err(bad(format!("unknown parameter {key:?} (known: busy_timeout, synchronous)"))),
            }
        }
        Ok(options)
    }

    /// How long a write waits for another process that holds the file (default 5 s).
    #[must_use]
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// How hard a commit waits for the disk (default [`Synchronous::Full`]).
    #[must_use]
    pub fn synchronous(mut self, synchronous: Synchronous) -> Self {
        self.synchronous = synchronous;
        self
    }

    /// The lock table (default `locks`, as grelmicro's `table_name`).
    #[must_use]
    pub fn lock_table(mut self, name: impl Into<String>) -> Self {
        self.lock_table = name.into();
        self
    }

    /// The leader-election table (default `grelmicro_leader_election`).
    #[must_use]
    pub fn leader_table(mut self, name: impl Into<String>) -> Self {
        self.leader_table = name.into();
        self
    }

    /// The read-write lock table (default `rwlocks`; its holders are in `<name>_holders`, as
    /// grelmicro's `SQLiteReadWriteLockAdapter(table_name=…)` keeps them).
    #[must_use]
    pub fn rwlock_table(mut self, name: impl Into<String>) -> Self {
        self.rwlock_table = name.into();
        self
    }

    /// The semaphore table (default `semaphores`; holders and waiters are in `<name>_holders`).
    #[must_use]
    pub fn semaphore_table(mut self, name: impl Into<String>) -> Self {
        self.semaphore_table = name.into();
        self
    }

    /// The schedule table (default `schedules`).
    #[must_use]
    pub fn schedule_table(mut self, name: impl Into<String>) -> Self {
        self.schedule_table = name.into();
        self
    }

    /// The clock the store judges leases by. The default is the system clock — the one SQLite's
    /// `now` reads, shared by every process on the host — truncated to the millisecond as
    /// SQLite's is. Substitute one only to test boundaries: every process on the file must
    /// agree on the clock.
    #[must_use]
    pub fn clock(mut self, clock: impl Fn() -> WallTime + Send + Sync + 'static) -> Self {
        self.clock = Some(Arc::new(clock));
        self
    }

    /// The database path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Checks the options: table names are SQL identifiers, the busy timeout is positive.
    pub(crate) fn validate(&self) -> Result<(), SettingsError> {
        for (field, name) in [
            ("lock_table", &self.lock_table),
            ("leader_table", &self.leader_table),
            ("schedule_table", &self.schedule_table),
            ("rwlock_table", &self.rwlock_table),
            ("semaphore_table", &self.semaphore_table),
        ] {
            let mut chars = name.chars();
            let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err(SettingsError::field(field, format!("Table name '{name}' is not a valid SQL identifier")));
            }
        }
        if self.busy_timeout.is_zero() {
            return Err(SettingsError::field("busy_timeout", "must be greater than zero"));
        }
        Ok(())
    }

    pub(crate) fn busy_timeout_value(&self) -> Duration {
        self.busy_timeout
    }

    pub(crate) fn synchronous_value(&self) -> Synchronous {
        self.synchronous
    }

    pub(crate) fn tables(&self) -> (&str, &str, &str) {
        (&self.lock_table, &self.leader_table, &self.schedule_table)
    }

    pub(crate) fn rwlock_table_name(&self) -> &str {
        &self.rwlock_table
    }

    pub(crate) fn semaphore_table_name(&self) -> &str {
        &self.semaphore_table
    }

    pub(crate) fn clock_value(&self) -> Clock {
        self.clock.clone().unwrap_or_else(|| Arc::new(time::system_now))
    }
}

impl std::fmt::Debug for SqliteOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteOptions")
            .field("path", &self.path)
            .field("busy_timeout", &self.busy_timeout)
            .field("synchronous", &self.synchronous)
            .field("tables", &self.tables())
            .field("rwlock_table", &self.rwlock_table)
            .field("semaphore_table", &self.semaphore_table)
            .field("clock", &if self.clock.is_some() { "custom" } else { "system" })
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_files_and_settings() {
        let path = |url: &str| SqliteOptions::from_url(url).map(|o| o.path().to_path_buf()).ok();
        assert_eq!(path("sqlite:///var/lib/a.db"), Some(PathBuf::from("/var/lib/a.db")));
        assert_eq!(path("sqlite://rel.db"), Some(PathBuf::from("rel.db")));
        assert_eq!(path("sqlite:rel.db"), Some(PathBuf::from("rel.db")));
        assert_eq!(path("sqlite::memory:"), Some(PathBuf::from(":memory:")));
        assert_eq!(path("sqlite:///tmp/with%20space.db"), Some(PathBuf::from("/tmp/with space.db")));
        let o = SqliteOptions::from_url("sqlite:///a.db?busy_timeout=0.25&synchronous=NORMAL").ok();
        let o = o.expect("valid URL");
        assert_eq!((o.busy_timeout, o.synchronous), (Duration::from_millis(250), Synchronous::Normal));
    }

    #[test]
    fn bad_urls_name_the_problem() {
        for (url, needle) in [
            ("redis://x", "not a sqlite: URL"),
            ("sqlite://", "names no file"),
            ("sqlite:///a%zz.db", "percent-escape"),
            ("sqlite:///a.db?busy_timeout=soon", "busy_timeout"),
            ("sqlite:///a.db?busy_timeout=-1", "busy_timeout"),
            ("sqlite:///a.db?busy_timeout=NaN", "busy_timeout"),
            ("sqlite:///a.db?synchronous=off", "synchronous"),
            ("sqlite:///a.db?mode=ro", "unknown parameter \"mode\""),
        ] {
            let err = SqliteOptions::from_url(url).expect_err(url).to_string();
            assert!(err.contains(needle), "{url}: {err}");
        }
    }

    #[test]
    fn table_names_must_be_identifiers() {
        assert!(SqliteOptions::in_memory().validate().is_ok());
        for bad in ["", "1locks", "locks; DROP TABLE x", "lö"] {
            let err = SqliteOptions::in_memory().lock_table(bad).validate().expect_err(bad).to_string();
            assert!(err.contains("not a valid SQL identifier"), "{err}");
        }
        assert!(SqliteOptions::in_memory().busy_timeout(Duration::ZERO).validate().is_err());
    }
}
