//! The driver's measurements and spans, handed to Python (`tenure/telemetry.py` gives them to
//! `opentelemetry-api`). The driver decides what is measured; this converts its records to
//! tuples, a batch at a time, on the driver's delivering thread (one interpreter lock per
//! batch, never on a thread that drives a lock).

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyTuple};
use tenure::telemetry::{self, Forward, Record, Value};

use crate::bridge::with_python;

/// `tenure.telemetry._deliver`, set at the first install (always that same function).
static DELIVER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Hands the driver's records to `deliver` from now on (`deliver(batch)`, a list of tuples:
/// `("m", name, kind, unit, description, boundaries, value, attributes)` for a measurement,
/// `("s", name, start_ns, end_ns, attributes, events, error)` for a span).
#[pyfunction]
pub(crate) fn telemetry_install(py: Python<'_>, deliver: Py<PyAny>) {
    let _ = DELIVER.set(py, deliver);
    telemetry::install(Arc::new(Forward::new(deliver_batch)));
}

/// Stops measuring.
#[pyfunction]
pub(crate) fn telemetry_uninstall() {
    telemetry::uninstall();
}

/// Reports at most `limit` distinct lock names (`tenure.telemetry.set_name_limit`).
#[pyfunction]
pub(crate) fn telemetry_set_name_limit(limit: usize) {
    telemetry::set_name_limit(limit);
}

/// The current values of the observable instrument `name` (holders, waiters, fences, leaders):
/// `[(value, attributes)]`, for the callback `tenure/telemetry.py` registers.
#[pyfunction]
pub(crate) fn telemetry_observe<'py>(py: Python<'py>, name: &str) -> PyResult<Vec<(f64, Bound<'py, PyDict>)>> {
    let mut points = Vec::new();
    let mut failed = None;
    telemetry::observe_named(name, |value, pairs| match attributes(py, pairs) {
        Ok(dict) => points.push((value, dict)),
        Err(e) => failed = Some(e),
    });
    failed.map_or(Ok(points), Err)
}

/// The instruments, as `(name, kind, unit, description, boundaries)`: the observable ones are
/// registered with callbacks at install.
#[pyfunction]
pub(crate) fn telemetry_instruments() -> Vec<(&'static str, &'static str, &'static str, &'static str, Vec<f64>)> {
    let row = |i: &&telemetry::Instrument| (i.name, i.kind.as_str(), i.unit, i.description, i.boundaries.to_vec());
    telemetry::INSTRUMENTS.iter().map(row).collect()
}

fn deliver_batch(batch: &[Record]) {
    with_python(|py| {
        let Some(deliver) = DELIVER.get(py) else { return };
        let converted = batch.iter().map(|record| tuple(py, record)).collect::<PyResult<Vec<_>>>();
        // A host that raises loses that batch only: measuring never fails the program.
        if let Ok(list) = converted.and_then(|tuples| PyList::new(py, tuples)) {
            let _ = deliver.call1(py, (list,));
        }
    });
}

fn attributes<'py>(py: Python<'py>, attributes: &[(&'static str, Value)]) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (key, value) in attributes {
        match value {
            Value::Static(text) => dict.set_item(*key, *text)?,
            Value::Str(text) => dict.set_item(*key, &**text)?,
            Value::Int(number) => dict.set_item(*key, *number)?,
            _ => {}
        }
    }
    Ok(dict)
}

fn tuple<'py>(py: Python<'py>, record: &Record) -> PyResult<Bound<'py, PyTuple>> {
    match record {
        Record::Measurement { instrument, value, attributes: pairs } => {
            let dict = attributes(py, pairs)?;
            let i = instrument;
            ("m", i.name, i.kind.as_str(), i.unit, i.description, i.boundaries.to_vec(), *value, dict).into_pyobject(py)
        }
        Record::Span(span) => {
            let events = span
                .events
                .iter()
                .map(|event| Ok((event.name, telemetry::unix_nanos(event.at), attributes(py, &event.attributes)?)));
            let events = events.collect::<PyResult<Vec<_>>>()?;
            let (start, end) = (telemetry::unix_nanos(span.start), telemetry::unix_nanos(span.end));
            ("s", span.name, start, end, attributes(py, &span.attributes)?, events, span.error.clone())
                .into_pyobject(py)
        }
        _ => ("x",).into_pyobject(py),
    }
}
