//! Rust futures as asyncio awaitables.
//!
//! - A future is polled at once on the calling thread, the event loop's (inside the tokio
//!   runtime's context): if it is already done — the memory backend, an uncontended lock — the
//!   caller gets an already-completed asyncio future, with no thread hop and nothing scheduled.
//! - Otherwise the loop polls it again whenever it is woken ([`LoopTask`]) and completes the
//!   asyncio future on its own thread. Cancelling the asyncio future drops the Rust future (an
//!   abandoned acquire then gives back a grant that lands afterwards, as the driver does in
//!   Rust).
//! - At interpreter exit ([`shutdown`], run by `atexit`), completions stop touching Python and
//!   the exit waits for any completion already inside Python to leave, so no runtime thread runs
//!   Python code while the interpreter is being torn down.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::aio::LoopTask;
use crate::py_error;
use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

/// Why a bridged call failed.
pub(crate) enum Fail {
    /// An error of the core (mapped to its Python class by code).
    Core(tenure::Error),
    /// A store that could not be reached or opened.
    Connection(String),
    /// A store's failure in a backend call made directly.
    Backend(tenure::core::BackendError),
    /// A bug: the operation panicked.
    Panic(String),
}

impl From<tenure::Error> for Fail {
    fn from(e: tenure::Error) -> Self {
        Self::Core(e)
    }
}

impl Fail {
    fn into_py(self, py: Python<'_>) -> PyErr {
        match self {
            Self::Core(e) => py_error(py, &e),
            Self::Connection(message) => pyo3::exceptions::PyConnectionError::new_err(message),
            Self::Backend(e) => crate::backend_exception(py, &e),
            Self::Panic(message) => {
                pyo3::exceptions::PyRuntimeError::new_err(format!("tenure failed (a bug, please report it): {message}"))
            }
        }
    }
}

type Outcome = Result<Box<dyn ToPy>, Fail>;

/// A result that becomes a Python object once the interpreter is at hand.
pub(crate) trait ToPy: Send {
    fn to_py(self: Box<Self>, py: Python<'_>) -> PyResult<Py<PyAny>>;
}

impl<T> ToPy for T
where
    T: for<'py> IntoPyObject<'py> + Send,
{
    fn to_py(self: Box<Self>, py: Python<'_>) -> PyResult<Py<PyAny>> {
        (*self).into_py_any(py)
    }
}

static SHUTTING_DOWN: AtomicBool = AtomicBool::new(false);
static IN_PYTHON: AtomicUsize = AtomicUsize::new(0);

/// Runs `fut` as an asyncio awaitable on the running event loop, as a [`LoopTask`]: polled now,
/// and again by the loop whenever it is woken. Done at once, the caller gets an already-completed
/// asyncio future.
pub(crate) fn awaitable<'py, T, F>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    T: for<'a> IntoPyObject<'a> + Send + 'static,
    F: Future<Output = Result<T, Fail>> + Send + 'static,
{
    let event_loop = get_running_loop(py)?;
    let py_future = event_loop.call_method0("create_future")?;
    let target = py_future.clone().unbind();
    let task = crate::aio::start(
        &event_loop,
        Box::pin(async move {
            let caught = futures_lite::FutureExt::catch_unwind(AssertUnwindSafe(fut)).await;
            let outcome = match caught {
                Ok(outcome) => outcome.map(|v| Box::new(v) as Box<dyn ToPy>),
                Err(panic) => Err(Fail::Panic(crate::aio::panic_message(panic.as_ref()).to_owned())),
            };
            with_python(|py| {
                if let Err(e) = settle(py, target.bind(py), outcome) {
                    e.print(py);
                }
            });
        }),
    )?;
    if !task.is_done() {
        py_future.call_method1("add_done_callback", (CancelOnDone(task),))?;
    }
    Ok(py_future)
}

/// Runs `f` with the interpreter, unless it is exiting ([`shutdown`]): how a thread of this
/// module other than Python's own touches Python.
pub(crate) fn with_python(f: impl FnOnce(Python<'_>)) {
    IN_PYTHON.fetch_add(1, Ordering::SeqCst);
    if !SHUTTING_DOWN.load(Ordering::SeqCst) {
        Python::attach(f);
    }
    IN_PYTHON.fetch_sub(1, Ordering::SeqCst);
}

/// Completes `py_future` now, on the calling thread.
fn settle(py: Python<'_>, py_future: &Bound<'_, PyAny>, outcome: Outcome) -> PyResult<()> {
    let (error, value) = result_args(py, outcome)?;
    completer(py)?.call1((py_future, error, value))?;
    Ok(())
}

/// `(exception, None)` or `(None, value)`.
fn result_args(py: Python<'_>, outcome: Outcome) -> PyResult<(Py<PyAny>, Py<PyAny>)> {
    Ok(match outcome {
        Ok(value) => (py.None(), value.to_py(py)?),
        Err(fail) => (fail.into_py(py).into_value(py).into_any(), py.None()),
    })
}

/// `tenure._bridge.complete(future, error, value)`: sets the result unless cancelled.
fn completer(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static COMPLETE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    COMPLETE
        .get_or_try_init(py, || py.import("tenure._bridge").and_then(|m| m.getattr("complete")).map(Bound::unbind))
        .map(|f| f.bind(py))
}

fn get_running_loop(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    py.import("asyncio")?.call_method0("get_running_loop")
}

/// Drops the Rust future when its asyncio future is done before it (cancelled).
#[pyclass(frozen, module = "tenure._tenure")]
struct CancelOnDone(Arc<LoopTask>);

#[pymethods]
impl CancelOnDone {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if future.call_method0("cancelled")?.is_truthy()? {
            self.0.cancel();
        }
        Ok(())
    }
}

/// Called by `atexit`: from now on completions do not touch Python, and this waits (without the
/// interpreter lock, at most 2 s) for those already inside it.
#[pyfunction]
pub(crate) fn shutdown(py: Python<'_>) {
    SHUTTING_DOWN.store(true, Ordering::SeqCst);
    py.detach(|| {
        let deadline = Instant::now() + Duration::from_secs(2);
        while IN_PYTHON.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}
