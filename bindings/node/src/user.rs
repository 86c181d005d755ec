//! Backends written by users in JavaScript (locks, elections, read-write locks, semaphores): the
//! host of the driver's `tenure::backend::user`, which bounds the calls, cancels the ones it
//! gives up, checks the answers' ranges and refuses a fence that goes back.
//!
//! A call runs on the JavaScript thread that made the store: `lib/user_backend.js`'s `run(method,
//! args, answer)` calls the user's method with an `AbortSignal`, checks the answer's shape and
//! hands it to the [`UserAnswer`]; it returns the function that aborts the call, which is called
//! if the driver gives up (after `backendTimeout`, or a cancelled caller).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use napi::Env;
use napi::bindgen_prelude::{BigInt, Function, FunctionRef, JsValue, Unknown, ValueType};
use napi_derive::napi;
use tenure::backend::user::{self, Call, Host, Method};
use tenure::core::time::{WallTime, ceil_micros};
use tenure::core::{BackendError, BackendErrorKind, Metadata};
use tenure::host::Home;

use tenure::Slots;
use tenure_open::Backends;

use crate::backend::Backend;
use crate::election::LeaderRecord;
use crate::event_loop::Inbox;

/// `run(method, name, args, answer)`: the abort function of the call, if it is still running.
/// `method` is the driver's unique name of the call (`sem_acquire`), `name` the user's method.
type Run = FunctionRef<(String, String, CallArgs, UserAnswer), Unknown<'static>>;
type Abort = FunctionRef<(), Unknown<'static>>;

/// The arguments of one call, as `lib/user_backend.js` passes them on.
#[napi(object)]
pub struct CallArgs {
    pub name: String,
    pub token: Option<String>,
    /// The lease asked for, in ms (whole microseconds, rounded up).
    pub duration: Option<f64>,
    pub metadata: Option<HashMap<String, String>>,
    /// Whether a refused writer keeps an intent (`acquireWrite`).
    pub intent: Option<bool>,
    /// The permit count (a semaphore's `acquire`).
    pub permits: Option<u32>,
    /// How long a refused contender keeps its place in line, ms (a semaphore's `acquire`; absent
    /// when it keeps none).
    pub wait: Option<f64>,
}

/// Where a user's JavaScript backend runs.
pub(crate) struct JsHost {
    run: Arc<Run>,
    home: Arc<Inbox>,
    label: String,
}

impl Host for JsHost {
    type Running = Abort;

    fn home(&self) -> Result<Arc<dyn Home>, BackendError> {
        if self.home.is_alive() {
            return Ok(self.home.clone());
        }
        let message = format!("the JavaScript thread that runs {} has ended", self.label);
        Err(BackendError::new(BackendErrorKind::Closed, message))
    }

    fn start(&self, call: Call, answer: user::Answer) -> Option<Abort> {
        let env = Env::from_raw(self.home.env());
        let name = Self::method_name(call.method);
        let label = format!("{}.{name}", self.label);
        let run = match self.run.borrow_back(&env) {
            Ok(run) => run,
            Err(_) => {
                answer.fail(format!("{label} could not be called"));
                return None;
            }
        };
        #[allow(clippy::cast_precision_loss)] // a lease in µs stays far below 2^53
        let millis = |d: Duration| ceil_micros(d) as f64 / 1000.0;
        let args = CallArgs {
            name: call.name,
            token: call.token,
            duration: call.lease.map(millis),
            metadata: call.metadata.map(|m| m.iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect()),
            intent: call.intent,
            permits: call.permits,
            wait: call.wait.map(millis),
        };
        let method = call.method.as_str().to_owned();
        match run.call((method, name.to_owned(), args, UserAnswer(answer))) {
            Ok(abort) if abort.get_type().ok() == Some(ValueType::Function) => {
                unsafe { <Abort as napi::bindgen_prelude::FromNapiValue>::from_napi_value(env.raw(), abort.raw()) }.ok()
            }
            Ok(_) => None,
            Err(e) => {
                // `run` catches what the user's method throws: this is the wrapper failing. Its
                // answer went with the arguments; a call nobody answers ends as a closed one.
                tracing::error!(backend = %label, error = %e.status, "a backend written in JavaScript could not be called");
                None
            }
        }
    }

    /// JavaScript's names: `acquireOrRenew`, `acquireRead`, `cancelIntent`, ...
    fn method_name(method: Method) -> &'static str {
        method.camel_name()
    }

    fn cancel(&self, abort: Abort) {
        let env = Env::from_raw(self.home.env());
        if let Ok(abort) = abort.borrow_back(&env)
            && let Err(e) = abort.call(())
        {
            tracing::error!(backend = %self.label, error = %e.status, "a call of a backend written in JavaScript could not be aborted");
        }
    }
}

/// The fencing tokens a user's object answered so far (`lib/user_backend.js` keeps one per
/// object, for every store made for it).
#[napi]
#[derive(Default)]
pub struct UserFences(user::Fences);

#[napi]
impl UserFences {
    #[napi(constructor)]
    pub fn new() -> Self {
        Self::default()
    }
}

/// A store running a user's object: `run` is `lib/user_backend.js`'s caller of its methods,
/// `label` its class name, `scope` its declared reach, if any.
#[napi]
pub fn user_backend(
    env: &Env,
    run: Function<'_, (String, String, CallArgs, UserAnswer), Unknown<'static>>,
    label: String,
    fences: &UserFences,
    scope: Option<String>,
) -> napi::Result<Backend> {
    let host = JsHost { run: Arc::new(run.create_ref()?), home: Inbox::of(env.raw())?, label: label.clone() };
    let store = user::UserStore::new(host, label, fences.0.clone());
    Ok(Backend(Backends::user(Slots::all(store), scope)))
}

