//! Backends written by users: any Python object with grelmicro's lock calls (`acquire`,
//! `release`, `locked`, `owned`), election calls (`acquire_or_renew`, `release`, `get`),
//! read-write lock calls (grelmicro 0.44's `ReadWriteLockBackend`) or semaphore calls
//! (`acquire`, `release`, `owned`, `state`), run by the driver like a built-in store.
//!
//! The driver's `tenure::backend::user` runs the calls (bounds, cancellation, the fence check);
//! this is its Python host. Each call of the driver is handed to an event loop's thread — the loop of the thread that makes
//! it (a primitive used on that loop), else the loop the backend was last used on (`from_thread`,
//! the driver's own tasks) — where `tenure._user_backend` calls the method, runs the coroutine it
//! returns as a task, and checks the answer's shape. The driver bounds the call by
//! `backend_timeout` (and still reads a late answer, to give back a late grant); a call it drops
//! — after that, or never polled — has its task cancelled. A method that raises, or an
//! answer of the wrong shape, fails the call as a backend error whose source is the Python
//! exception, so that the primitive's error (`LockAcquireError`, ...) has it as `__cause__`.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tenure::backend::user::{self, Call, Host, Shape};
use tenure::core::time::{WallTime, ceil_micros};
use tenure::core::{BackendError, BackendErrorKind, LeaderRecord, Metadata, RwState, SemState};
use tenure::host::Home;

use crate::aio::{Inbox, in_scope};

/// A user's backend as the driver calls it.
pub(crate) type UserStore = user::UserStore<PyHost>;

/// Makes the store for `wrapper` (a `tenure._user_backend.UserBackend`).
pub(crate) fn user_store(wrapper: Py<PyAny>, label: String, fences: &Fences) -> UserStore {
    let host = PyHost { wrapper, label: label.clone(), home: Mutex::new(None) };
    UserStore::new(host, label, fences.0.clone())
}

/// Where a user's Python backend runs.
pub(crate) struct PyHost {
    /// The `tenure._user_backend.UserBackend` wrapping the user's object.
    wrapper: Py<PyAny>,
    /// The user's class name, for messages.
    label: String,
    /// The inbox of the loop the backend was last used on, and the process's fork count then
    /// (a forked child has no home: its parent's loop is not its own).
    home: Mutex<Option<(u64, Arc<Inbox>)>>,
}

impl PyHost {
    /// Makes the running loop of this thread the backend's home (called on that thread).
    pub(crate) fn attach(&self, event_loop: &Bound<'_, PyAny>) -> PyResult<()> {
        let inbox = Inbox::of(event_loop)?;
        *self.home.lock().unwrap_or_else(PoisonError::into_inner) = Some((crate::forks(), inbox));
        Ok(())
    }

    /// Whether a loop is known for calls made off any loop.
    pub(crate) fn has_home(&self) -> bool {
        self.known_home().is_some()
    }

    fn known_home(&self) -> Option<Arc<Inbox>> {
        let home = self.home.lock().unwrap_or_else(PoisonError::into_inner);
        home.as_ref().filter(|(forks, inbox)| *forks == crate::forks() && inbox.is_alive()).map(|(_, i)| i.clone())
    }
}

impl Host for PyHost {
    /// The asyncio task running the call.
    type Running = Py<PyAny>;

    /// The loop running this thread's callback now (which becomes the home), else the home loop
    /// while it is open.
    fn home(&self) -> Result<Arc<dyn Home>, BackendError> {
        if let Some(here) = Inbox::here().filter(|_| in_scope()) {
            *self.home.lock().unwrap_or_else(PoisonError::into_inner) = Some((crate::forks(), here.clone()));
            return Ok(here);
        }
        self.known_home().map(|inbox| inbox as Arc<dyn Home>).ok_or_else(|| {
            let message = format!(
                "{} has no event loop to run on: use it from a running event loop first (from_thread needs the \
                 loop its coroutines run on)",
                self.label
            );
            BackendError::new(BackendErrorKind::Closed, message)
        })
    }

    fn start(&self, call: Call, answer: user::Answer) -> Option<Py<PyAny>> {
        Python::attach(|py| {
            let (method, user_name) = (call.method.as_str(), Self::method_name(call.method));
            let answer = match Py::new(py, Answer(answer)) {
                Ok(answer) => answer,
                Err(e) => {
                    e.print(py);
                    return None;
                }
            };
            let started = args(py, &call)
                .and_then(|args| self.wrapper.call_method1(py, "run", (method, user_name, args, answer.clone_ref(py))));
            match started {
                Ok(task) if !task.is_none(py) => Some(task),
                Ok(_) => None,
                // The exception's text stays out of the message (it could hold a token).
                Err(e) => {
                    answer.get().0.fail_with(format!("{}.{user_name} failed to start", self.label), e);
                    None
                }
            }
        })
    }

