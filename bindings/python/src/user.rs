//! Backends written by users: any Python object with grelmicro's lock calls (`acquire`,
//! `release`, `locked`, `owned`) or election calls (`acquire_or_renew`, `release`, `get`), run by
//! the driver like a built-in store.
//!
//! Each call of the driver is handed to an event loop's thread — the loop of the thread that makes
//! it (a primitive used on that loop), else the loop the backend was last used on (`from_thread`,
//! the driver's own tasks) — where `tenure._user_backend` calls the method, runs the coroutine it
//! returns as a task, and checks the answer's shape. The driver bounds the call by
//! `backend_timeout` (and still reads a late answer, to give back a late grant); a call it drops
//! — after that, or never polled — has its task cancelled. A method that raises, or an
//! answer of the wrong shape, fails the call as a backend error whose source is the Python
//! exception, so that the primitive's error (`LockAcquireError`, ...) has it as `__cause__`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tenure::backend::{BackendFuture, LeaderElectionBackend, LockBackend};
use tenure::core::time::{WallTime, ceil_micros};
use tenure::core::{BackendError, BackendErrorKind, FencingToken, LeaderRecord, Metadata, StoreOp, StoreReply};
use tokio::sync::oneshot;

use crate::aio::{Inbox, call_on, in_scope, scope};

/// A user's backend as the driver calls it.
#[derive(Clone)]
pub(crate) struct UserStore(Arc<Inner>);

struct Inner {
    /// The `tenure._user_backend.UserBackend` wrapping the user's object.
    wrapper: Py<PyAny>,
    /// The user's class name, for messages.
    label: String,
    /// The highest fencing token the backend answered for each name: a lower one afterwards
    /// (from any holder) means the backend lost its counter.
    fences: Arc<Mutex<HashMap<String, u64>>>,
    /// The inbox of the loop the backend was last used on, and the process's fork count then
    /// (a forked child has no home: its parent's loop is not its own).
    home: Mutex<Option<(u64, Arc<Inbox>)>>,
}

impl UserStore {
    pub(crate) fn new(wrapper: Py<PyAny>, label: String, fences: &Fences) -> Self {
        Self(Arc::new(Inner { wrapper, label, fences: fences.0.clone(), home: Mutex::new(None) }))
    }

    /// Makes the running loop of this thread the backend's home (called on that thread).
    pub(crate) fn attach(&self, event_loop: &Bound<'_, PyAny>) -> PyResult<()> {
        let inbox = Inbox::of(event_loop)?;
        *self.0.home.lock().unwrap_or_else(PoisonError::into_inner) = Some((crate::forks(), inbox));
        Ok(())
    }

    /// Whether a loop is known for calls made off any loop.
    pub(crate) fn has_home(&self) -> bool {
        self.home().is_some()
    }

    fn home(&self) -> Option<Arc<Inbox>> {
        let home = self.0.home.lock().unwrap_or_else(PoisonError::into_inner);
        home.as_ref().filter(|(forks, inbox)| *forks == crate::forks() && inbox.is_alive()).map(|(_, i)| i.clone())
    }

    /// The loop a call runs on: the one running this thread's callback now (which becomes the
    /// home), else the home loop while it is open.
    fn inbox(&self) -> Option<Arc<Inbox>> {
        if let Some(here) = Inbox::here().filter(|_| in_scope()) {
            *self.0.home.lock().unwrap_or_else(PoisonError::into_inner) = Some((crate::forks(), here.clone()));
            return Some(here);
        }
        self.home()
    }

