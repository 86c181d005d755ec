//! `from_thread`: the same holders as the async API, waited for on the calling thread (without
//! the interpreter lock) — a lock's thread holder (`:thread:` tokens, one per Python thread, kept
//! by `tenure._thread`) and a task lock's thread run. grelmicro's `do_thread_*` calls drive the
//! same holders from the event loop, so both ways share one state per thread.

use std::future::Future;

use pyo3::prelude::*;
use tenure::Runtime;

use crate::{py_error, runtime};

/// Runs a blocking call of the driver with the interpreter lock released.
pub(crate) fn detached<T: Send>(py: Python<'_>, call: impl FnOnce() -> Result<T, tenure::Error> + Send) -> PyResult<T> {
    py.detach(call).map_err(|e| py_error(py, &e))
}

/// Waits for `work` on the calling thread, with the interpreter lock released (`what` names the
/// call if it would stall the runtime).
pub(crate) fn block<T: Send>(
    py: Python<'_>,
    what: &str,
    work: impl Future<Output = Result<T, tenure::Error>> + Send,
) -> PyResult<T> {
    let runtime = runtime();
    detached(py, || runtime.block_on(what, work)?)
}
