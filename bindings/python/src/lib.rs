//! `tenure._tenure`: the native half of the Python package `tenure`. The Python half
//! (`python/tenure/`) gives it grelmicro's API — context managers, per-task holders, configs —
//! and this module runs Tenure's driver on a tokio runtime of its own, handing Python awaitables
//! that complete from it.

#![allow(unsafe_code)] // pyo3's macros expand to unsafe glue

mod backend;
mod bridge;
mod lock;

use std::time::Duration;

use pyo3::prelude::*;
use tenure_tokio::Tokio;

/// The runtime every Tenure task of this process runs on.
pub(crate) fn runtime() -> Tokio {
    Tokio::from_handle(pyo3_async_runtimes::tokio::get_runtime().handle().clone())
}

/// The Python exception for a Tenure error: `tenure.errors._from_rust` picks the class by the
/// error's code.
pub(crate) fn py_error(py: Python<'_>, error: &tenure::Error) -> PyErr {
    let timeout = match error {
        tenure::Error::Timeout { timeout, .. } => Some(timeout.as_secs_f64()),
        _ => None,
    };
    let made = py
        .import("tenure.errors")
        .and_then(|errors| errors.call_method1("_from_rust", (error.code(), error.to_string(), error.name(), timeout)));
    match made {
        Ok(exception) => PyErr::from_value(exception),
        Err(e) => e,
    }
}

/// Seconds as the core reads them: finite and not negative, else a settings error naming `field`.
pub(crate) fn seconds(py: Python<'_>, field: &str, value: f64) -> PyResult<Duration> {
    tenure::core::time::seconds(field, value).map_err(|e| py_error(py, &e))
}

#[pymodule]
fn _tenure(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<backend::Backend>()?;
    m.add_class::<lock::Lock>()?;
    m.add_class::<lock::Holder>()?;
    m.add_function(wrap_pyfunction!(backend::memory_backend, m)?)?;
    m.add_function(wrap_pyfunction!(backend::open_backend, m)?)?;
    m.add_function(wrap_pyfunction!(bridge::shutdown, m)?)?;
    Ok(())
}
