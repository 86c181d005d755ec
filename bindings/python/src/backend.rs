//! The stores, opened from URLs: `memory:`, `sqlite:…`, `redis://…` / `rediss://…`,
//! `postgresql://…` / `postgres://…`.

use std::sync::Arc;

use pyo3::prelude::*;
use tenure::MemoryBackend;
use tenure::backend::{LeaderElectionBackend, LockBackend};

use crate::bridge::{Fail, awaitable};

/// An open store.
#[pyclass(frozen, module = "tenure._tenure")]
pub(crate) struct Backend {
    pub(crate) lock: Arc<dyn LockBackend>,
    pub(crate) leader: Arc<dyn LeaderElectionBackend>,
    closer: Closer,
}

enum Closer {
    Nothing,
    Sqlite(tenure_sqlite::SqliteBackend),
    Redis(tenure_redis::RedisBackend),
    Postgres(tenure_postgres::PostgresBackend),
}

impl Backend {
    fn memory() -> Self {
        let store = MemoryBackend::new();
        Self { lock: Arc::new(store.clone()), leader: Arc::new(store), closer: Closer::Nothing }
    }
}

#[pymethods]
impl Backend {
    /// Closes the store (SQLite vacates expired leases); later calls fail.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        // The network stores close at once; SQLite vacates expired leases first.
        let sqlite = match &self.closer {
            Closer::Nothing => None,
            Closer::Sqlite(s) => Some(s.clone()),
            Closer::Redis(r) => {
                r.close();
                None
            }
            Closer::Postgres(p) => {
                p.close();
                None
            }
        };
        awaitable(py, async move {
            if let Some(sqlite) = sqlite {
                sqlite.close().await.map_err(|e| Fail::Connection(e.to_string()))?;
            }
            Ok(())
        })
    }
}

/// A private in-process store.
#[pyfunction]
pub(crate) fn memory_backend() -> Backend {
    Backend::memory()
}

/// Opens the store at `url`; an awaitable of a [`Backend`].
#[pyfunction]
pub(crate) fn open_backend(py: Python<'_>, url: String) -> PyResult<Bound<'_, PyAny>> {
    let event_loop = py.import("asyncio")?.call_method0("get_running_loop")?;
    let dial = crate::aio::LoopDial::new(&event_loop)?;
    awaitable(py, async move {
        let scheme = url.split_once(':').map(|(s, _)| s).unwrap_or_default();
        match scheme {
            "memory" => Ok(Backend::memory()),
            "sqlite" => {
                let options = tenure_sqlite::SqliteOptions::from_url(&url).map_err(settings)?;
                let store = options.open().await.map_err(open_error)?;
                let (lock, leader) = (Arc::new(store.clone()), Arc::new(store.clone()));
                Ok(Backend { lock, leader, closer: Closer::Sqlite(store) })
            }
            s if s == "postgres" || s == "postgresql" || s.starts_with("postgresql+") => {
                let options = tenure_postgres::PostgresOptions::from_url(&url).map_err(settings)?;
                let store = options.open().await.map_err(open_error)?;
                let (lock, leader) = (Arc::new(store.clone()), Arc::new(store.clone()));
                Ok(Backend { lock, leader, closer: Closer::Postgres(store) })
            }
            _ => {
                let options = tenure_redis::RedisOptions::from_url(&url).map_err(settings)?;
                let store = options.open_dialed(Arc::new(dial)).await.map_err(open_error)?;
                let (lock, leader) = (Arc::new(store.clone()), Arc::new(store.clone()));
                Ok(Backend { lock, leader, closer: Closer::Redis(store) })
            }
        }
    })
}

fn settings(e: tenure::core::SettingsError) -> Fail {
    Fail::Core(tenure::Error::Settings(e))
}

fn open_error(e: tenure::OpenError) -> Fail {
    match e {
        tenure::OpenError::Settings(e) => settings(e),
        other => Fail::Connection(other.to_string()),
    }
}
