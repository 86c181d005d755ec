//! `tenure._tenure`: the native half of the Python package `tenure`. The Python half
//! (`python/tenure/`) gives it grelmicro's API — context managers, per-task holders, configs —
//! and this module runs Tenure's driver on a tokio runtime of its own, handing Python awaitables
//! that complete from it.

#![allow(unsafe_code)] // pyo3's macros expand to unsafe glue

mod aio;
mod backend;
mod bridge;
mod calls;
mod election;
mod kept;
mod lock;
mod logging;
mod rw_calls;
mod rw_lock;
mod sem;
mod task_lock;
mod telemetry;
mod thread;
mod user;

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use pyo3::prelude::*;
use tenure::core::{BackendError, BackendErrorKind};
use tenure_tokio::Tokio;

/// Bumped in a child after `fork()` (`os.register_at_fork` calls [`forked`]).
static FORKS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's copy of the runtime's handle, and the [`FORKS`] count it was taken at.
    static HANDLE: RefCell<Option<(u64, tokio::runtime::Handle)>> = const { RefCell::new(None) };
}

/// Called in a forked child: the runtime is made anew on its next use.
#[pyfunction]
fn forked() {
    FORKS.fetch_add(1, Ordering::SeqCst);
}

/// How many times this process was forked into (0 in the process Python started).
pub(crate) fn forks() -> u64 {
    FORKS.load(Ordering::SeqCst)
}

/// The tokio runtime of this process, from this thread's copy of its handle while no fork
/// happened since it was taken (polls ask on every wake-up: no lock, no `getpid`).
pub(crate) fn tokio_handle() -> tokio::runtime::Handle {
    let forks = forks();
    let cached = HANDLE.with_borrow(|h| h.as_ref().filter(|(at, _)| *at == forks).map(|(_, h)| h.clone()));
    cached.unwrap_or_else(|| {
        let handle = process_runtime();
        HANDLE.set(Some((forks, handle.clone())));
        handle
    })
}

/// The tokio runtime of this process: made on first use, and made again in a child after
/// `fork()` (the parent's worker threads do not exist there). The parent's runtime is leaked in
/// the child, never dropped: its threads are gone, so dropping it could wait forever.
fn process_runtime() -> tokio::runtime::Handle {
    static RUNTIME: std::sync::Mutex<Option<(u32, tokio::runtime::Runtime)>> = std::sync::Mutex::new(None);
    let pid = std::process::id();
    let mut slot = RUNTIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((owner, runtime)) = slot.as_ref()
        && *owner == pid
    {
        return runtime.handle().clone();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("tenure")
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("cannot start tenure's runtime threads: {e}"));
    let handle = runtime.handle().clone();
    if let Some(parents) = slot.replace((pid, runtime)) {
        std::mem::forget(parents);
    }
    handle
}

/// The runtime every Tenure task of this process runs on.
pub(crate) fn runtime() -> Tokio {
    Tokio::from_handle(tokio_handle())
}

/// The Python exception for a Tenure error: `tenure.errors._from_table` raises the class the
/// core's error table names, with the error's fields.
pub(crate) fn py_error(py: Python<'_>, error: &tenure::Error) -> PyErr {
    let made = error_fields(py, error).and_then(|fields| {
        py.import("tenure.errors")?
            .call_method1("_from_table", (error.class().class, error.code(), error.to_string(), fields))
    });
    let exception = match made {
        Ok(exception) => exception,
        Err(e) => return e,
    };
    // The store's failure behind it, if any, is its `__cause__`.
    let cause = std::error::Error::source(error).and_then(|s| s.downcast_ref::<BackendError>());
    if let Some(cause) = cause
        && let Err(e) = exception.setattr("__cause__", backend_exception(py, cause).into_value(py))
    {
        return e;
    }
    PyErr::from_value(exception)
}

