//! A store named but not yet opened: the URL read into the options of its kind.

use tenure::MemoryBackend;
use tenure::backend::{SCHEMES, StoreKind, shown_url};
use tenure::net::Net;
use tenure_core::{EnvVars, SettingsError};

use crate::env::{Keywords, resolve_url};
use crate::{OpenError, Store};

/// A store to open: its kind and options, read from a URL or the environment and checked, with
/// nothing connected yet.
#[derive(Clone, Debug)]
#[non_exhaustive]
#[allow(clippy::large_enum_variant)] // made once per open; boxing would only burden matches on it
pub enum Target {
    /// The in-process store (`memory:`): one per open.
    Memory,
    /// A SQLite file.
    #[cfg(feature = "backend-sqlite")]
    Sqlite(tenure_sqlite::SqliteOptions),
    /// A Redis or Valkey server or cluster.
    #[cfg(feature = "backend-redis")]
    Redis(tenure_redis::RedisOptions),
    /// A PostgreSQL database.
    #[cfg(feature = "backend-postgres")]
    Postgres(tenure_postgres::PostgresOptions),
    /// An etcd cluster.
    #[cfg(feature = "backend-etcd")]
    Etcd(tenure_etcd::EtcdOptions),
}

impl Target {
    /// Reads `url`: its scheme picks the store ([`SCHEMES`], any case), the store reads the rest.
    /// An unknown scheme, or one of a store this build leaves out, is refused with the list of
    /// what is known; the error's field names the part of the URL that is wrong.
    pub fn from_url(url: &str) -> Result<Self, SettingsError> {
        let url = url.trim();
        let Some(kind) = StoreKind::of_url(url) else {
            return Err(unknown_scheme(url));
        };
        // The stores read their scheme in lower case.
        let (scheme, rest) = url.split_once(':').unwrap_or((url, ""));
        let url = format!("{}:{rest}", scheme.to_ascii_lowercase());
        match kind {
            StoreKind::Memory if rest.is_empty() || rest == "//" => Ok(Self::Memory),
            StoreKind::Memory => Err(SettingsError::field(
                "url",
                format!("{} takes nothing after the scheme: write memory:", shown_url(&url)),
            )),
            StoreKind::Sqlite => sqlite(&url),
            StoreKind::Redis => redis(&url),
            StoreKind::Postgres => postgres(&url),
            StoreKind::Etcd => etcd(&url),
            _ => Err(not_built(kind, &url)),
        }
    }

    /// The store grelmicro's variables name for `kind` (`prefix` is grelmicro's `env_prefix`:
    /// `REDIS_`, `POSTGRES_`, `SQLITE_` by default), read from the process environment.
    pub fn from_env(kind: StoreKind, prefix: &str) -> Result<Self, SettingsError> {
        Self::from_settings(kind, &Keywords::default(), prefix, &tenure::process_env())
    }

    /// The store named by settings given in code, else the variables `vars` (see
    /// [`resolve_url`]).
    pub fn from_settings(
        kind: StoreKind,
        keywords: &Keywords,
        prefix: &str,
        vars: &EnvVars,
    ) -> Result<Self, SettingsError> {
        Self::from_url(&resolve_url(kind, keywords, prefix, vars)?)
    }

    /// The kind of store.
    pub fn kind(&self) -> StoreKind {
        match self {
            Self::Memory => StoreKind::Memory,
            #[cfg(feature = "backend-sqlite")]
            Self::Sqlite(_) => StoreKind::Sqlite,
            #[cfg(feature = "backend-redis")]
            Self::Redis(_) => StoreKind::Redis,
            #[cfg(feature = "backend-postgres")]
            Self::Postgres(_) => StoreKind::Postgres,
            #[cfg(feature = "backend-etcd")]
            Self::Etcd(_) => StoreKind::Etcd,
        }
    }

    /// Connects (or opens the file) and prepares the store, on `runtime`: the network stores
    /// connect with its sockets and timers and run their connections as its tasks (a host's own
    /// event loop can be the [`Net`]); SQLite keeps a thread of its own.
    pub async fn open(self, runtime: impl Net) -> Result<Store, OpenError> {
        #[cfg(not(any(feature = "backend-redis", feature = "backend-postgres")))]
        drop(runtime);
        Ok(match self {
            Self::Memory => Store::Memory(MemoryBackend::new()),
            #[cfg(feature = "backend-sqlite")]
            Self::Sqlite(options) => Store::Sqlite(options.open().await?),
            #[cfg(feature = "backend-redis")]
            Self::Redis(options) => Store::Redis(options.open(runtime).await?),
            #[cfg(feature = "backend-postgres")]
            Self::Postgres(options) => Store::Postgres(options.open(runtime).await?),
            // etcd's client runs on tokio: where it is polled, else on a runtime of its own.
            #[cfg(feature = "backend-etcd")]
            Self::Etcd(options) => {
                Store::Etcd(tenure_etcd::EtcdBackend::open(options).await.map_err(OpenError::Store)?)
            }
        })
    }
}

#[cfg(feature = "backend-sqlite")]
fn sqlite(url: &str) -> Result<Target, SettingsError> {
    tenure_sqlite::SqliteOptions::from_url(url).map(Target::Sqlite)
}

#[cfg(not(feature = "backend-sqlite"))]
fn sqlite(url: &str) -> Result<Target, SettingsError> {
    Err(not_built(StoreKind::Sqlite, url))
}

