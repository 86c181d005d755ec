//! The stores: opened from a URL through `tenure-open` (the one scheme table), and the URLs of
//! grelmicro's provider settings (keywords, else the environment), resolved there too.

use std::sync::Arc;

use pyo3::prelude::*;
use tenure::MemoryBackend;
use tenure::backend::{LeaderElectionBackend, LockBackend};
use tenure::core::SettingsError;
use tenure_open::{Keywords, OpenError, Store, StoreKind, Target};

use crate::bridge::{Fail, awaitable};

/// An open store.
#[pyclass(frozen, module = "tenure._tenure")]
pub(crate) struct Backend {
    pub(crate) lock: Arc<dyn LockBackend>,
    pub(crate) leader: Arc<dyn LeaderElectionBackend>,
    store: Store,
}

impl Backend {
    fn new(store: Store) -> Self {
        Self { lock: store.locks(), leader: store.elections(), store }
    }
}

#[pymethods]
impl Backend {
    /// Closes the store (SQLite vacates expired leases); later calls fail.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let store = self.store.clone();
        awaitable(py, async move { store.close().await.map_err(|e| Fail::Connection(e.to_string())) })
    }
}

/// A private in-process store.
#[pyfunction]
pub(crate) fn memory_backend() -> Backend {
    Backend::new(Store::Memory(MemoryBackend::new()))
}

/// Opens the store at `url`; an awaitable of a [`Backend`]. A plain `redis://` connection is
/// dialed on the running asyncio loop.
#[pyfunction]
pub(crate) fn open_backend<'py>(py: Python<'py>, url: &str) -> PyResult<Bound<'py, PyAny>> {
    let target = Target::from_url(url).map_err(|e| settings(py, e))?;
    let event_loop = py.import("asyncio")?.call_method0("get_running_loop")?;
    let dial = crate::aio::LoopDial::new(&event_loop)?;
    awaitable(py, async move {
        let store = target.open(dial).await.map_err(|e| match e {
            OpenError::Settings(e) => Fail::Core(tenure::Error::Settings(e)),
            other => Fail::Connection(other.to_string()),
        })?;
        Ok(Backend::new(store))
    })
}

/// The URL of the `kind` store (`sqlite`, `redis`, `postgres`) that the keywords name, else
/// grelmicro's variables under `env_prefix` (`REDIS_URL` xor `REDIS_HOST`, …): checked, not
/// opened. `SettingsValidationError` names the keyword or variable that is wrong.
#[pyfunction]
#[pyo3(signature = (
    kind, env_prefix, *, url=None, host=None, port=None, db=None, database=None, user=None, password=None,
    path=None, command_timeout=None
))]
#[allow(clippy::too_many_arguments)] // grelmicro's provider keywords, passed through
pub(crate) fn store_url(
    py: Python<'_>,
    kind: &str,
    env_prefix: &str,
    url: Option<String>,
    host: Option<String>,
    port: Option<i64>,
    db: Option<i64>,
    database: Option<String>,
    user: Option<String>,
    password: Option<String>,
    path: Option<String>,
    command_timeout: Option<f64>,
) -> PyResult<String> {
    let kind = StoreKind::from_name(kind)
        .ok_or_else(|| settings(py, SettingsError::field("kind", format!("no store kind {kind:?}"))))?;
    let mut keywords = Keywords::default();
    keywords.url = url;
    keywords.host = host;
    keywords.port = port
        .map(|p| u16::try_from(p).ok().filter(|p| *p > 0))
        .map(|p| p.ok_or_else(|| settings(py, SettingsError::field("port", "port must be from 1 to 65535"))))
        .transpose()?;
    keywords.db = db
        .map(|d| u32::try_from(d).map_err(|_| settings(py, SettingsError::field("db", "db must be a whole number"))))
        .transpose()?;
    keywords.database = database;
    keywords.user = user;
    keywords.password = password;
    keywords.path = path.map(Into::into);
    keywords.command_timeout = command_timeout.map(|s| crate::seconds(py, "command_timeout", s)).transpose()?;
    let url =
        tenure_open::resolve_url(kind, &keywords, env_prefix, &tenure::process_env()).map_err(|e| settings(py, e))?;
    Target::from_url(&url).map_err(|e| settings(py, e))?;
    Ok(url)
}

/// The file a `sqlite:` URL names (`None` for `sqlite::memory:` and other stores).
#[pyfunction]
pub(crate) fn sqlite_file(py: Python<'_>, url: &str) -> PyResult<Option<String>> {
    match Target::from_url(url).map_err(|e| settings(py, e))? {
        Target::Sqlite(options) if options.path().as_os_str() != ":memory:" => {
            Ok(Some(options.path().to_string_lossy().into_owned()))
        }
        _ => Ok(None),
    }
}

fn settings(py: Python<'_>, e: SettingsError) -> PyErr {
    crate::py_error(py, &tenure::Error::Settings(e))
}