    fn call(&self, op: &StoreOp) -> BackendFuture<'static, StoreReply> {
        let Some(call) = Call::of(op) else {
            let message = format!("{} is a lock or election backend, not a schedule backend", self.0.label);
            return Box::pin(std::future::ready(Err(BackendError::new(BackendErrorKind::Rejected, message))));
        };
        let Some(inbox) = self.inbox() else {
            let message = format!(
                "{} has no event loop to run on: use it from a running event loop first (from_thread needs the \
                 loop its coroutines run on)",
                self.0.label
            );
            return Box::pin(std::future::ready(Err(BackendError::new(BackendErrorKind::Closed, message))));
        };
        let (store, name) = (self.0.clone(), call.name.clone());
        let (sender, receiver) = oneshot::channel();
        let pending = Arc::new(Pending { task: Mutex::new(None), dropped: AtomicBool::new(false) });
        let started = pending.clone();
        // Armed now: a call dropped before its first poll cancels its task too.
        let cancel = CancelOnDrop { pending, inbox: inbox.clone(), armed: true };
        let inner = self.0.clone();
        call_on(
            &inbox,
            Box::new(move |py, _event_loop| {
                if started.dropped.load(Ordering::SeqCst) {
                    return Ok(());
                }
                let answer = Py::new(py, Answer { sender: Mutex::new(Some(sender)), shape: call.shape })?;
                let args = call.args(py)?;
                match inner.wrapper.call_method1(py, "run", (call.method, args, answer.clone_ref(py))) {
                    Ok(task) if !task.is_none(py) => started.hold(py, task),
                    Ok(_) => {}
                    // The exception's text stays out of the message (it could hold a token).
                    Err(e) => answer.get().fail_with(py, format!("{}.{} failed to start", inner.label, call.method), e),
                }
                Ok(())
            }),
        );
        Box::pin(async move {
            let mut cancel = cancel; // the whole guard lives in the future (not just a field)
            let reply = receiver.await.unwrap_or_else(|_| {
                Err(BackendError::new(
                    BackendErrorKind::Closed,
                    format!("the event loop that runs {} closed before the call answered", store.label),
                ))
            });
            cancel.armed = false;
            match reply {
                Ok(StoreReply::Fence(Some(fence))) => {
                    store.note_fence(&name, fence).map(|()| StoreReply::Fence(Some(fence)))
                }
                other => other,
            }
        })
    }
}

impl Inner {
    /// Keeps `fence` as the highest answered for `name`, or fails if it is lower than that.
    fn note_fence(&self, name: &str, fence: FencingToken) -> Result<(), BackendError> {
        let mut fences = self.fences.lock().unwrap_or_else(PoisonError::into_inner);
        let highest = fences.entry(name.to_owned()).or_insert(0);
        if fence.get() < *highest {
            return Err(BackendError::new(
                BackendErrorKind::FenceRegression,
                format!("{}.acquire answered fencing token {} after {} for {name}", self.label, fence.get(), *highest),
            ));
        }
        *highest = fence.get();
        Ok(())
    }
}

impl LockBackend for UserStore {
    fn execute(&self, op: StoreOp) -> BackendFuture<'static, StoreReply> {
        self.call(&op)
    }
}

impl LeaderElectionBackend for UserStore {
    fn execute(&self, op: StoreOp) -> BackendFuture<'static, StoreReply> {
        self.call(&op)
    }
}

/// The highest fencing token a user's backend answered for each name, kept by the package as
/// long as the user's object lives (across the native stores made for it).
#[pyclass(frozen, module = "tenure._tenure")]
pub(crate) struct Fences(Arc<Mutex<HashMap<String, u64>>>);

#[pymethods]
impl Fences {
    #[new]
    fn new() -> Self {
        Self(Arc::default())
    }
}

/// What the user's method answers.
#[derive(Clone, Copy)]
enum Shape {
    Fence,
    Flag,
    Record,
    MaybeRecord,
}

/// One call: the method of `tenure._user_backend.UserBackend.run` and its arguments.
struct Call {
    method: &'static str,
    shape: Shape,
    name: String,
    token: Option<String>,
    lease: Option<Duration>,
    metadata: Option<Arc<Metadata>>,
}

impl Call {
    fn of(op: &StoreOp) -> Option<Self> {
        let call = |method, shape, key: &tenure::core::Key| Call {
            method,
            shape,
            name: key.as_str().to_owned(),
            token: None,
            lease: None,
            metadata: None,
        };
        Some(match op {
            // A user's backend keeps no queue: a queued acquire is a plain one (the waiter polls).
            StoreOp::LockAcquire { key, token, lease } | StoreOp::LockAcquireQueued { key, token, lease, .. } => Call {
                token: Some(token.as_str().to_owned()),
                lease: Some(*lease),
                ..call("acquire", Shape::Fence, key)
            },
            StoreOp::LockRelease { key, token } => {
                Call { token: Some(token.as_str().to_owned()), ..call("release", Shape::Flag, key) }
            }
            StoreOp::LockLocked { key } => call("locked", Shape::Flag, key),
            StoreOp::LockOwned { key, token } => {
                Call { token: Some(token.as_str().to_owned()), ..call("owned", Shape::Flag, key) }
            }
            StoreOp::LeaderAcquireOrRenew { key, token, lease, metadata } => Call {
                token: Some(token.as_str().to_owned()),
                lease: Some(*lease),
                metadata: Some(metadata.clone()),
                ..call("acquire_or_renew", Shape::Record, key)
            },
            StoreOp::LeaderRelease { key, token } => {
                Call { token: Some(token.as_str().to_owned()), ..call("leader_release", Shape::Flag, key) }
            }
            StoreOp::LeaderGet { key } => call("get", Shape::MaybeRecord, key),
            _ => return None,
        })
    }

