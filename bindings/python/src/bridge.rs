//! Rust futures as asyncio awaitables.
//!
//! - A future is polled once on the calling thread (inside the tokio runtime's context): if it
//!   is already done — the memory backend, an uncontended lock — the caller gets an
//!   already-completed asyncio future, with no thread hop and no task spawned.
//! - Otherwise it runs on the tokio runtime, and its result is handed to the event loop with
//!   `call_soon_threadsafe`. Cancelling the asyncio future drops the Rust future (an abandoned
//!   acquire then gives back a grant that lands afterwards, as the driver does in Rust).
//! - At interpreter exit ([`shutdown`], run by `atexit`), completions stop touching Python and
//!   the exit waits for any completion already inside Python to leave, so no runtime thread runs
//!   Python code while the interpreter is being torn down.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use tokio::sync::oneshot;

use crate::py_error;

/// Why a bridged call failed.
pub(crate) enum Fail {
    /// An error of the core (mapped to its Python class by code).
    Core(tenure::Error),
    /// A store that could not be reached or opened.
    Connection(String),
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

/// Runs `fut` as an asyncio awaitable on the running event loop.
pub(crate) fn awaitable<'py, T, F>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    T: for<'a> IntoPyObject<'a> + Send + 'static,
    F: Future<Output = Result<T, Fail>> + Send + 'static,
{
    let mut fut: Pin<Box<dyn Future<Output = Outcome> + Send>> =
        Box::pin(async move { fut.await.map(|v| Box::new(v) as Box<dyn ToPy>) });
    let event_loop = get_running_loop(py)?;
    let py_future = event_loop.call_method0("create_future")?;
    let runtime = crate::tokio_handle();
    let first = {
        let _context = runtime.enter();
        fut.as_mut().poll(&mut Context::from_waker(Waker::noop()))
    };
    if let Poll::Ready(outcome) = first {
        settle(py, &py_future, outcome)?;
        return Ok(py_future);
    }
    let (cancel_tx, cancel_rx) = oneshot::channel::<()>();
    py_future.call_method1("add_done_callback", (CancelOnDone { cancel: Mutex::new(Some(cancel_tx)) },))?;
    let (event_loop, target) = (event_loop.unbind(), py_future.clone().unbind());
    runtime.spawn(async move {
        let outcome = tokio::select! {
            outcome = fut => outcome,
            _ = cancel_rx => return, // the asyncio future was cancelled (or dropped)
        };
        complete(&event_loop, target, outcome);
    });
    Ok(py_future)
}

/// Runs `fut` on the runtime and blocks the calling thread (without the interpreter lock) until
/// it is done: the `from_thread` adapters.
pub(crate) fn block_on<T, F>(py: Python<'_>, fut: F) -> PyResult<T>
where
    T: Send,
    F: Future<Output = Result<T, Fail>> + Send,
{
    let handle = crate::tokio_handle();
    let outcome = py.detach(|| handle.block_on(fut));
    outcome.map_err(|fail| fail.into_py(py))
}

/// Hands `outcome` to the event loop from a runtime thread, unless the interpreter is exiting.
fn complete(event_loop: &Py<PyAny>, target: Py<PyAny>, outcome: Outcome) {
    with_python(|py| {
        let handed = result_args(py, outcome).and_then(|(error, value)| {
            let setter = completer(py)?;
            event_loop.call_method1(py, "call_soon_threadsafe", (setter, target, error, value))
        });
        if let Err(e) = handed {
            // The loop is closed: nobody awaits this future any more.
            e.print(py);
        }
    });
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
struct CancelOnDone {
    cancel: Mutex<Option<oneshot::Sender<()>>>,
}

#[pymethods]
impl CancelOnDone {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if future.call_method0("cancelled")?.is_truthy()?
            && let Some(cancel) = self.cancel.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
        {
            let _ = cancel.send(());
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
