//! The driver's measurements and spans for the JVM package (`TenureTelemetry` hands them to a
//! listener the program gives: an OpenTelemetry bridge, Micrometer, a log). The driver decides
//! what is measured; this converts its records, a batch at a time, on the driver's delivering
//! thread (never on a thread that drives a lock).

use std::sync::{Arc, Mutex, PoisonError};

use tenure::telemetry::{self, Forward, Record, Value};

use crate::election::ListenerError;

/// An attribute: `primitive`, `name`, `outcome`, `cause`, `operation`, `fence`, … (text).
#[derive(Debug, Clone, uniffi::Record)]
pub struct TelemetryAttribute {
    pub key: String,
    pub value: String,
}

/// One instrument of the driver's table.
#[derive(Debug, Clone, uniffi::Record)]
pub struct TelemetryInstrument {
    pub name: String,
    /// `counter`, `up_down_counter`, `histogram`, `gauge`, `observable_up_down_counter` or
    /// `observable_gauge` (read with `telemetry_observe` when the host collects).
    pub kind: String,
    pub unit: String,
    pub description: String,
    pub boundaries: Vec<f64>,
}

/// One measurement on an instrument (not an observable one).
#[derive(Debug, Clone, uniffi::Record)]
pub struct TelemetryMeasurement {
    pub instrument: TelemetryInstrument,
    pub value: f64,
    pub attributes: Vec<TelemetryAttribute>,
}

/// An event of a span.
#[derive(Debug, Clone, uniffi::Record)]
pub struct TelemetryEvent {
    pub name: String,
    /// Nanoseconds since the epoch.
    pub at_nanos: u64,
    pub attributes: Vec<TelemetryAttribute>,
}

/// A finished span: `tenure.acquire`, `tenure.hold` or `tenure.release`.
#[derive(Debug, Clone, uniffi::Record)]
pub struct TelemetrySpan {
    pub name: String,
    pub start_nanos: u64,
    pub end_nanos: u64,
    pub attributes: Vec<TelemetryAttribute>,
    pub events: Vec<TelemetryEvent>,
    pub error: Option<String>,
}

/// A value of an observable instrument now.
#[derive(Debug, Clone, uniffi::Record)]
pub struct TelemetryPoint {
    pub value: f64,
    pub attributes: Vec<TelemetryAttribute>,
}

/// Hears the driver's measurements and spans (on a thread of the package's own).
#[uniffi::export(callback_interface)]
pub trait TelemetrySink: Send + Sync {
    fn measurement(&self, measurement: TelemetryMeasurement) -> Result<(), ListenerError>;
    fn span(&self, span: TelemetrySpan) -> Result<(), ListenerError>;
}

static SINK: Mutex<Option<Arc<dyn TelemetrySink>>> = Mutex::new(None);

/// Hands the driver's measurements and spans to `sink` from now on (in place of any before).
#[uniffi::export]
pub fn listen_telemetry(sink: Box<dyn TelemetrySink>) {
    *SINK.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::from(sink));
    telemetry::install(Arc::new(Forward::new(deliver)));
}

/// Stops measuring.
#[uniffi::export]
pub fn unlisten_telemetry() {
    telemetry::uninstall();
    *SINK.lock().unwrap_or_else(PoisonError::into_inner) = None;
}

/// Reports at most `limit` distinct lock names; later ones as `_other`.
#[uniffi::export]
pub fn telemetry_set_name_limit(limit: u32) {
    telemetry::set_name_limit(limit as usize);
}

/// The driver's instruments.
#[uniffi::export]
pub fn telemetry_instruments() -> Vec<TelemetryInstrument> {
    telemetry::INSTRUMENTS.iter().map(|i| instrument(i)).collect()
}

/// The values of the observable instrument `name` now (holders, waiters, fences, leaders).
#[uniffi::export]
pub fn telemetry_observe(name: String) -> Vec<TelemetryPoint> {
    let mut points = Vec::new();
    if let Some(instrument) = telemetry::INSTRUMENTS.iter().find(|instrument| instrument.name == name) {
        telemetry::observe(instrument, |value, pairs| {
            points.push(TelemetryPoint { value, attributes: attributes(pairs) });
        });
    }
    points
}

fn deliver(batch: &[Record]) {
    let Some(sink) = SINK.lock().unwrap_or_else(PoisonError::into_inner).clone() else { return };
    for record in batch {
        // A listener that throws loses that record only.
        let _ = match record {
            Record::Measurement { instrument: i, value, attributes: pairs } => sink.measurement(TelemetryMeasurement {
                instrument: instrument(i),
                value: *value,
                attributes: attributes(pairs),
            }),
            Record::Span(span) => sink.span(TelemetrySpan {
                name: span.name.to_owned(),
                start_nanos: telemetry::unix_nanos(span.start),
                end_nanos: telemetry::unix_nanos(span.end),
                attributes: attributes(&span.attributes),
                events: span
                    .events
                    .iter()
                    .map(|e| TelemetryEvent {
                        name: e.name.to_owned(),
                        at_nanos: telemetry::unix_nanos(e.at),
                        attributes: attributes(&e.attributes),
                    })
                    .collect(),
                error: span.error.clone(),
            }),
            _ => Ok(()),
        };
    }
}

fn instrument(i: &telemetry::Instrument) -> TelemetryInstrument {
    TelemetryInstrument {
        name: i.name.to_owned(),
        kind: i.kind.as_str().to_owned(),
        unit: i.unit.to_owned(),
        description: i.description.to_owned(),
        boundaries: i.boundaries.to_vec(),
    }
}

fn attributes(pairs: &[(&'static str, Value)]) -> Vec<TelemetryAttribute> {
    pairs.iter().map(|(key, value)| TelemetryAttribute { key: (*key).to_owned(), value: value.to_string() }).collect()
}
