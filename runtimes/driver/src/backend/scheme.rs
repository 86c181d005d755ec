//! The one table of store URL schemes: which kind of store a URL names.
//!
//! Every store checks its own URLs against it, and `tenure-open` dispatches on it, so a scheme
//! is added, renamed or refused in one place.

/// A kind of store, as the scheme of its URL names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StoreKind {
    /// The in-process [`MemoryBackend`](super::MemoryBackend): `memory:`.
    Memory,
    /// One SQLite file (`tenure-sqlite`): `sqlite:///abs/path.db`, `sqlite::memory:`.
    Sqlite,
    /// A Redis or Valkey server or cluster (`tenure-redis`).
    Redis,
    /// A PostgreSQL database (`tenure-postgres`).
    Postgres,
    /// An etcd cluster (`tenure-etcd`): `etcd://`, or `etcds://` with TLS.
    Etcd,
}

/// Every URL scheme Tenure knows, by the kind of store it names (lower case; an entry ending
/// in `+*` also takes a `+driver` suffix, as SQLAlchemy writes `postgresql+asyncpg`).
pub const SCHEMES: &[(StoreKind, &[&str])] = &[
    (StoreKind::Memory, &["memory"]),
    (StoreKind::Sqlite, &["sqlite"]),
    (
        StoreKind::Redis,
        &[
            "redis",
            "rediss",
            "redis+unix",
            "unix",
            "valkey",
            "valkeys",
            "redis+cluster",
            "rediss+cluster",
            "valkey+cluster",
            "valkeys+cluster",
            "redis+sentinel",
            "valkey+sentinel",
            "rediss+sentinel",
            "valkeys+sentinel",
        ],
    ),
    (StoreKind::Postgres, &["postgresql", "postgres", "postgresql+*"]),
    (StoreKind::Etcd, &["etcd", "etcds"]),
];

impl StoreKind {
    /// Every kind, in the order of [`SCHEMES`].
    pub const ALL: [StoreKind; 5] =
        [StoreKind::Memory, StoreKind::Sqlite, StoreKind::Redis, StoreKind::Postgres, StoreKind::Etcd];

    /// How far a lock on this kind of store excludes: one process, one host, or every machine.
    pub fn reach(self) -> crate::reach::Reach {
        match self {
            StoreKind::Memory => crate::reach::Reach::Process,
            StoreKind::Sqlite => crate::reach::Reach::Host,
            StoreKind::Redis | StoreKind::Postgres | StoreKind::Etcd => crate::reach::Reach::Cluster,
        }
    }

    /// The kind `url` names by its scheme (any case), if Tenure knows the scheme.
    pub fn of_url(url: &str) -> Option<Self> {
        let scheme = url.split_once(':')?.0.to_ascii_lowercase();
        SCHEMES.iter().find(|(_, schemes)| accepts(schemes, &scheme)).map(|(kind, _)| *kind)
    }

    /// The kind called `name` (`memory`, `sqlite`, `redis`, `postgres`, `etcd`).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// Whether `scheme` (lower case) names this kind of store.
    pub fn accepts(self, scheme: &str) -> bool {
        accepts(self.schemes(), scheme)
    }

    /// The schemes of this kind.
    pub fn schemes(self) -> &'static [&'static str] {
        SCHEMES.iter().find(|(kind, _)| *kind == self).map_or(&[], |(_, schemes)| schemes)
    }

    /// The kind's short name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Sqlite => "sqlite",
            Self::Redis => "redis",
            Self::Postgres => "postgres",
            Self::Etcd => "etcd",
        }
    }
}

impl std::fmt::Display for StoreKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

fn accepts(schemes: &[&str], scheme: &str) -> bool {
    schemes.iter().any(|entry| match entry.strip_suffix('*') {
        Some(stem) => scheme.strip_prefix(stem).is_some_and(|driver| !driver.is_empty()),
        None => scheme == *entry,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
            ("etcd://h:2379", Some(StoreKind::Etcd)),
            ("postgresql+://h", None),
            ("foo://x", None),
            ("no scheme", None),
        ] {
            assert_eq!(StoreKind::of_url(url), kind, "{url}");
        }
        for kind in StoreKind::ALL {
            assert_eq!(StoreKind::from_name(kind.name()), Some(kind));
            assert!(!kind.schemes().is_empty(), "{kind}");
        }
    }
}
