//! The stores: opened from a URL through `tenure-open` (the one scheme table), and the URLs of
//! grelmicro's provider settings (keywords, else the environment), resolved there too.

use std::sync::Arc;

use pyo3::prelude::*;
use tenure::Slots;
use tenure::backend::{LeaderElectionBackend, LockBackend, ReadWriteLockBackend, ScheduleBackend, SemaphoreBackend};
use tenure::core::SettingsError;
use tenure_open::{Backends, Keywords, OpenError, Origin, Store, StoreKind, Target};

use crate::bridge::{Fail, awaitable};
use crate::user::{Fences, UserStore, user_store};

/// An open store: a built-in one, or a backend a user wrote in Python.
#[pyclass(frozen, weakref, module = "tenure._tenure")]
pub(crate) struct Backend(Backends<UserStore>);

#[pymethods]
impl Backend {
    /// Closes the store (SQLite vacates expired leases); later calls fail. A user's backend is
    /// the user's to close.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let store = self.0.closer();
        awaitable(py, async move {
            match store {
                Some(store) => store.close().await.map_err(|e| Fail::Connection(e.to_string())),
                None => Ok(()),
            }
        })
    }

    /// Claims fire time `due` of the cron task `name` (see the driver's `ScheduleBackend`).
    fn claim<'py>(&self, py: Python<'py>, name: String, due: f64) -> PyResult<Bound<'py, PyAny>> {
        let schedule = self.schedule()?;
        awaitable(py, async move { schedule.claim(&name, due).await.map_err(Fail::Backend) })
    }

    /// The last claimed fire time of `name`, if any.
    fn last_fired<'py>(&self, py: Python<'py>, name: String) -> PyResult<Bound<'py, PyAny>> {
        let schedule = self.schedule()?;
        awaitable(py, async move { schedule.last_fired(&name).await.map_err(Fail::Backend) })
    }

    /// Whether it serves read-write locks.
    #[getter]
    fn serves_read_write(&self) -> bool {
        self.0.slots().read_write.is_some()
    }

    /// Whether it serves semaphores.
    #[getter]
    fn serves_semaphores(&self) -> bool {
        self.0.slots().semaphore.is_some()
    }

    /// Whether calls made off any loop have a loop to run on (always, for a built-in store).
    fn has_loop(&self) -> bool {
        match self.0.origin() {
            Origin::User(user) => user.host().has_home(),
            Origin::Store(_) => true,
        }
    }

    /// For a user's backend: makes the running loop of this thread the one its calls run on
    /// when they are made off any loop (`from_thread`, background work).
    fn attach_loop(&self, event_loop: &Bound<'_, PyAny>) -> PyResult<()> {
        match self.0.origin() {
            Origin::User(user) => user.host().attach(event_loop),
            Origin::Store(_) => Ok(()),
        }
    }
}

impl Backend {
    /// Its locks and task locks, or the error a `Coordination` without them raises.
    pub(crate) fn locks(&self, py: Python<'_>) -> PyResult<Arc<dyn LockBackend>> {
        self.0.slots().lock().map_err(|e| crate::py_error(py, &e))
    }

    /// Its elections, or the error a `Coordination` without them raises.
    pub(crate) fn elections(&self, py: Python<'_>) -> PyResult<Arc<dyn LeaderElectionBackend>> {
        self.0.slots().election().map_err(|e| crate::py_error(py, &e))
    }

    /// Its read-write locks, or the error a `Coordination` without them raises.
    pub(crate) fn read_write(&self, py: Python<'_>) -> PyResult<Arc<dyn ReadWriteLockBackend>> {
        self.0.slots().read_write().map_err(|e| crate::py_error(py, &e))
    }

    /// Its semaphores, or the error a `Coordination` without them raises.
    pub(crate) fn semaphore(&self, py: Python<'_>) -> PyResult<Arc<dyn SemaphoreBackend>> {
        self.0.slots().semaphore().map_err(|e| crate::py_error(py, &e))
    }

    fn schedule(&self) -> PyResult<Arc<dyn ScheduleBackend>> {
        self.0
            .slots()
            .schedule
            .clone()
            .ok_or_else(|| pyo3::exceptions::PyTypeError::new_err("this backend serves no schedule claims"))
    }
}

/// A backend a user wrote: `wrapper` is the `tenure._user_backend.UserBackend` around it,
/// `label` its class name, `fences` the fencing tokens it answered so far.
#[pyfunction]
pub(crate) fn user_backend(wrapper: Py<PyAny>, label: String, fences: &Fences) -> Backend {
    let user = user_store(wrapper, label, fences);
    Backend(Backends::user(Slots::all(user.clone()), user))
}

/// A private in-process store.
#[pyfunction]
pub(crate) fn memory_backend() -> Backend {
    Backend(Backends::store(Store::memory()))
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
        Ok(Backend(Backends::store(store)))
    })
}

/// The URL of the `kind` store (`sqlite`, `redis`, `postgres`) that the keywords name, else
/// grelmicro's variables under `env_prefix` (`REDIS_URL` xor `REDIS_HOST`, …): checked, not
/// opened. `SettingsValidationError` names the keyword or variable that is wrong.
#[pyfunction]
#[pyo3(signature = (
    kind, env_prefix, *, url=None, host=None, port=None, db=None, database=None, user=None, password=None,
    path=None, command_timeout=None, sentinel_password=None
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
    sentinel_password: Option<String>,
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
    keywords.sentinel_password = sentinel_password;
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
    let target = Target::from_url(url).map_err(|e| settings(py, e))?;
    Ok(target.file().map(|file| file.to_string_lossy().into_owned()))
}

fn settings(py: Python<'_>, e: SettingsError) -> PyErr {
    crate::py_error(py, &tenure::Error::Settings(e))
}
