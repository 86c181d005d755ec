//! A store named but not yet opened: the URL read into the options of its kind.

use std::path::Path;
use std::sync::Arc;

use tenure::MemoryBackend;
use tenure::net::Net;
use tenure_core::{EnvVars, SettingsError};
use tenure_store::{OpenFuture, OpenStore, StoreOptions};

use crate::env::{Keywords, resolve_url};
use crate::kind::{STORES, StoreKind, shown_url};
use crate::{OpenError, Store};

/// A store to open: its kind and options, read from a URL or the environment and checked, with
/// nothing connected yet.
#[derive(Clone, Debug)]
pub struct Target {
    kind: StoreKind,
    options: Arc<dyn StoreOptions>,
}

impl Target {
    /// Reads `url`: its scheme picks the store ([`STORES`], any case), the store reads the rest.
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
        let read = kind.entry().read.ok_or_else(|| unknown_scheme(&url))?;
        Ok(Self { kind, options: Arc::from(read(&url)?) })
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
        self.kind
    }

    /// The file the store lives in (a SQLite file; not `sqlite::memory:`), if it lives in one.
    pub fn file(&self) -> Option<&Path> {
        self.options.file()
    }

    /// Connects (or opens the file) and prepares the store, on `runtime`: the network stores
    /// connect with its sockets and timers and run their connections as its tasks (a host's own
    /// event loop can be the [`Net`]); SQLite keeps a thread of its own, etcd's client runs on
    /// tokio (where it is polled, else on a runtime of its own).
    pub async fn open(self, runtime: impl Net) -> Result<Store, OpenError> {
        let store = self.options.open(Arc::new(runtime)).await?;
        Ok(Store::new(self.kind, store))
    }
}

/// The options of `memory:`: a new in-process store per open.
#[derive(Debug)]
pub(crate) struct Memory;

impl StoreOptions for Memory {
    fn open(&self, _runtime: Arc<dyn Net>) -> OpenFuture<'_> {
        Box::pin(async { Ok(Arc::new(MemoryBackend::new()) as Arc<dyn OpenStore>) })
    }
}

/// The schemes this build opens, for messages: `memory:, sqlite:, redis:, …`.
fn known() -> String {
    let schemes: Vec<String> = STORES
        .iter()
        .flat_map(|entry| entry.schemes.iter())
        .map(|scheme| format!("{}:", scheme.replace("+*", "+driver")))
        .collect();
    schemes.join(", ")
}

/// The stores this build leaves out, with the feature that builds each in: empty, or
/// `; this build leaves out redis (cargo feature backend-redis), …`.
fn left_out() -> String {
    let out: Vec<String> = STORES
        .iter()
        .filter(|entry| !entry.built())
        .map(|entry| format!("{} (cargo feature {})", entry.name, entry.feature.unwrap_or("?")))
        .collect();
    if out.is_empty() { String::new() } else { format!("; this build leaves out {}", out.join(", ")) }
}

fn unknown_scheme(url: &str) -> SettingsError {
    let what = match url.split_once(':') {
        Some((scheme, _)) if !scheme.is_empty() => format!("the scheme {scheme:?} of {}", shown_url(url)),
        _ => format!("{} has no scheme and", shown_url(url)),
    };
    SettingsError::field("url", format!("{what} names no store Tenure knows (known: {}){}", known(), left_out()))
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
