//! The native half of the npm package `tenure`. The JavaScript half (`lib/`) gives it Node's
//! idioms — error classes, `AbortSignal`, `using()`, `Symbol.asyncDispose` — and this addon runs
//! Tenure's driver: a call's future on the calling JavaScript thread, which settles its promise
//! (`event_loop`), and the driver's background tasks and timers on a tokio runtime of its own.
//!
//! A binding converts, calls the driver and maps errors; it decides nothing.

#![allow(unsafe_code)]
// napi's macros expand to unsafe glue
// napi classes and functions are exported to JavaScript, not to Rust crates, and their Debug
// would never be read.
#![allow(unreachable_pub, missing_debug_implementations)]
// napi hands arguments over owned.
#![allow(clippy::needless_pass_by_value)]
// Under `cfg(test)` napi registers nothing, so its exports look unused.
#![cfg_attr(test, allow(dead_code))]

mod backend;
mod cancel;
mod election;
mod event_loop;
mod fail;
mod lock;
mod logging;
mod millis;
mod promise;
mod rw;
mod sem;
mod task_lock;
mod telemetry;
mod user;

use tenure_tokio::Tokio;

/// The tokio runtime every Tenure task of this process runs on (renewals, elections, store
/// connections); its threads never keep the process alive.
fn process_runtime() -> &'static tokio::runtime::Runtime {
    tenure_tokio::process_runtime()
}

/// The runtime Tenure's locks run on.
pub(crate) fn runtime() -> Tokio {
    Tokio::from_handle(process_runtime().handle().clone())
}

/// The core's table of error classes, as JSON: the cross-binding error test's hook
/// (`tests/interop/errors.py`).
#[napi_derive::napi]
pub fn error_table() -> String {
    tenure::core::error::table::to_json()
}

/// Throws the core's example error of `code` (the cross-binding error test's hook).
#[napi_derive::napi]
pub fn raise_error_example(code: String) -> napi::Result<()> {
    match tenure::Error::examples().into_iter().find(|e| e.code() == code) {
        Some(e) => fail::sync(Err(fail::Fail::Core(e))),
        None => Err(napi::Error::from_reason(format!("no error has the code {code}"))),
    }
}

/// The addon's own allocations skip glibc's allocator, whose consolidation of freed chunks cost
/// about a sixth of a memory-store cycle when guards are finalized in batches by V8.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