    /// The keywords: `name`, `token`, the lease in whole microseconds (`lease_us`; rounded up),
    /// the metadata as a dict.
    fn args<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let args = PyDict::new(py);
        args.set_item("name", &self.name)?;
        if let Some(token) = &self.token {
            args.set_item("token", token)?;
        }
        if let Some(lease) = self.lease {
            args.set_item("lease_us", ceil_micros(lease))?;
        }
        if let Some(metadata) = &self.metadata {
            let pairs = PyDict::new(py);
            for (k, v) in metadata.iter() {
                pairs.set_item(k, v)?;
            }
            args.set_item("metadata", pairs)?;
        }
        Ok(args)
    }
}

/// Whether the driver still waits for a call, and the task running it once started.
struct Pending {
    task: Mutex<Option<Py<PyAny>>>,
    dropped: AtomicBool,
}

impl Pending {
    /// Keeps the call's task, to cancel it if the driver gives up (at once if it already did).
    fn hold(&self, py: Python<'_>, task: Py<PyAny>) {
        if self.dropped.load(Ordering::SeqCst) {
            cancel(py, &task);
            return;
        }
        *self.task.lock().unwrap_or_else(PoisonError::into_inner) = Some(task);
        if self.dropped.load(Ordering::SeqCst) {
            self.cancel_here(py);
        }
    }

    fn cancel_here(&self, py: Python<'_>) {
        if let Some(task) = self.task.lock().unwrap_or_else(PoisonError::into_inner).take() {
            cancel(py, &task);
        }
    }
}

fn cancel(py: Python<'_>, task: &Py<PyAny>) {
    if let Err(e) = task.call_method0(py, "cancel") {
        e.print(py);
    }
}

/// Cancels the call's task when the driver drops the call before its answer (a timeout, a
/// cancelled caller).
struct CancelOnDrop {
    pending: Arc<Pending>,
    inbox: Arc<Inbox>,
    /// Cleared once the answer came.
    armed: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.armed || self.pending.dropped.swap(true, Ordering::SeqCst) {
            return;
        }
        let pending = self.pending.clone();
        call_on(
            &self.inbox,
            Box::new(move |py, _| {
                pending.cancel_here(py);
                Ok(())
            }),
        );
    }
}

/// The end of one call, handed to `UserBackend.run`: `ok(value)` with the answer in its checked
/// shape, or `fail(message, cause)`.
#[pyclass(frozen, module = "tenure._tenure")]
pub(crate) struct Answer {
    sender: Mutex<Option<oneshot::Sender<Result<StoreReply, BackendError>>>>,
    shape: Shape,
}

impl Answer {
    /// Hands the reply to the driver; a caller waiting on this loop runs at once (in a scope).
    fn send(&self, reply: Result<StoreReply, BackendError>) {
        let sender = self.sender.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(sender) = sender {
            scope(|| drop(sender.send(reply)));
        }
    }

    fn fail_with(&self, py: Python<'_>, message: String, cause: PyErr) {
        let _ = py;
        self.send(Err(BackendError::new(BackendErrorKind::Other, message).with_source(cause)));
    }
}

#[pymethods]
impl Answer {
    /// The answer, already checked by `UserBackend.run`: a fence (`int` or `None`), a flag, or a
    /// record as `(holder, lease_us, acquired_at_us, renewed_at_us, transitions, metadata)`.
    fn ok(&self, value: &Bound<'_, PyAny>) {
        let reply = match self.shape {
            Shape::Fence => value.extract::<Option<u64>>().map(|f| StoreReply::Fence(f.map(FencingToken::new))),
            Shape::Flag => value.extract::<bool>().map(StoreReply::Flag),
            Shape::Record => record(value).map(StoreReply::Leader),
            Shape::MaybeRecord => {
                if value.is_none() { Ok(None) } else { record(value).map(Some) }.map(StoreReply::MaybeLeader)
            }
        };
        self.send(reply.map_err(|e| {
            BackendError::new(BackendErrorKind::Protocol, format!("the backend's answer does not fit: {e}"))
        }));
    }

    /// The call failed: `message` says how (naming the backend and the call), `cause` is the
    /// exception.
    fn fail(&self, py: Python<'_>, message: String, cause: &Bound<'_, PyAny>) {
        self.fail_with(py, message, PyErr::from_value(cause.clone()));
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
    })
}
