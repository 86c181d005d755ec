//! The driver's measurements and spans, handed to JavaScript (`lib/telemetry.js` gives them to
//! `@opentelemetry/api`). The driver decides what is measured; this converts its records to JSON,
//! a batch at a time, on the thread that installed the listener (at the loop's next turn, through
//! its inbox: never on a thread that drives a lock, and never keeping the loop alive).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use napi::Env;
use napi::bindgen_prelude::{Function, FunctionRef, Unknown};
use napi_derive::napi;
use serde_json::{Value as Json, json};
use tenure::host::{Home, call_on};
use tenure::telemetry::{self, Forward, Record, Value};

use crate::event_loop::Inbox;

/// The listener: its thread's inbox and its function (`deliver(batchJson)`).
struct Listener {
    home: Arc<Inbox>,
    function: Arc<FunctionRef<String, Unknown<'static>>>,
}

static LISTENER: Mutex<Option<Listener>> = Mutex::new(None);

/// Hands the driver's records to `deliver(batchJson)` on this thread from now on (in place of any
/// listener before): a JSON array of `["m", name, kind, unit, description, boundaries, value,
/// attributes]` and `["s", name, start, end, attributes, events, error]` (times as
/// `[seconds, nanoseconds]` since the epoch).
#[napi]
pub fn listen_telemetry(env: &Env, deliver: Function<'_, String, Unknown<'static>>) -> napi::Result<()> {
    let listener = Listener { home: Inbox::of(env.raw())?, function: Arc::new(deliver.create_ref()?) };
    *LISTENER.lock().unwrap_or_else(PoisonError::into_inner) = Some(listener);
    telemetry::install(Arc::new(Forward::new(deliver_batch)));
    Ok(())
}

/// Stops measuring.
#[napi]
pub fn unlisten_telemetry() {
    telemetry::uninstall();
    *LISTENER.lock().unwrap_or_else(PoisonError::into_inner) = None;
}

/// Reports at most `limit` distinct lock names.
#[napi]
pub fn telemetry_set_name_limit(limit: u32) {
    telemetry::set_name_limit(limit as usize);
}

/// The instruments, as JSON `[[name, kind, unit, description, boundaries], …]`.
#[napi]
pub fn telemetry_instruments() -> String {
    let rows: Vec<Json> = telemetry::INSTRUMENTS
        .iter()
        .map(|i| json!([i.name, i.kind.as_str(), i.unit, i.description, i.boundaries]))
        .collect();
    Json::Array(rows).to_string()
}

/// The current values of the observable instrument `name`, as JSON `[[value, attributes], …]`.
#[napi]
pub fn telemetry_observe(name: String) -> String {
    let mut points = Vec::new();
    telemetry::observe_named(&name, |value, pairs| points.push(json!([value, attributes(pairs)])));
    Json::Array(points).to_string()
}

fn deliver_batch(batch: &[Record]) {
    let guard = LISTENER.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(listener) = guard.as_ref().filter(|listener| listener.home.is_alive()) else { return };
    let json = Json::Array(batch.iter().map(record).collect()).to_string();
    let (inbox, function) = (listener.home.clone(), listener.function.clone());
    drop(guard);
    let home: Arc<dyn Home> = inbox.clone();
    call_on(
        &home,
        Box::new(move || {
            let env = Env::from_raw(inbox.env());
            // A listener that throws loses that batch only (lib/telemetry.js catches).
            if let Ok(function) = function.borrow_back(&env) {
                let _ = function.call(json);
            }
        }),
    );
}

fn time(at: SystemTime) -> Json {
    let nanos = telemetry::unix_nanos(at);
    json!([nanos / 1_000_000_000, nanos % 1_000_000_000])
}

fn attributes(pairs: &[(&'static str, Value)]) -> Json {
    let map = pairs.iter().map(|(key, value)| {
        let value = match value {
            Value::Static(text) => json!(text),
            Value::Str(text) => json!(&**text),
            Value::Int(number) => json!(number),
            _ => Json::Null,
        };
        ((*key).to_owned(), value)
    });
    Json::Object(map.collect())
}

fn record(record: &Record) -> Json {
    match record {
        Record::Measurement { instrument: i, value, attributes: pairs } => {
            json!(["m", i.name, i.kind.as_str(), i.unit, i.description, i.boundaries, value, attributes(pairs)])
        }
        Record::Span(span) => {
            let events: Vec<Json> =
                span.events.iter().map(|e| json!([e.name, time(e.at), attributes(&e.attributes)])).collect();
            json!(["s", span.name, time(span.start), time(span.end), attributes(&span.attributes), events, span.error])
        }
        _ => json!(["x"]),
    }
}