/// The fields of the error's class (`tenure_core::error::table`) as Python attributes, in
/// seconds; the store's failure is the exception's `__cause__` instead.
fn error_fields<'py>(py: Python<'py>, error: &tenure::Error) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    use tenure::core::error::table::FieldValue;
    let fields = pyo3::types::PyDict::new(py);
    for (field, value) in error.fields() {
        match value {
            FieldValue::Text(text) => fields.set_item(field.as_str(), text)?,
            FieldValue::Duration(d) => fields.set_item(field.as_str(), d.as_secs_f64())?,
            // The store's failure is the `__cause__` (below).
            _ => {}
        }
    }
    Ok(fields)
}

/// The table of error classes and one raised example of `code`: the cross-binding error test's
/// hooks (`tests/interop/errors.py`).
#[pyfunction]
fn _error_table() -> String {
    tenure::core::error::table::to_json()
}

#[pyfunction]
fn _raise_error_example(py: Python<'_>, code: &str) -> PyResult<()> {
    match tenure::Error::examples().into_iter().find(|e| e.code() == code) {
        Some(e) => Err(py_error(py, &e)),
        None => Err(pyo3::exceptions::PyKeyError::new_err(code.to_owned())),
    }
}

/// The Python exception for a store's failure: the exception a user's backend raised (kept as
/// the failure's source), else a `TimeoutError`, `ConnectionError` or `RuntimeError` saying what
/// the store did.
pub(crate) fn backend_exception(py: Python<'_>, error: &BackendError) -> PyErr {
    let raised = std::error::Error::source(error).and_then(|s| s.downcast_ref::<PyErr>());
    if let Some(raised) = raised {
        return raised.clone_ref(py);
    }
    let message = error.to_string();
    let made = match error.kind() {
        BackendErrorKind::Timeout => pyo3::exceptions::PyTimeoutError::new_err(message),
        BackendErrorKind::Unavailable | BackendErrorKind::Closed => {
            pyo3::exceptions::PyConnectionError::new_err(message)
        }
        _ => pyo3::exceptions::PyRuntimeError::new_err(message),
    };
    // Its `STORE_*` code, as Node's and the JVM's store errors have it (a builtin exception
    // takes new attributes; an exception a user's backend raised is handed back untouched).
    match made.value(py).setattr("code", error.kind().code()) {
        Ok(()) => made,
        Err(e) => e,
    }
}

/// Seconds as the core reads them: finite and not negative, else a settings error naming `field`.
pub(crate) fn seconds(py: Python<'_>, field: &str, value: f64) -> PyResult<Duration> {
    tenure::core::time::seconds(field, value).map_err(|e| py_error(py, &e))
}

/// A resolved configuration as Python sees it: the worker and the given numbers.
pub(crate) fn config_dict<'py>(
    py: Python<'py>,
    worker: &tenure::WorkerId,
    values: &[(&str, f64)],
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let dict = pyo3::types::PyDict::new(py);
    dict.set_item("worker", worker.as_str())?;
    for (key, value) in values {
        dict.set_item(*key, *value)?;
    }
    Ok(dict)
}

