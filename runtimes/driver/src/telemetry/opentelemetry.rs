//! The driver's measurements and spans through the OpenTelemetry API (feature `opentelemetry`):
//! the instruments are made on the global meter provider's `tenure` meter, the spans on its
//! `tenure` tracer, so whatever SDK and exporter the program set up receives them.
//!
//! ```no_run
//! // After setting the global meter and tracer providers (opentelemetry_sdk, an exporter):
//! tenure::telemetry::opentelemetry::install();
//! ```

use std::collections::HashMap;
use std::sync::Arc;

use opentelemetry::metrics::{
    Counter, Gauge, Histogram, Meter, ObservableGauge, ObservableUpDownCounter, UpDownCounter,
};
use opentelemetry::trace::{Span as _, SpanKind, Status, Tracer};
use opentelemetry::{InstrumentationScope, KeyValue, global};

use super::{INSTRUMENTS, Instrument, InstrumentKind, Measurement, SpanRecord, Telemetry, Value, observe};

/// Installs [`OpenTelemetry`] on the global providers as the driver's sink. Set the providers
/// first: instruments are made on the provider in place now.
pub fn install() {
    super::install(Arc::new(OpenTelemetry::global()));
}

/// A [`Telemetry`] sink on OpenTelemetry's API.
pub struct OpenTelemetry {
    instruments: HashMap<&'static str, Handle>,
    tracer: global::BoxedTracer,
}

enum Handle {
    Counter(Counter<f64>),
    UpDown(UpDownCounter<f64>),
    Histogram(Histogram<f64>),
    Gauge(Gauge<f64>),
    /// Registered with a callback reading [`observe`]: kept alive, never recorded.
    ObservedUpDown(#[allow(dead_code)] ObservableUpDownCounter<f64>),
    Observed(#[allow(dead_code)] ObservableGauge<f64>),
}

impl OpenTelemetry {
    /// The sink on the global meter and tracer providers in place now.
    pub fn global() -> Self {
        let scope = || InstrumentationScope::builder("tenure").with_version(env!("CARGO_PKG_VERSION")).build();
        Self::with_boxed(&global::meter_with_scope(scope()), global::tracer_with_scope(scope()))
    }

    /// The sink on `meter` and `tracer` (an SDK's own, say).
    pub fn new<T, S>(meter: &Meter, tracer: T) -> Self
    where
        T: Tracer<Span = S> + Send + Sync + 'static,
        S: opentelemetry::trace::Span + Send + Sync + 'static,
    {
        Self::with_boxed(meter, global::BoxedTracer::new(Box::new(tracer)))
    }

    fn with_boxed(meter: &Meter, tracer: global::BoxedTracer) -> Self {
        let instruments = INSTRUMENTS.iter().map(|instrument| (instrument.name, handle(meter, instrument))).collect();
        Self { instruments, tracer }
    }
}

fn handle(meter: &Meter, instrument: &Instrument) -> Handle {
    let (name, unit, description) = (instrument.name, instrument.unit, instrument.description);
    match instrument.kind {
        InstrumentKind::Counter => {
            Handle::Counter(meter.f64_counter(name).with_unit(unit).with_description(description).build())
        }
        InstrumentKind::UpDownCounter => {
            Handle::UpDown(meter.f64_up_down_counter(name).with_unit(unit).with_description(description).build())
        }
        InstrumentKind::Histogram => Handle::Histogram(
            meter
                .f64_histogram(name)
                .with_unit(unit)
                .with_description(description)
                .with_boundaries(instrument.boundaries.to_vec())
                .build(),
        ),
        InstrumentKind::Gauge => {
            Handle::Gauge(meter.f64_gauge(name).with_unit(unit).with_description(description).build())
        }
        InstrumentKind::ObservableUpDownCounter => {
            let builder = meter.f64_observable_up_down_counter(name).with_unit(unit).with_description(description);
            Handle::ObservedUpDown(builder.with_callback(observer(*instrument)).build())
        }
        _ => {
            let builder = meter.f64_observable_gauge(name).with_unit(unit).with_description(description);
            Handle::Observed(builder.with_callback(observer(*instrument)).build())
        }
    }
}

/// The callback of an observable instrument: the driver's values now, while a sink is installed.
fn observer(instrument: Instrument) -> impl Fn(&dyn opentelemetry::metrics::AsyncInstrument<f64>) + Send + Sync {
    move |out| {
        if super::enabled() {
            observe(&instrument, |value, attributes| out.observe(value, &key_values(attributes)));
        }
    }
}

fn value(value: &Value) -> opentelemetry::Value {
    match value {
        Value::Static(text) => opentelemetry::Value::String((*text).into()),
        Value::Str(text) => opentelemetry::Value::String(text.clone().into()),
        Value::Int(number) => opentelemetry::Value::I64(*number),
    }
}

fn key_values(attributes: &[(&'static str, Value)]) -> Vec<KeyValue> {
    attributes.iter().map(|(key, v)| KeyValue::new(*key, value(v))).collect()
}

impl Telemetry for OpenTelemetry {
    fn record(&self, m: &Measurement<'_>) {
        let Some(handle) = self.instruments.get(m.instrument.name) else { return };
        let attributes = key_values(m.attributes);
        match handle {
            Handle::Counter(counter) => counter.add(m.value, &attributes),
            Handle::UpDown(counter) => counter.add(m.value, &attributes),
            Handle::Histogram(histogram) => histogram.record(m.value, &attributes),
            Handle::Gauge(gauge) => gauge.record(m.value, &attributes),
            Handle::ObservedUpDown(_) | Handle::Observed(_) => {}
        }
    }

    fn span(&self, record: &SpanRecord) {
        let mut span = self
            .tracer
            .span_builder(record.name)
            .with_kind(SpanKind::Internal)
            .with_start_time(record.start)
            .with_attributes(key_values(&record.attributes))
            // A root span: the driver's thread carries no caller's context.
            .start_with_context(&self.tracer, &opentelemetry::Context::new());
        for event in &record.events {
            span.add_event_with_timestamp(event.name, event.at, key_values(&event.attributes));
        }
        if let Some(error) = &record.error {
            span.set_status(Status::error(error.clone()));
        }
        span.end_with_timestamp(record.end);
    }
}

impl std::fmt::Debug for OpenTelemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenTelemetry").field("instruments", &self.instruments.len()).finish_non_exhaustive()
    }
}
