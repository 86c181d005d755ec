//! # tenure-core
//!
//! The sans-IO core of [Tenure](https://github.com/tenure-rs/tenure): distributed locks with
//! fencing tokens, task locks for scheduled jobs, and leader election, as pure state machines.
//!
//! The core never reads a clock, sleeps, opens a socket, draws OS randomness or depends on an
//! async runtime. It is fed events — commands, store replies tagged with the operation id they
//! answer, timer expiries — each carrying `now`, and it returns store operations to run
//! (`poll_effect`), application events (`poll_event`) and its next deadline (`poll_timeout`).
//! Drivers run these transitions on an async runtime, and the simulator in virtual time; every
//! language binding reaches them through a driver.
//!
//! It also holds the [`StoreModel`]: the reference semantics of a lease store, judged by a clock
//! passed in. The memory backend is that model behind a mutex; the simulator uses it as its
//! store; every real backend is tested against it.
//!
//! ```
//! use std::time::Duration;
//! use tenure_core::{
//!     Key, KeyKind, LockConfig, LockEvent, LockMachine, Name, SplitMix64, StoreModel, Timestamp,
//!     Token, WallTime,
//! };
//!
//! let mut rng = SplitMix64::new(7); // drivers seed from OS entropy
//! let config = LockConfig::builder().lease_duration(Duration::from_secs(30)).build(&mut rng)?;
//! let key = Key::new(KeyKind::Lock, &Name::new("cart")?);
//! let token = Token::new("worker-1:task:1.0123456789abcdef")?;
//! let mut lock = LockMachine::new(key, token, &config, &mut rng);
//! let mut store = StoreModel::new(WallTime::UNIX_EPOCH);
//!
//! let now = Timestamp::from_nanos(1_000);
//! lock.acquire(now, None)?;
//! while let Some(request) = lock.poll_effect() {
//!     let reply = store.apply(&request.op, now);
//!     lock.handle_reply(now, request.id, Ok(reply));
//! }
//! let Some(LockEvent::Acquired { fence, .. }) = lock.poll_event() else { panic!("not acquired") };
//! assert_eq!(fence.get(), 1);
//! assert!(lock.is_held(now));
//! # Ok::<(), tenure_core::Error>(())
//! ```
//!
//! Map of the crate: [`time`] (instants and durations), [`ids`] (names, keys, tokens),
//! [`config`] (defaults, validation, `GREL_*` environment), [`store`] (operations and the model),
//! [`machine`] (the state machines and their drain contract), [`error`].

#![deny(missing_docs)]

/// Whether the deliberate defect `$bug` ([`bugs::Bugs`]) is switched on in `$owner`; always false
/// without the `bug-injection` feature.
#[cfg(feature = "bug-injection")]
macro_rules! bug {
    ($owner:expr, $bug:ident) => {
        $owner.bugs.contains(crate::bugs::Bugs::$bug)
    };
}
#[cfg(not(feature = "bug-injection"))]
macro_rules! bug {
    ($owner:expr, $bug:ident) => {
        false
    };
}

#[cfg(feature = "bug-injection")]
pub mod bugs;
pub mod config;
pub mod error;
pub mod ids;
pub mod machine;
pub mod record;
pub mod rng;
pub mod store;
pub mod time;

pub use config::{
    EnvOptions, EnvVars, EnvWarning, LeaderElectionConfig, LeaderElectionConfigBuilder, LockConfig, LockConfigBuilder,
    Resolved, TaskLockConfig, TaskLockConfigBuilder,
};
pub use error::{BackendError, BackendErrorKind, BackendSlot, Error, LossCause, SettingsError, WouldBlockReason};
pub use ids::{
    FencingToken, ForkSuffix, HolderIdentity, HolderKind, Key, KeyKind, LockHandle, Name, Nonce, OpId, Token, WorkerId,
    holder_worker,
};
pub use machine::{
    Access, ElectionEvent, ElectionMachine, KeepAlive, KeepAliveStep, LeadershipLoss, LockEvent, LockMachine,
    LockPhase, LossReason, Machine, Query, QueryKind, TaskLockEvent, TaskLockMachine, TaskLockPhase,
};
pub use record::{LeaderRecord, Metadata};
pub use rng::SplitMix64;
pub use store::{
    Grant, GrantDetails, HolderDetails, PermitAnswer, REVOKED_PREFIX, Revocation, RevokeReason, RwState, SemState,
    StoreModel, StoreOp, StoreReply, StoreRequest, Waiter, WriteGrant,
};
pub use time::{CivilTime, Timestamp, WallTime};