#[pymodule]
fn _tenure(m: &Bound<'_, PyModule>) -> PyResult<()> {
    logging::install(std::env::var("TENURE_LOG_DEBUG").is_ok_and(|v| v == "1"));
    // The workspace version the native module was built from (`tenure.__version__`).
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<backend::Backend>()?;
    m.add_class::<lock::Lock>()?;
    m.add_class::<lock::Holder>()?;
    m.add_class::<rw_lock::ReadWriteLock>()?;
    m.add_class::<rw_lock::ReadWriteHolders>()?;
    m.add_class::<sem::Semaphore>()?;
    m.add_class::<task_lock::TaskLock>()?;
    m.add_class::<task_lock::TaskGuard>()?;
    m.add_class::<kept::Kept>()?;
    m.add_class::<election::LeaderElection>()?;
    m.add_class::<user::Answer>()?;
    m.add_class::<user::Fences>()?;
    m.add_function(wrap_pyfunction!(_error_table, m)?)?;
    m.add_function(wrap_pyfunction!(telemetry::telemetry_install, m)?)?;
    m.add_function(wrap_pyfunction!(telemetry::telemetry_uninstall, m)?)?;
    m.add_function(wrap_pyfunction!(telemetry::telemetry_set_name_limit, m)?)?;
    m.add_function(wrap_pyfunction!(telemetry::telemetry_observe, m)?)?;
    m.add_function(wrap_pyfunction!(telemetry::telemetry_instruments, m)?)?;
    m.add_function(wrap_pyfunction!(_raise_error_example, m)?)?;
    m.add_function(wrap_pyfunction!(backend::memory_backend, m)?)?;
    m.add_function(wrap_pyfunction!(backend::user_backend, m)?)?;
    m.add_function(wrap_pyfunction!(calls::lock_acquire, m)?)?;
    m.add_function(wrap_pyfunction!(calls::lock_release, m)?)?;
    m.add_function(wrap_pyfunction!(calls::lock_locked, m)?)?;
    m.add_function(wrap_pyfunction!(calls::lock_owned, m)?)?;
    m.add_function(wrap_pyfunction!(calls::leader_acquire_or_renew, m)?)?;
    m.add_function(wrap_pyfunction!(calls::leader_release, m)?)?;
    m.add_function(wrap_pyfunction!(calls::leader_get, m)?)?;
    m.add_function(wrap_pyfunction!(rw_calls::rw_acquire_read, m)?)?;
    m.add_function(wrap_pyfunction!(rw_calls::rw_acquire_write, m)?)?;
    m.add_function(wrap_pyfunction!(rw_calls::rw_downgrade, m)?)?;
    m.add_function(wrap_pyfunction!(rw_calls::rw_state, m)?)?;
    m.add_function(wrap_pyfunction!(rw_calls::rw_flag, m)?)?;
    m.add_function(wrap_pyfunction!(sem::sem_acquire, m)?)?;
    m.add_function(wrap_pyfunction!(sem::sem_state, m)?)?;
    m.add_function(wrap_pyfunction!(sem::sem_release, m)?)?;
    m.add_function(wrap_pyfunction!(sem::sem_owned, m)?)?;
    m.add_function(wrap_pyfunction!(backend::open_backend, m)?)?;
    m.add_function(wrap_pyfunction!(backend::store_url, m)?)?;
    m.add_function(wrap_pyfunction!(backend::sqlite_file, m)?)?;
    m.add_function(wrap_pyfunction!(bridge::shutdown, m)?)?;
    m.add_function(wrap_pyfunction!(forked, m)?)?;
    m.add_function(wrap_pyfunction!(judge_reach, m)?)?;
    Ok(())
}

/// The store opener's judgement of backends' reach ([`tenure_open::reach::judge`]): `("fine", None, None)`,
/// `("refused", message, None)` or `("warned", message, unknown_environment_message)`. Every
/// reach named is one of `process`, `host`, `cluster`.
#[pyfunction]
fn judge_reach(
    owner: &str,
    backends: Vec<(String, String)>,
    requires: &str,
    environment: Option<&str>,
) -> PyResult<(&'static str, Option<String>, Option<String>)> {
    use tenure_open::reach::{Reach, Verdict, judge};
    let reach = |text: &str| {
        Reach::parse(text).ok_or_else(|| pyo3::exceptions::PyValueError::new_err(format!("unknown reach {text:?}")))
    };
    let backends = backends.into_iter().map(|(label, r)| Ok((label, reach(&r)?))).collect::<PyResult<Vec<_>>>()?;
    Ok(match judge(owner, &backends, reach(requires)?, environment) {
        Verdict::Fine => ("fine", None, None),
        Verdict::Refused(message) => ("refused", Some(message), None),
        Verdict::Warned { unknown_environment, message } => ("warned", Some(message), unknown_environment),
    })
}
