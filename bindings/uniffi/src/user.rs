//! Backends written by users in Kotlin or Java: grelmicro's lock calls (`acquire`, `release`,
//! `locked`, `owned`), election calls (`acquireOrRenew`, `release`, `get`) and read-write lock
//! calls (`acquireRead`, `acquireWrite`, …), and Tenure's semaphore calls, run by the driver's
//! `tenure::backend::user` like a built-in store: the answers' shapes and ranges checked, a
//! fencing token that goes back refused, a call past `backendTimeout` failed (its late answer
//! settled, a late grant given back), and a call the driver stops waiting for (a minute later)
//! cancelled, which cancels the user's coroutine. The Kotlin layer's
//! `UserBackendCalls` calls the user's methods; this file converts values.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tenure::backend::user::{self, Call, Host, Method};
use tenure::core::time::WallTime;
use tenure::core::{BackendError, Metadata};
use tenure::host::{Direct, Home};
use tokio::task::AbortHandle;

use crate::election::LeaderRecord;

/// The arguments of one call of a user's method.
#[derive(Debug, Clone, uniffi::Record)]
pub struct UserCallArgs {
    /// The lock or election name, with its kind prefix (`lock:orders`).
    pub name: String,
    /// The caller's token (none for `locked` and `get`).
    pub token: Option<String>,
    /// The lease asked for, in seconds (`acquire`, `acquireOrRenew`).
    pub lease: Option<f64>,
    /// The leader's metadata (`acquireOrRenew`).
    pub metadata: Option<HashMap<String, String>>,
    /// Whether a refused writer keeps an intent (`acquireWrite`).
    pub intent: Option<bool>,
    /// The permit count (a semaphore's `acquire`).
    pub permits: Option<u32>,
    /// How long a refused contender keeps its place in line, in seconds (a semaphore's
    /// `acquire`; none when it keeps none).
    pub wait: Option<f64>,
}

/// What a user's method answered.
#[derive(Debug, Clone, uniffi::Enum)]
pub enum UserAnswer {
    /// A fencing token, or none when another token holds the lock (`acquire`).
    Fence { fence: Option<i64> },
    /// A flag (`release`, `locked`, `owned`, an election's `release`).
    Flag { flag: bool },
    /// A leader record (`acquireOrRenew`), or none when nobody leads (`get`).
    Record { record: Option<LeaderRecord> },
    /// The generation read, or none when refused (`acquireRead`, `downgrade`).
    Generation { generation: Option<i64> },
    /// A write grant's fencing token and poison, or none when refused (`acquireWrite`).
    Write { fence: Option<i64>, poisoned: bool },
    /// A read-write lock's state (counts as the user's store answered them, checked here).
    RwState { generation: i64, writing: bool, readers: i64, waiting_writers: i64 },
    /// A semaphore's permit (none: refused) and the stored permit count (`acquire`).
    Permit { fence: Option<i64>, permits: i64 },
    /// A semaphore's state.
    SemState { permits: i64, holders: i64, waiting: i64, fence: i64 },
}

/// Why a user's method failed: the class of what it threw. Its message is left out (it could
/// hold a token).
#[derive(Debug, thiserror::Error, uniffi::Error)]
pub enum UserCallError {
    #[error("raised {class_name}")]
    Raised { class_name: String },
}

impl From<uniffi::UnexpectedUniFFICallbackError> for UserCallError {
    /// Its reason is the thrown value's text: left out as well.
    fn from(_: uniffi::UnexpectedUniFFICallbackError) -> Self {
        Self::Raised { class_name: "an exception the Kotlin layer did not catch".to_owned() }
    }
}

/// The Kotlin layer's caller of a user's methods.
#[uniffi::export(callback_interface)]
#[async_trait::async_trait]
pub trait UserCalls: Send + Sync {
    /// Calls the user's `method` (the driver's unique name: `acquire`, `release`, `locked`,
    /// `owned`, `acquire_or_renew`, `leader_release`, `get`) with `args`, as a coroutine that a
    /// given-up call cancels.
    async fn call(&self, method: String, args: UserCallArgs) -> Result<UserAnswer, UserCallError>;
}

/// Where a user's Kotlin or Java backend runs: its calls are coroutines started from the
/// runtime's threads.
pub(crate) struct JvmHost {
    calls: Arc<dyn UserCalls>,
    label: String,
}

impl JvmHost {
    pub(crate) fn new(calls: Box<dyn UserCalls>, label: String) -> Self {
        Self { calls: Arc::from(calls), label }
    }
}

impl Host for JvmHost {
    type Running = AbortHandle;

    fn home(&self) -> Result<Arc<dyn Home>, BackendError> {
        Ok(Arc::new(Direct))
    }