#[cfg(feature = "backend-redis")]
fn redis(url: &str) -> Result<Target, SettingsError> {
    tenure_redis::RedisOptions::from_url(url).map(Target::Redis)
}

#[cfg(not(feature = "backend-redis"))]
fn redis(url: &str) -> Result<Target, SettingsError> {
    Err(not_built(StoreKind::Redis, url))
}

#[cfg(feature = "backend-etcd")]
fn etcd(url: &str) -> Result<Target, SettingsError> {
    tenure_etcd::EtcdOptions::from_url(url).map(Target::Etcd)
}

#[cfg(not(feature = "backend-etcd"))]
fn etcd(url: &str) -> Result<Target, SettingsError> {
    Err(not_built(StoreKind::Etcd, url))
}

#[cfg(feature = "backend-postgres")]
fn postgres(url: &str) -> Result<Target, SettingsError> {
    tenure_postgres::PostgresOptions::from_url(url).map(Target::Postgres)
}

#[cfg(not(feature = "backend-postgres"))]
fn postgres(url: &str) -> Result<Target, SettingsError> {
    Err(not_built(StoreKind::Postgres, url))
}

/// Whether this build can open `kind`.
#[allow(clippy::match_like_matches_macro)] // `cfg!` arms, one per feature
fn built(kind: StoreKind) -> bool {
    match kind {
        StoreKind::Memory => true,
        StoreKind::Sqlite => cfg!(feature = "backend-sqlite"),
        StoreKind::Redis => cfg!(feature = "backend-redis"),
        StoreKind::Postgres => cfg!(feature = "backend-postgres"),
        StoreKind::Etcd => cfg!(feature = "backend-etcd"),
        _ => false,
    }
}

/// The schemes this build opens, for messages: `memory:, sqlite:, redis:, …`.
fn known() -> String {
    let schemes: Vec<String> = SCHEMES
        .iter()
        .filter(|(kind, _)| built(*kind))
        .flat_map(|(_, schemes)| schemes.iter())
        .map(|scheme| format!("{}:", scheme.replace("+*", "+driver")))
        .collect();
    schemes.join(", ")
}

fn unknown_scheme(url: &str) -> SettingsError {
    let what = match url.split_once(':') {
        Some((scheme, _)) if !scheme.is_empty() => format!("the scheme {scheme:?} of {}", shown_url(url)),
        _ => format!("{} has no scheme and", shown_url(url)),
    };
    SettingsError::field("url", format!("{what} names no store Tenure knows (known: {})", known()))
}

fn not_built(kind: StoreKind, url: &str) -> SettingsError {
    let why = match kind {
        StoreKind::Sqlite | StoreKind::Redis | StoreKind::Postgres | StoreKind::Etcd => {
            format!("this build leaves out the {kind} store (cargo feature backend-{kind})")
        }
        _ => format!("the {kind} store is not part of Tenure yet"),
    };
    SettingsError::field("url", format!("{}: {why}; this build opens {}", shown_url(url), known()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(not(feature = "backend-redis"))]
    #[test]
    fn a_store_left_out_of_the_build_is_refused_naming_its_feature() {
        let e = Target::from_url("redis://:hunter2@h").expect_err("left out");
        let text = e.to_string();
        assert!(text.contains("cargo feature backend-redis") && text.contains("memory:"), "{text}");
        assert!(!text.contains("hunter2") && !text.contains("rediss:"), "{text}");
    }

    #[cfg(all(feature = "backend-sqlite", feature = "backend-redis", feature = "backend-postgres"))]
    #[test]
    fn a_scheme_picks_the_store_and_unknown_ones_are_refused_with_the_known_ones() {
        assert_eq!(Target::from_url("memory:").expect("memory").kind(), StoreKind::Memory);
        assert_eq!(Target::from_url("SQLITE:///tmp/x.db").expect("sqlite").kind(), StoreKind::Sqlite);
        assert_eq!(Target::from_url("rediss://h:1/0").expect("redis").kind(), StoreKind::Redis);
        assert_eq!(Target::from_url("postgresql+asyncpg://h/db").expect("postgres").kind(), StoreKind::Postgres);
        let e = Target::from_url("foo://u:hunter2@x").expect_err("unknown");
        assert_eq!(e.field_name(), Some("url"));
        let text = e.to_string();
        assert!(text.contains("\"foo\"") && text.contains("redis:") && text.contains("postgresql+driver:"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
        assert_eq!(Target::from_url("etcd://h1:2379,h2:2379").expect("etcd").kind(), StoreKind::Etcd);
        let e = Target::from_url("memory://x").expect_err("memory takes nothing");
        assert_eq!(e.field_name(), Some("url"));
        let e = Target::from_url("hunter2").expect_err("no scheme");
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }

    #[cfg(all(feature = "backend-sqlite", feature = "backend-redis", feature = "backend-postgres"))]
    #[test]
    fn the_stores_name_the_wrong_part_of_their_url() {
        for (url, field) in [
            ("postgres://u:hunter2@h/db?sslmode=maybe", "sslmode"),
            ("redis://:hunter2@h?command_timeout=0", "command_timeout"),
            ("sqlite:///tmp/x.db?synchronous=sometimes", "url"),
        ] {
            let e = Target::from_url(url).expect_err(url);
            assert_eq!(e.field_name(), Some(field), "{url}: {e}");
            assert!(!e.to_string().contains("hunter2"), "{e}");
        }
    }
}
