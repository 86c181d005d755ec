//! The state gauges (holders, waiters, the last fence, leaders), kept by the driver per
//! primitive and name as atomics and read when a sink collects (its observable instruments'
//! callbacks call [`observe`]): a cycle moves an atomic, not a sink's aggregation.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::instruments::{FENCE, HOLDERS, LEADER, WAITERS};
use super::{INSTRUMENTS, Instrument, Value, names};

/// One primitive and name's gauges in this process.
#[derive(Debug, Default)]
pub(crate) struct Gauges {
    pub(crate) holders: AtomicI64,
    pub(crate) waiters: AtomicI64,
    /// The last fencing token granted (0: none yet).
    pub(crate) fence: AtomicU64,
    /// Elections of this process leading the name.
    pub(crate) leaders: AtomicI64,
}

type Registry = HashMap<&'static str, HashMap<Arc<str>, Arc<Gauges>>>;

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

/// The name as reported (bounded) and its gauges, for `primitive`.
pub(crate) fn register(primitive: &'static str, name: &str) -> (Arc<str>, Arc<Gauges>) {
    let name = names::reported(name);
    let mut registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    let by_name = registry.get_or_insert_with(HashMap::new).entry(primitive).or_default();
    let gauges = by_name.entry(name.clone()).or_default().clone();
    (name, gauges)
}

/// Hands `f` every current value of the observable `instrument`, with its attributes
/// (`primitive`, `name`): what a sink's callback reports when its host collects.
pub fn observe(instrument: &Instrument, mut f: impl FnMut(f64, &[(&'static str, Value)])) {
    // Read under the lock, reported after it: `f` may call into a host (an interpreter) that
    // must never be entered with the registry held.
    let mut points = Vec::new();
    {
        let registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(registry) = registry.as_ref() else { return };
        for (primitive, by_name) in registry {
            let election = *primitive == "election";
            for (name, gauges) in by_name {
                let value = match instrument.name {
                    n if n == HOLDERS.name && !election => gauges.holders.load(Ordering::Relaxed) as f64,
                    n if n == WAITERS.name && !election => gauges.waiters.load(Ordering::Relaxed) as f64,
                    n if n == LEADER.name && election => gauges.leaders.load(Ordering::Relaxed) as f64,
                    n if n == FENCE.name => match gauges.fence.load(Ordering::Relaxed) {
                        0 => continue,
                        fence => fence as f64,
                    },
                    _ => continue,
                };
                points.push((value, *primitive, name.clone()));
            }
        }
    }
    for (value, primitive, name) in points {
        f(value, &[("primitive", Value::Static(primitive)), ("name", Value::Str(name))]);
    }
}

/// [`observe`] of the instrument named `name` (nothing if the driver has none of that name): what
/// a binding's callback, which knows its instrument by name, calls.
pub fn observe_named(name: &str, f: impl FnMut(f64, &[(&'static str, Value)])) {
    if let Some(instrument) = INSTRUMENTS.iter().find(|instrument| instrument.name == name) {
        observe(instrument, f);
    }
}
