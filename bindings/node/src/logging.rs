//! The driver's `tracing` events, handed to JavaScript (`lib/logging.js` emits them on the
//! process's `logger`): leadership gained, released and stopped at `info`, a lost lock or
//! leadership at `warn`, store failures at `error`, every acquire and release at `debug` for a
//! listener that asked for them; nothing is recorded while none listens. Each listening
//! JavaScript thread gets every event through its inbox: one that comes up on that thread during
//! a call is delivered when the call's work is done, before it returns (so a short script's last
//! records are not lost at exit); one from another thread at the loop's next turn.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once, PoisonError};

use napi::Env;
use napi::bindgen_prelude::{Function, FunctionRef, Unknown};
use napi_derive::napi;
use tenure::host::{Home, call_on};
use tenure::log::{Forward, LogRecord};
use tracing::Level;

use crate::event_loop::Inbox;

/// `[level, message, fields as JSON pairs]` (one array argument).
type Entry = (String, String, String);

/// A listening thread's sink.
#[derive(Clone)]
struct Sink {
    id: u32,
    debug: bool,
    home: Arc<Inbox>,
    function: Arc<FunctionRef<Entry, Unknown<'static>>>,
}

static SINKS: Mutex<Vec<Sink>> = Mutex::new(Vec::new());
/// How many sinks there are, and how many want `debug` events: read at every event.
static LISTENING: AtomicU32 = AtomicU32::new(0);
static DEBUGGING: AtomicU32 = AtomicU32::new(0);

/// Counts a sink in (`by` 1) or out (`by` u32::MAX, that is -1).
fn count(sink: &Sink, by: u32) {
    LISTENING.fetch_add(by, Ordering::Relaxed);
    if sink.debug {
        DEBUGGING.fetch_add(by, Ordering::Relaxed);
    }
}

fn sinks() -> MutexGuard<'static, Vec<Sink>> {
    SINKS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Starts handing events to `sink([level, message, fieldPairsJson])` on this thread; `debug` adds every
/// acquire and release. Returns the id that [`unlisten_logs`] takes.
#[napi]
pub fn listen_logs(env: &Env, sink: Function<'_, Entry, Unknown<'static>>, debug: bool) -> napi::Result<u32> {
    static INSTALL: Once = Once::new();
    static NEXT: AtomicU32 = AtomicU32::new(1);
    INSTALL.call_once(|| {
        // Another global subscriber (none in a Node process) would keep it.
        let _ = tracing::subscriber::set_global_default(Forward::new(wanted, forward));
    });
    let home = Inbox::of(env.raw())?;
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    let sink = Sink { id, debug, home, function: Arc::new(sink.create_ref()?) };
    count(&sink, 1);
    sinks().push(sink);
    Ok(id)
}

/// Stops handing events to the sink `id`.
#[napi]
pub fn unlisten_logs(id: u32) {
    sinks().retain(|sink| {
        let keep = sink.id != id;
        if !keep {
            count(sink, u32::MAX);
        }
        keep
    });
}

fn wanted(level: Level) -> bool {
    let wanted = if level > Level::INFO { &DEBUGGING } else { &LISTENING };
    wanted.load(Ordering::Relaxed) > 0
}

fn forward(record: &LogRecord) {
    let level = match record.level {
        Level::ERROR => "error",
        Level::WARN => "warn",
        Level::INFO => "info",
        _ => "debug",
    };
    // `[[name, value], …]`, in the event's order.
    let fields = serde_json::to_string(&record.fields).unwrap_or_else(|_| "[]".to_owned());
    let debug = record.level > Level::INFO;
    let listening: Vec<Sink> = {
        let mut sinks = sinks();
        // A thread whose environment is gone (a worker that ended) listens no more.
        sinks.retain(|sink| {
            let alive = sink.home.is_alive();
            if !alive {
                count(sink, u32::MAX);
            }
            alive
        });
        sinks.iter().filter(|sink| !debug || sink.debug).cloned().collect()
    };
    for sink in listening {
        let entry = (level.to_owned(), record.message.clone(), fields.clone());
        let home: Arc<dyn Home> = sink.home.clone();
        call_on(&home, Box::new(move || deliver(&sink, entry)));
    }
}

/// Calls a sink's function (on its thread; `lib/logging.js` keeps a listener's exception from
/// reaching here).
fn deliver(sink: &Sink, entry: Entry) {
    let env = Env::from_raw(sink.home.env());
    if let Ok(function) = sink.function.borrow_back(&env) {
        let _ = function.call(entry);
    }
}
