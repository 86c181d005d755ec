//! The one table of stores: each kind's name, URL schemes, reach, cargo feature, grelmicro's
//! variables and how its URL is read. The CLI, the bindings' providers and kinds, and the
//! messages of a refused URL all read it; adding a store is its crate and one entry here
//! (a [`StoreKind`] and a row of [`STORES`]).

use crate::reach::Reach;
use tenure_core::SettingsError;
use tenure_store::StoreOptions;

use crate::env::{self, Env, Keywords};

/// A kind of store, as the scheme of its URL names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StoreKind {
    /// The in-process [`MemoryBackend`](tenure::MemoryBackend): `memory:`.
    Memory,
    /// One SQLite file (`tenure-sqlite`): `sqlite:///abs/path.db`, `sqlite::memory:`.
    Sqlite,
    /// A Redis or Valkey server, cluster or Sentinel group (`tenure-redis`).
    Redis,
    /// A PostgreSQL database (`tenure-postgres`).
    Postgres,
    /// An etcd cluster (`tenure-etcd`): `etcd://`, or `etcds://` with TLS.
    Etcd,
}

/// Reads a URL of a store's schemes into its options.
type Reader = fn(&str) -> Result<Box<dyn StoreOptions>, SettingsError>;

/// What the table knows of one kind of store.
#[derive(Debug)]
#[non_exhaustive]
pub struct Entry {
    /// The kind.
    pub kind: StoreKind,
    /// Its short name (`redis`), as the CLI, the bindings and messages write it.
    pub name: &'static str,
    /// Its URL schemes (lower case; an entry ending in `+*` also takes a `+driver` suffix, as
    /// SQLAlchemy writes `postgresql+asyncpg`); none when this build leaves the store out.
    pub schemes: &'static [&'static str],
    /// How far a lock on it excludes: one process, one host, or every machine.
    pub reach: Reach,
    /// The cargo feature of `tenure-open` that builds it in (`None`: always there).
    pub feature: Option<&'static str>,
    /// The prefix of grelmicro's variables for it (`REDIS_`), empty where there are none.
    pub env_prefix: &'static str,
    /// Reads a URL of one of its schemes (in lower case) into its options; `None` when this
    /// build leaves the store out.
    pub(crate) read: Option<Reader>,
    /// The URL that settings given in code, else grelmicro's variables, name.
    pub(crate) settings: fn(&Keywords, &Env<'_>) -> Result<String, SettingsError>,
}

impl Entry {
    /// Whether this build can open the store.
    pub fn built(&self) -> bool {
        self.read.is_some()
    }
}

/// `$options`'s reader, when the feature `$feature` builds its crate in.
macro_rules! reader {
    ($feature:literal, $options:ty) => {{
        #[cfg(feature = $feature)]
        let read: Option<Reader> = Some(|url| Ok(Box::new(<$options>::from_url(url)?)));
        #[cfg(not(feature = $feature))]
        let read: Option<Reader> = None;
        read
    }};
}

/// `$schemes` when the feature `$feature` builds its crate in, else none.
macro_rules! schemes {
    ($feature:literal, $schemes:path) => {{
        #[cfg(feature = $feature)]
        let schemes: &[&str] = $schemes;
        #[cfg(not(feature = $feature))]
        let schemes: &[&str] = &[];
        schemes
    }};
}

/// Every store Tenure knows, memory first.
pub static STORES: &[Entry] = &[
    Entry {
        kind: StoreKind::Memory,
        name: "memory",
        schemes: &["memory"],
        reach: Reach::Process,
        feature: None,
        env_prefix: "",
        read: Some(memory),
        settings: |_, _| Ok("memory:".into()),
    },
    Entry {
        kind: StoreKind::Sqlite,
        name: "sqlite",
        schemes: schemes!("backend-sqlite", tenure_sqlite::SCHEMES),
        reach: Reach::Host,
        feature: Some("backend-sqlite"),
        env_prefix: "SQLITE_",
        read: reader!("backend-sqlite", tenure_sqlite::SqliteOptions),
        settings: env::sqlite,
    },
    Entry {
        kind: StoreKind::Redis,
        name: "redis",
        schemes: schemes!("backend-redis", tenure_redis::SCHEMES),
        reach: Reach::Cluster,
        feature: Some("backend-redis"),
        env_prefix: "REDIS_",
        read: reader!("backend-redis", tenure_redis::RedisOptions),
        settings: env::redis,
    },
    Entry {
        kind: StoreKind::Postgres,
        name: "postgres",
        schemes: schemes!("backend-postgres", tenure_postgres::SCHEMES),
        reach: Reach::Cluster,
        feature: Some("backend-postgres"),
        env_prefix: "POSTGRES_",
        read: reader!("backend-postgres", tenure_postgres::PostgresOptions),
        settings: env::postgres,
    },
    Entry {
        kind: StoreKind::Etcd,
        name: "etcd",
        schemes: schemes!("backend-etcd", tenure_etcd::SCHEMES),
        reach: Reach::Cluster,
        feature: Some("backend-etcd"),
        env_prefix: "ETCD_",
        read: reader!("backend-etcd", tenure_etcd::EtcdOptions),
        settings: env::etcd,
    },
];

