//! # tenure-uniffi
//!
//! Tenure through [uniffi](https://mozilla.github.io/uniffi-rs/): the coordination API —
//! stores opened from a URL, [`Lock`] with fencing tokens and keep-alive, [`TaskLock`],
//! [`LeaderElection`] with a [`LeadershipListener`] — for Kotlin on the JVM (and Java through
//! it) and Swift, generated from these definitions. The Kotlin package adds its idioms on top
//! (`withLock { }`, `lead { }`, `kotlin.time.Duration`, `AutoCloseable`, an exception
//! hierarchy): `bindings/uniffi/kotlin/`.
//!
//! Every call comes twice: `async` (Kotlin `suspend`, Swift `async`), and `*_blocking` for
//! callers without coroutines (Java). Durations are seconds as `f64` (Swift's `TimeInterval`),
//! checked by the core; fencing tokens are `i64` (Java's `long`).
//!
//! A binding converts, calls the driver and maps errors; it decides nothing.

// A foreign caller holds these types through uniffi's handles, never as Rust values.
#![allow(unreachable_pub, missing_debug_implementations)]
// uniffi hands arguments over owned.
#![allow(clippy::needless_pass_by_value)]
// An error is lowered into a buffer the moment it crosses to Kotlin or Swift: the size of the
// `Result` a call returns never travels (the error carries every field of the core's table).
#![allow(clippy::result_large_err)]

#[cfg(feature = "bench")]
mod bench;
mod coordination;
mod election;
mod error;
mod guard;
mod lock;
mod logging;
mod rw;
mod seconds;
mod store;
mod task_lock;
mod telemetry;
mod user;

use std::future::Future;
use tenure::Runtime;
use tenure_tokio::Tokio;

pub use election::{
    ElectionOptions, ElectionSettings, LeaderElection, LeaderRecord, LeadershipListener, ListenerError,
};
pub use error::{StoreFailure, TenureError};
pub use guard::{KeepAliveStop, LockGuard};
pub use lock::{Lock, LockOptions, LockSettings};
pub use logging::{LogField, LogSink, listen_logs};
pub use rw::{ReadWriteLock, ReadWriteLockState, Semaphore, SemaphoreState};
pub use store::Store;
pub use task_lock::{TaskLock, TaskLockOptions, TaskLockSettings, TaskRun};

uniffi::setup_scaffolding!("tenure");

/// The tokio runtime every Tenure task of this process runs on (renewals, elections, store
/// connections); its threads never keep the process alive.
fn process_runtime() -> &'static tokio::runtime::Runtime {
    tenure_tokio::process_runtime()
}

/// The runtime Tenure's primitives run on.
fn runtime() -> Tokio {
    Tokio::from_handle(process_runtime().handle().clone())
}

/// `work` run to completion on the calling thread (a `*_blocking` call): refused with
/// `EventLoopDeadlock` on a thread of Tenure's own runtime (a listener calling back in).
fn block<T>(what: &str, work: impl Future<Output = Result<T, TenureError>>) -> Result<T, TenureError> {
    runtime().block_on(what, work)?
}