    fn cancel(&self, task: Py<PyAny>) {
        Python::attach(|py| {
            if let Err(e) = task.call_method0(py, "cancel") {
                e.print(py);
            }
        });
    }
}

/// The highest fencing token a user's backend answered for each name, kept by the package as
/// long as the user's object lives (across the native stores made for it).
#[pyclass(frozen, module = "tenure._tenure")]
pub(crate) struct Fences(user::Fences);

#[pymethods]
impl Fences {
    #[new]
    fn new() -> Self {
        Self(user::Fences::default())
    }
}

/// The keywords of `UserBackend.run`: `name`, `token`, the lease in whole microseconds
/// (`lease_us`; rounded up), the metadata as a dict, a writer's `intent`, a semaphore's
/// `permits` and its place's `wait_us` (rounded up; `None` when it keeps none).
fn args<'py>(py: Python<'py>, call: &Call) -> PyResult<Bound<'py, PyDict>> {
    let args = PyDict::new(py);
    args.set_item("name", &call.name)?;
    if let Some(token) = &call.token {
        args.set_item("token", token)?;
    }
    if let Some(lease) = call.lease {
        args.set_item("lease_us", ceil_micros(lease))?;
    }
    if let Some(metadata) = &call.metadata {
        let pairs = PyDict::new(py);
        for (k, v) in metadata.iter() {
            pairs.set_item(k, v)?;
        }
        args.set_item("metadata", pairs)?;
    }
    if let Some(intent) = call.intent {
        args.set_item("intent", intent)?;
    }
    if let Some(permits) = call.permits {
        args.set_item("permits", permits)?;
        args.set_item("wait_us", call.wait.map(ceil_micros))?;
    }
    Ok(args)
}

/// The end of one call, handed to `UserBackend.run`: `ok(value)` with the answer in its checked
/// shape, or `fail(message, cause)`.
#[pyclass(frozen, module = "tenure._tenure")]
pub(crate) struct Answer(user::Answer);

#[pymethods]
impl Answer {
    /// The answer, already checked by `UserBackend.run`: a fence (`int` or `None`), a flag, a
    /// record as `(holder, lease_us, acquired_at_us, renewed_at_us, transitions, metadata)`, a
    /// generation (`int` or `None`), a write grant as `(fencing_token, poisoned)` or `None`, a
    /// read-write lock's state as `(generation, writing, readers, waiting_writers)`, a permit as
    /// `(fencing_token or None, permits)` or a semaphore's state as
    /// `(permits, holders, waiting, fence)`.
    fn ok(&self, value: &Bound<'_, PyAny>) {
        let answered = match self.0.method().shape() {
            Shape::Fence => value.extract::<Option<u64>>().map(|f| self.0.fence(f)),
            Shape::Flag => value.extract::<bool>().map(|f| self.0.flag(f)),
            Shape::Record => record(value).map(|r| self.0.record(Some(r))),
            Shape::MaybeRecord => {
                if value.is_none() { Ok(None) } else { record(value).map(Some) }.map(|r| self.0.record(r))
            }
            Shape::Generation => value.extract::<Option<u64>>().map(|g| self.0.generation(g)),
            Shape::Write => value.extract::<Option<(u64, bool)>>().map(|w| self.0.write(w)),
            Shape::Rw => value.extract::<(u64, bool, usize, usize)>().map(|(generation, writing, readers, waiting)| {
                self.0.rw_state(RwState { generation, writing, readers, waiting_writers: waiting });
            }),
            Shape::Permit => {
                value.extract::<(Option<u64>, u32)>().map(|(fence, permits)| self.0.permit(fence, permits))
            }
            Shape::Sem => value.extract::<(u32, usize, usize, u64)>().map(|(permits, holders, waiting, fence)| {
                self.0.sem_state(SemState { permits, holders, waiting, fence });
            }),
        };
        if let Err(e) = answered {
            self.0.unreadable(e);
        }
    }

    /// The call failed: `message` says how (naming the backend and the call), `cause` is the
    /// exception.
    fn fail(&self, message: String, cause: &Bound<'_, PyAny>) {
        self.0.fail_with(message, PyErr::from_value(cause.clone()));
    }
}

/// A record from its checked tuple.
fn record(value: &Bound<'_, PyAny>) -> PyResult<LeaderRecord> {
    let (holder, lease_us, acquired_us, renewed_us, transitions, metadata): (
        String,
        u64,
        i64,
        i64,
        u64,
        std::collections::BTreeMap<String, String>,
    ) = value.extract()?;
    let metadata = Metadata::try_from(metadata).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    Ok(LeaderRecord {
        holder,
        lease_duration: Duration::from_micros(lease_us),
        acquired_at: WallTime::from_unix_micros(acquired_us),
        renewed_at: WallTime::from_unix_micros(renewed_us),
        transitions,
        metadata,
        // (a user-written store answers no fence: its leaders have none)
        fence: None,
    })
}
