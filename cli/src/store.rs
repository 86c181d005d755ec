//! Which store a command talks to: a URL (`--backend`, else `TENURE_BACKEND`), or the default
//! SQLite file in the user's state directory.

use std::path::PathBuf;
use std::sync::Arc;

use tenure::{Inspect, MemoryBackend, Provider};
use tenure_postgres::{PostgresBackend, PostgresOptions};
use tenure_redis::{RedisBackend, RedisOptions};
use tenure_sqlite::{SqliteBackend, SqliteOptions};

use crate::Failure;

/// An open store.
pub(crate) enum Store {
    Memory(MemoryBackend),
    Sqlite(SqliteBackend),
    Redis(RedisBackend),
    Postgres(PostgresBackend),
}

impl Store {
    /// Opens the store `url` names (or the default one). Bad URLs are usage errors (exit 2).
    pub(crate) async fn open(url: Option<&str>) -> Result<Self, Failure> {
        let url = match url {
            Some(url) => url.to_owned(),
            None => match std::env::var("TENURE_BACKEND") {
                Ok(url) if !url.is_empty() => url,
                _ => default_url()?,
            },
        };
        let scheme = url.split_once(':').map(|(s, _)| s).unwrap_or_default();
        match scheme {
            "memory" if url == "memory:" || url == "memory://" => Ok(Self::Memory(MemoryBackend::new())),
            "sqlite" => {
                let options = SqliteOptions::from_url(&url).map_err(|e| Failure::usage(format!("--backend: {e}")))?;
                if let Some(dir) = options.path().parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|e| {
                        Failure::store(format!("cannot create {} for the SQLite store: {e}", dir.display()))
                    })?;
                }
                let store = options.open().await.map_err(|e| match e {
                    tenure_sqlite::OpenError::Settings(e) => Failure::usage(format!("--backend: {e}")),
                    e => Failure::store(format!("cannot open {}: {e}", shown(&url))),
                })?;
                Ok(Self::Sqlite(store))
            }
            "redis" | "rediss" | "redis+unix" | "redis+cluster" | "rediss+cluster" | "valkey" | "valkeys" => {
                let options = RedisOptions::from_url(&url).map_err(|e| Failure::usage(format!("--backend: {e}")))?;
                let store = options.open().await.map_err(|e| match e {
                    tenure_redis::OpenError::Settings(e) => Failure::usage(format!("--backend: {e}")),
                    e => Failure::store(e.to_string()),
                })?;
                Ok(Self::Redis(store))
            }
            s if s == "postgres" || s == "postgresql" || s.starts_with("postgresql+") => {
                let options = PostgresOptions::from_url(&url).map_err(|e| Failure::usage(format!("--backend: {e}")))?;
                let store = options.open().await.map_err(|e| match e {
                    tenure_postgres::OpenError::Settings(e) => Failure::usage(format!("--backend: {e}")),
                    e => Failure::store(e.to_string()),
                })?;
                Ok(Self::Postgres(store))
            }
            "etcd" => Err(Failure::usage(format!(
                "--backend {}: the {scheme} backend is not built into this tenure yet \
                 (available: sqlite:, redis:, rediss:, postgresql:, memory:)",
                shown(&url)
            ))),
            _ => Err(Failure::usage(format!(
                "--backend {}: not a store URL (expected sqlite:///path/to/file.db, redis://host:6379/0, \
                 postgresql://user@host/db or memory:)",
                shown(&url)
            ))),
        }
    }

    pub(crate) fn provider(&self) -> &dyn Provider {
        match self {
            Self::Memory(m) => m,
            Self::Sqlite(s) => s,
            Self::Redis(r) => r,
            Self::Postgres(p) => p,
        }
    }

    /// The store as something that lists what it holds; `None` for memory (per process).
    pub(crate) fn inspect(&self) -> Option<Arc<dyn Inspect>> {
        match self {
            Self::Memory(_) => None,
            Self::Sqlite(s) => Some(Arc::new(s.clone())),
            Self::Redis(r) => Some(Arc::new(r.clone())),
            Self::Postgres(p) => Some(Arc::new(p.clone())),
        }
    }

    /// Vacates expired leases and closes.
    pub(crate) async fn close(&self) {
        match self {
            Self::Sqlite(s) => {
                let _ = s.close().await;
            }
            Self::Redis(r) => r.close(),
            Self::Postgres(p) => p.close(),
            Self::Memory(_) => {}
        }
    }
}

/// `sqlite://` + `$XDG_STATE_HOME/tenure/tenure.db` (or `~/.local/state/tenure/tenure.db`).
pub(crate) fn default_url() -> Result<String, Failure> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/state")))
        .ok_or_else(|| {
            Failure::usage(
                "no store given and no home directory for the default one: pass --backend URL or set TENURE_BACKEND",
            )
        })?;
    let path = state.join("tenure").join("tenure.db");
    Ok(format!("sqlite://{}", path.display()))
}

/// A URL as it may be shown: the password (`user:secret@`) replaced.
pub(crate) fn shown(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let (authority, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((userinfo, host)) if userinfo.contains(':') => {
            let user = userinfo.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}:***@{host}{tail}")
        }
        _ => url.to_owned(),
    }
}