/// The end of one call: one of `fence`, `flag`, `record`, `generation`, `write`, `rwState`,
/// `permit`, `semState` or `fail`, once. The driver checks the ranges (`tenure::backend::user`).
#[napi]
pub struct UserAnswer(user::Answer);

/// A bigint as a u64, or none if it is negative or wider.
fn unsigned(value: &BigInt) -> Option<u64> {
    match value.get_u64() {
        (false, value, true) => Some(value),
        _ => None,
    }
}

#[napi]
impl UserAnswer {
    /// A fencing token (the driver checks it is positive and below 2^63), or `null` when another
    /// token holds it.
    #[napi]
    pub fn fence(&self, fence: Option<BigInt>) {
        match fence.as_ref().map(unsigned) {
            None => self.0.fence(None),
            Some(Some(fence)) => self.0.fence(Some(fence)),
            Some(None) => self.0.unreadable("a fencing token out of range"),
        }
    }

    /// A reader's generation, or `null` when refused.
    #[napi]
    pub fn generation(&self, generation: Option<BigInt>) {
        match generation.as_ref().map(unsigned) {
            None => self.0.generation(None),
            Some(Some(generation)) => self.0.generation(Some(generation)),
            Some(None) => self.0.unreadable("a generation out of range"),
        }
    }

    /// A write grant, or `null` (no `fence`) when refused.
    #[napi]
    pub fn write(&self, fence: Option<BigInt>, poisoned: bool) {
        match fence.as_ref().map(unsigned) {
            None => self.0.write(None),
            Some(Some(fence)) => self.0.write(Some((fence, poisoned))),
            Some(None) => self.0.unreadable("a write grant's fencing token out of range"),
        }
    }

    /// A read-write lock's state.
    #[napi]
    pub fn rw_state(&self, generation: BigInt, writing: bool, readers: u32, waiting_writers: u32) {
        match unsigned(&generation) {
            Some(generation) => self.0.rw_state(tenure::core::RwState {
                generation,
                writing,
                readers: readers as usize,
                waiting_writers: waiting_writers as usize,
            }),
            None => self.0.unreadable("a state whose generation is out of range"),
        }
    }

    /// A semaphore's permit (no `fence`: refused) with the stored count.
    #[napi]
    pub fn permit(&self, fence: Option<BigInt>, permits: u32) {
        match fence.as_ref().map(unsigned) {
            None => self.0.permit(None, permits),
            Some(Some(fence)) => self.0.permit(Some(fence), permits),
            Some(None) => self.0.unreadable("a permit's fencing token out of range"),
        }
    }

    /// A semaphore's state.
    #[napi]
    pub fn sem_state(&self, permits: u32, holders: u32, waiting: u32, fence: BigInt) {
        match unsigned(&fence) {
            Some(fence) => self.0.sem_state(tenure::core::SemState {
                permits,
                holders: holders as usize,
                waiting: waiting as usize,
                fence,
            }),
            None => self.0.unreadable("a state whose fence is out of range"),
        }
    }

    /// A flag.
    #[napi]
    pub fn flag(&self, flag: bool) {
        self.0.flag(flag);
    }

    /// A leader record (checked), or `null` for `get` when nobody leads.
    #[napi]
    pub fn record(&self, record: Option<LeaderRecord>) {
        match record.map(core_record).transpose() {
            Ok(record) => self.0.record(record),
            Err(why) => self.0.unreadable(why),
        }
    }

    /// The call failed: `message` names the backend, the method and what went wrong (never a
    /// token); `cause` is the id `lib/errors.js` keeps the thrown value under.
    #[napi]
    pub fn fail(&self, message: String, cause: Option<u32>) {
        match cause {
            Some(id) => self.0.fail_with(message, crate::fail::Thrown(id)),
            None => self.0.fail(message),
        }
    }
}

/// A record in the core's units (µs), from its checked JavaScript form (ms).
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // checked finite and in range first
fn core_record(r: LeaderRecord) -> Result<tenure::LeaderRecord, String> {
    let micros = |field: &str, ms: f64| {
        let us = (ms * 1000.0).round();
        if us.is_finite() && us.abs() < 9.0e15 {
            Ok(us as i64)
        } else {
            Err(format!("a record whose {field} is out of range"))
        }
    };
    let lease = micros("leaseDuration", r.lease_duration)?;
    if lease < 0 {
        return Err("a record whose leaseDuration is negative".to_owned());
    }
    let transitions = r.transitions;
    if !(transitions >= 0.0 && transitions.fract() == 0.0 && transitions < 9.0e15) {
        return Err("a record whose transitions is not a whole number >= 0".to_owned());
    }
    let metadata = Metadata::try_from(r.metadata.into_iter().collect::<BTreeMap<_, _>>()).map_err(|e| e.to_string())?;
    Ok(tenure::LeaderRecord {
        holder: r.holder,
        lease_duration: Duration::from_micros(lease as u64),
        acquired_at: WallTime::from_unix_micros(micros("acquiredAt", r.acquired_at)?),
        renewed_at: WallTime::from_unix_micros(micros("renewedAt", r.renewed_at)?),
        transitions: transitions as u64,
        metadata,
        // (a user-written store answers no fence: its leaders have none)
        fence: None,
    })
}