/// `memory:` (or `memory://`) takes nothing after its scheme.
fn memory(url: &str) -> Result<Box<dyn StoreOptions>, SettingsError> {
    match url.split_once(':').map_or("", |(_, rest)| rest) {
        "" | "//" => Ok(Box::new(crate::target::Memory)),
        _ => Err(SettingsError::field(
            "url",
            format!("{} takes nothing after the scheme: write memory:", shown_url(url)),
        )),
    }
}

impl StoreKind {
    /// Every kind, in the order of [`STORES`].
    pub fn all() -> impl Iterator<Item = StoreKind> {
        STORES.iter().map(|entry| entry.kind)
    }

    /// The kind's row of [`STORES`].
    pub fn entry(self) -> &'static Entry {
        // Every kind has its row: the table's unit test checks it.
        STORES.iter().find(|entry| entry.kind == self).unwrap_or(&STORES[0])
    }

    /// How far a lock on this kind of store excludes: one process, one host, or every machine.
    pub fn reach(self) -> Reach {
        self.entry().reach
    }

    /// The kind `url` names by its scheme (any case), if this build knows the scheme.
    pub fn of_url(url: &str) -> Option<Self> {
        let scheme = url.split_once(':')?.0.to_ascii_lowercase();
        STORES.iter().find(|entry| tenure_store::scheme_in(entry.schemes, &scheme)).map(|entry| entry.kind)
    }

    /// The kind called `name` (`memory`, `sqlite`, `redis`, `postgres`, `etcd`).
    pub fn from_name(name: &str) -> Option<Self> {
        STORES.iter().find(|entry| entry.name == name).map(|entry| entry.kind)
    }

    /// The kind's short name.
    pub fn name(self) -> &'static str {
        self.entry().name
    }
}

impl std::fmt::Display for StoreKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `url` as it may be shown in messages and logs: every password replaced by `***` (see
/// [`tenure_store::shown_url`]), knowing every store's schemes.
pub fn shown_url(url: &str) -> String {
    tenure_store::shown_url(url, |scheme| STORES.iter().any(|entry| tenure_store::scheme_in(entry.schemes, scheme)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_one_row_named_as_it_is_shown() {
        for (index, entry) in STORES.iter().enumerate() {
            assert!(std::ptr::eq(entry.kind.entry(), entry), "{}", entry.name);
            assert_eq!(StoreKind::from_name(entry.name), Some(entry.kind));
            assert_eq!(entry.kind.to_string(), entry.name);
            assert_eq!(entry.built(), !entry.schemes.is_empty(), "{}", entry.name);
            assert!(STORES[..index].iter().all(|other| other.kind != entry.kind), "{}", entry.name);
        }
    }

    #[cfg(all(feature = "backend-sqlite", feature = "backend-redis", feature = "backend-postgres"))]
    #[test]
    fn every_url_finds_its_kind_by_scheme() {
        for (url, kind) in [
            ("memory:", Some(StoreKind::Memory)),
            ("sqlite:///tmp/a.db", Some(StoreKind::Sqlite)),
            ("SQLite::memory:", Some(StoreKind::Sqlite)),
            ("rediss://h", Some(StoreKind::Redis)),
            ("valkey+cluster://a:1,b:2", Some(StoreKind::Redis)),
            ("postgresql+asyncpg://h/db", Some(StoreKind::Postgres)),
            ("postgres://h", Some(StoreKind::Postgres)),
            ("postgresql+://h", None),
            ("foo://x", None),
            ("no scheme", None),
        ] {
            assert_eq!(StoreKind::of_url(url), kind, "{url}");
        }
    }

    #[test]
    fn urls_are_shown_without_their_passwords() {
        assert_eq!(shown_url("memory:"), "memory:");
        assert_eq!(shown_url("p4ss:word"), "p4ss:***");
        assert_eq!(shown_url("x://u:hunter2@h"), "x://u:***@h");
    }
}