    fn start(&self, call: Call, answer: user::Answer) -> Option<AbortHandle> {
        let label = format!("{}.{}", self.label, Self::method_name(call.method));
        let args = UserCallArgs {
            name: call.name,
            token: call.token,
            lease: call.lease.map(crate::seconds::secs),
            metadata: call.metadata.map(|m| m.iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect()),
            intent: call.intent,
            permits: call.permits,
            wait: call.wait.map(crate::seconds::secs),
        };
        let (calls, method) = (self.calls.clone(), call.method.as_str().to_owned());
        let task = crate::process_runtime().spawn(async move {
            match calls.call(method, args).await {
                Ok(answered) => deliver(&answer, answered, &label),
                Err(UserCallError::Raised { class_name }) => answer.fail(format!("{label} raised {class_name}")),
            }
        });
        Some(task.abort_handle())
    }

    fn cancel(&self, running: AbortHandle) {
        running.abort();
    }

    /// Kotlin's and Java's names: `acquireOrRenew`, and `release` for the election's.
    fn method_name(method: Method) -> &'static str {
        method.camel_name()
    }
}

/// Hands `answered` (by `label`, the backend's method) to the driver, which checks its shape and
/// range.
fn deliver(answer: &user::Answer, answered: UserAnswer, label: &str) {
    let refused = |what: &str| answer.unreadable(format!("{label} answered a negative {what}"));
    match answered {
        UserAnswer::Fence { fence } => match unsigned(fence) {
            Some(fence) => answer.fence(fence),
            None => refused("fencing token"),
        },
        UserAnswer::Flag { flag } => answer.flag(flag),
        UserAnswer::Record { record } => match record.map(core_record).transpose() {
            Ok(record) => answer.record(record),
            Err(why) => answer.unreadable(why),
        },
        UserAnswer::Generation { generation } => match unsigned(generation) {
            Some(generation) => answer.generation(generation),
            None => refused("generation"),
        },
        UserAnswer::Write { fence, poisoned } => match unsigned(fence) {
            Some(fence) => answer.write(fence.map(|fence| (fence, poisoned))),
            None => refused("fencing token"),
        },
        UserAnswer::RwState { generation, writing, readers, waiting_writers } => {
            match (u64::try_from(generation), usize::try_from(readers), usize::try_from(waiting_writers)) {
                (Ok(generation), Ok(readers), Ok(waiting_writers)) => {
                    answer.rw_state(tenure::RwState { generation, writing, readers, waiting_writers });
                }
                _ => refused("count in a state"),
            }
        }
        UserAnswer::Permit { fence, permits } => match (unsigned(fence), u32::try_from(permits)) {
            (Some(fence), Ok(permits)) => answer.permit(fence, permits),
            _ => refused("fencing token or permit count"),
        },
        UserAnswer::SemState { permits, holders, waiting, fence } => {
            match (u32::try_from(permits), usize::try_from(holders), usize::try_from(waiting), u64::try_from(fence)) {
                (Ok(permits), Ok(holders), Ok(waiting), Ok(fence)) => {
                    answer.sem_state(tenure::SemState { permits, holders, waiting, fence });
                }
                _ => refused("count in a state"),
            }
        }
    }
}

/// An optional count as the core's: `None` if it is negative.
#[allow(clippy::option_option)] // absent, or present and out of range
fn unsigned(value: Option<i64>) -> Option<Option<u64>> {
    value.map_or(Some(None), |v| u64::try_from(v).ok().map(Some))
}

/// A record in the core's units, checked.
fn core_record(r: LeaderRecord) -> Result<tenure::LeaderRecord, String> {
    let lease = Duration::try_from_secs_f64(r.lease_duration)
        .map_err(|_| "a record whose leaseDuration is not a finite number of seconds >= 0".to_owned())?;
    let metadata = Metadata::try_from(r.metadata.into_iter().collect::<BTreeMap<_, _>>()).map_err(|e| e.to_string())?;
    Ok(tenure::LeaderRecord {
        holder: r.holder,
        lease_duration: lease,
        acquired_at: wall(r.acquired_at, "acquiredAt")?,
        renewed_at: wall(r.renewed_at, "renewedAt")?,
        transitions: r.transitions,
        metadata,
        // (a user-written store answers no fence: its leaders have none)
        fence: None,
    })
}

/// `t` as the core's wall time (µs since the epoch), if it is within its range.
fn wall(t: SystemTime, field: &str) -> Result<WallTime, String> {
    let micros = match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_micros()).ok(),
        Err(before) => i64::try_from(before.duration().as_micros()).ok().map(|m| -m),
    };
    micros.map(WallTime::from_unix_micros).ok_or_else(|| format!("a record whose {field} is out of range"))
}
