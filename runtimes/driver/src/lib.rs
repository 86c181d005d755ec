//! # tenure
//!
//! Distributed locks with fencing tokens, task locks for scheduled jobs, and leader election,
//! on any async runtime. Pick a runtime crate — `tenure-tokio`, `tenure-smol` or
//! `tenure-async-std` — and a backend; this crate is what they share.
//!
//! All decisions are made by the sans-IO machines of [`tenure_core`]; this crate runs them on a
//! [`Runtime`], talks to the backends, and gives them the API of grelmicro's coordination module
//! in Rust form: [`Lock`], [`ReadWriteLock`], [`Semaphore`], [`TaskLock`], [`LeaderElection`],
//! [`Coordination`].

#![deny(missing_docs)]

pub mod backend;
pub mod binding;
mod blocking;
mod builder;
mod coordination;
mod details;
mod drive;
mod election;
mod env;
pub mod host;
mod identity;
mod keep_alive;
mod lock;
pub mod log;
pub mod net;
mod observe;
pub mod runtime;
mod slots;
mod task_lock;
pub mod telemetry;

use std::time::Duration;

pub use backend::{
    BackendFuture, Holding, Inspect, LeaderElectionBackend, LeaderState, LockBackend, LockState, MemoryBackend,
    ReadWriteLockBackend, ReleaseSignals, ScheduleBackend, SemaphoreBackend, SharedState, Side, Signal, Waiting,
    Wakeup,
};
pub use blocking::{BlockingLock, BlockingLockGuard, BlockingLockHolder, BlockingTaskLock, BlockingTaskLockGuard};
pub use coordination::{Coordination, Provider, Registry};
pub use details::{HolderInfo, LockInfo, WaiterInfo};
pub use election::{LeaderElection, LeaderElectionBuilder, LeaderGuard, LeaderHealth};
pub use env::process_env;
pub use keep_alive::{KeepAlive, KeepAliveEnd, Keepable};
pub use lock::{
    Lock, LockBuilder, LockGuard, LockHolder, ReadGuard, ReadSide, ReadWriteHolders, ReadWriteLock,
    ReadWriteLockBuilder, Semaphore, SemaphoreBuilder, SemaphoreGuard, WriteGuard, WriteSide,
};
pub use runtime::Runtime;
pub use slots::Slots;
pub use task_lock::{TaskLock, TaskLockBuilder, TaskLockGuard};
/// The sans-IO core, for what this crate does not re-export.
pub use tenure_core as core;
pub use tenure_core::{
    Access, BackendError, BackendErrorKind, EnvOptions, EnvVars, Error, FencingToken, LeaderElectionConfig,
    LeaderRecord, LockConfig, LockHandle, Metadata, Name, PermitAnswer, RwState, SemState, StoreOp, StoreReply,
    TaskLockConfig, Timestamp, Token, WorkerId,
};

/// How long a store call nobody waits for any more (an abandoned request, a release handed over
/// by a dropped guard) is still given to finish in the background.
pub(crate) const HAND_OFF_BOUND: Duration = Duration::from_secs(60);
