//! Backends written by users in a host language (Python, JavaScript): an object with grelmicro's
//! lock calls (`acquire`, `release`, `locked`, `owned`) or election calls (`acquire_or_renew`,
//! `release`, `get`), run by the driver like a built-in store. What is the same in every binding
//! lives here once:
//!
//! - which call a store operation is ([`Call`]), and the answer's shape;
//! - the call runs on the host's event loop ([`Host::home`], a [`Home`]), started there by the
//!   binding ([`Host::start`]); its answer comes back through an [`Answer`], from any thread;
//! - a call the driver drops before its answer (after `backend_timeout`, or a cancelled caller)
//!   is cancelled on the loop ([`Host::cancel`]);
//! - a fencing token lower than one the backend answered before for the same name, to any
//!   holder, is refused ([`Fences`]): the backend lost its counter, and exclusion could no longer
//!   be proven.
//!
//! A binding converts the host's values and errors; it decides nothing.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tenure_core::{BackendError, BackendErrorKind, FencingToken, Key, LeaderRecord, Metadata, StoreOp, StoreReply};

use super::{BackendFuture, LeaderElectionBackend, LockBackend};
use crate::host::{Home, call_on, scope};

/// A user's method, by its grelmicro name (`LeaderRelease` is the election's `release`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `acquire(name, token, duration)`: a fence, or none.
    Acquire,
    /// A lock's `release(name, token)`.
    Release,
    /// `locked(name)`.
    Locked,
    /// `owned(name, token)`.
    Owned,
    /// `acquire_or_renew(name, token, duration, metadata)`: a record.
    AcquireOrRenew,
    /// An election's `release(name, token)`.
    LeaderRelease,
    /// `get(name)`: a record, or none.
    Get,
}

/// What a method answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A fencing token, or none when another token holds the lock.
    Fence,
    /// A bool.
    Flag,
    /// A leader record.
    Record,
    /// A leader record, or none.
    MaybeRecord,
}

impl Method {
    /// grelmicro's (Python's) name: `acquire`, `acquire_or_renew`, `leader_release`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Acquire => "acquire",
            Self::Release => "release",
            Self::Locked => "locked",
            Self::Owned => "owned",
            Self::AcquireOrRenew => "acquire_or_renew",
            Self::LeaderRelease => "leader_release",
            Self::Get => "get",
        }
    }

    /// The name the user's object has the method under (`release` for both releases).
    pub fn user_name(self) -> &'static str {
        if self == Self::LeaderRelease { "release" } else { self.as_str() }
    }

    /// What it answers.
    pub fn shape(self) -> Shape {
        match self {
            Self::Acquire => Shape::Fence,
            Self::Release | Self::Locked | Self::Owned | Self::LeaderRelease => Shape::Flag,
            Self::AcquireOrRenew => Shape::Record,
            Self::Get => Shape::MaybeRecord,
        }
    }
}

/// One call of a user's method, with its arguments.
#[derive(Debug, Clone)]
pub struct Call {
    /// The method called.
    pub method: Method,
    /// The name with its kind prefix (`lock:cart`).
    pub name: String,
    /// The ownership token, for the calls that take one.
    pub token: Option<String>,
    /// The lease asked for (`duration`), for acquires.
    pub lease: Option<Duration>,
    /// The leader's metadata, for `acquire_or_renew`.
    pub metadata: Option<Arc<Metadata>>,
}

impl Call {
    /// The call `op` is, or none for an operation user backends do not have (schedules).
    pub fn of(op: &StoreOp) -> Option<Self> {
        let call = |method, key: &Key, token: Option<&tenure_core::Token>| Call {
            method,
            name: key.as_str().to_owned(),
            token: token.map(|t| t.as_str().to_owned()),
            lease: None,
            metadata: None,
        };
        Some(match op {
            // A user's backend keeps no queue: a queued acquire is a plain one (the waiter polls).
            StoreOp::LockAcquire { key, token, lease } | StoreOp::LockAcquireQueued { key, token, lease, .. } => {
                Call { lease: Some(*lease), ..call(Method::Acquire, key, Some(token)) }
            }
            StoreOp::LockRelease { key, token } => call(Method::Release, key, Some(token)),
            StoreOp::LockLocked { key } => call(Method::Locked, key, None),
            StoreOp::LockOwned { key, token } => call(Method::Owned, key, Some(token)),
            StoreOp::LeaderAcquireOrRenew { key, token, lease, metadata } => Call {
                lease: Some(*lease),
                metadata: Some(metadata.clone()),
                ..call(Method::AcquireOrRenew, key, Some(token))
            },
            StoreOp::LeaderRelease { key, token } => call(Method::LeaderRelease, key, Some(token)),
            StoreOp::LeaderGet { key } => call(Method::Get, key, None),
            _ => return None,
        })
    }
}

/// How a binding runs calls on its host's event loop.
pub trait Host: Send + Sync + 'static {
    /// What cancels a started call (an asyncio task, an `AbortController`).
    type Running: Send + 'static;

    /// The loop the next call runs on, or why there is none (a `Closed` error naming the backend).
    fn home(&self) -> Result<Arc<dyn Home>, BackendError>;

    /// On the home's thread: calls the user's method; its outcome goes to `answer` (now or
    /// later). Answers what cancels the call while it runs, if anything.
    fn start(&self, call: Call, answer: Answer) -> Option<Self::Running>;

    /// On the home's thread: cancels a call the driver gave up.
    fn cancel(&self, running: Self::Running);
}

/// A user's backend as the driver calls it.
pub struct UserStore<H: Host>(Arc<Inner<H>>);

impl<H: Host> Clone for UserStore<H> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<H: Host> std::fmt::Debug for UserStore<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserStore").field("label", &self.0.label).finish_non_exhaustive()
    }
}

struct Inner<H> {
    host: H,
    /// The user's class name, for messages.
    label: String,
    fences: Fences,
}

impl<H: Host> UserStore<H> {
    /// A store calling `host`'s backend, named `label` in messages, remembering its answered
    /// fences in `fences` (shared by every store made for one object).
    pub fn new(host: H, label: impl Into<String>, fences: Fences) -> Self {
        Self(Arc::new(Inner { host, label: label.into(), fences }))
    }

    /// The binding's side.
    pub fn host(&self) -> &H {
        &self.0.host
    }

    fn call(&self, op: &StoreOp) -> BackendFuture<'static, StoreReply> {
        let Some(call) = Call::of(op) else {
            let message = format!("{} is a lock or election backend, not a schedule backend", self.0.label);
            return Box::pin(std::future::ready(Err(BackendError::new(BackendErrorKind::Rejected, message))));
        };
        let home = match self.0.host.home() {
            Ok(home) => home,
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        let reply = Arc::new(Slot::default());
        let pending: Arc<Pending<H::Running>> =
            Arc::new(Pending { running: Mutex::new(None), dropped: AtomicBool::new(false) });
        // Armed now: a call dropped before its first poll cancels its call too.
        let guard = CancelOnDrop { pending: pending.clone(), home: home.clone(), store: self.0.clone(), armed: true };
        let (inner, name, answer) =
            (self.0.clone(), call.name.clone(), Answer { slot: reply.clone(), method: call.method });
        call_on(
            &home,
            Box::new(move || {
                if pending.dropped.load(Ordering::SeqCst) {
                    return;
                }
                if let Some(running) = inner.host.start(call, answer) {
                    pending.hold(&inner.host, running);
                }
            }),
        );
        let store = self.0.clone();
        Box::pin(async move {
            let mut guard = guard; // the whole guard lives in the future (not just a field)
            let reply = Receive(reply).await.unwrap_or_else(|| {
                Err(BackendError::new(
                    BackendErrorKind::Closed,
                    format!("the event loop that runs {} closed before the call answered", store.label),
                ))
            });
            guard.armed = false;
            match reply {
                Ok(StoreReply::Fence(Some(fence))) => {
                    store.fences.note(&store.label, &name, fence).map(|()| StoreReply::Fence(Some(fence)))
                }
                other => other,
            }
        })
    }
}

impl<H: Host> LockBackend for UserStore<H> {
    fn execute(&self, op: StoreOp) -> BackendFuture<'static, StoreReply> {
        self.call(&op)
    }
}

impl<H: Host> LeaderElectionBackend for UserStore<H> {
    fn execute(&self, op: StoreOp) -> BackendFuture<'static, StoreReply> {
        self.call(&op)
    }
}

/// The highest fencing token a user's backend answered for each name: a lower one afterwards
/// (to any holder) means the backend lost its counter. Shared by every store made for one object.
#[derive(Debug, Clone, Default)]
pub struct Fences(Arc<Mutex<HashMap<String, u64>>>);

impl Fences {
    /// Keeps `fence` as the highest answered for `name`, or fails if it is lower than that.
    fn note(&self, label: &str, name: &str, fence: FencingToken) -> Result<(), BackendError> {
        let mut fences = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let highest = fences.entry(name.to_owned()).or_insert(0);
        if fence.get() < *highest {
            return Err(BackendError::new(
                BackendErrorKind::FenceRegression,
                format!("{label}.acquire answered fencing token {} after {} for {name}", fence.get(), *highest),
            ));
        }
        *highest = fence.get();
        Ok(())
    }
}

/// The end of one call, handed to the binding: the answer in its shape, or a failure.
#[derive(Debug)]
pub struct Answer {
    slot: Arc<Slot>,
    method: Method,
}

impl Answer {
    /// The method it answers.
    pub fn method(&self) -> Method {
        self.method
    }

    /// Answers a fencing token (or none).
    pub fn fence(&self, fence: Option<u64>) {
        self.reply(Shape::Fence, StoreReply::Fence(fence.map(FencingToken::new)));
    }

    /// Answers a flag.
    pub fn flag(&self, flag: bool) {
        self.reply(Shape::Flag, StoreReply::Flag(flag));
    }

    /// Answers a leader record (none: no leader, for `get`).
    pub fn record(&self, record: Option<LeaderRecord>) {
        match (self.method.shape(), record) {
            (Shape::Record, Some(record)) => self.send(Ok(StoreReply::Leader(record))),
            (Shape::MaybeRecord, record) => self.send(Ok(StoreReply::MaybeLeader(record))),
            _ => self.wrong("a record"),
        }
    }

    /// The call failed: `message` says how, naming the backend and the method (never the text of
    /// the host's error, which could hold a token).
    pub fn fail(&self, message: impl Into<String>) {
        self.send(Err(BackendError::new(BackendErrorKind::Other, message)));
    }

    /// The call failed with the host's error `cause` (the operation's error has it as its source).
    pub fn fail_with(&self, message: impl Into<String>, cause: impl std::error::Error + Send + Sync + 'static) {
        self.send(Err(BackendError::new(BackendErrorKind::Other, message).with_source(cause)));
    }

    /// The answer could not be read: `what` says why (the value's type, never its text).
    pub fn unreadable(&self, what: impl std::fmt::Display) {
        self.send(Err(BackendError::new(
            BackendErrorKind::Protocol,
            format!("the backend's answer does not fit: {what}"),
        )));
    }

    fn reply(&self, shape: Shape, reply: StoreReply) {
        if self.method.shape() == shape { self.send(Ok(reply)) } else { self.wrong("an answer of another call") }
    }

    fn wrong(&self, what: &str) {
        self.unreadable(format!("{} answered {what}", self.method.user_name()));
    }

    /// Hands the reply to the driver; a caller waiting on this thread's loop runs at once.
    fn send(&self, reply: Result<StoreReply, BackendError>) {
        scope(|| self.slot.put(reply));
    }
}

impl Drop for Answer {
    fn drop(&mut self) {
        self.slot.close();
    }
}

/// Where one call's reply waits for the driver.
#[derive(Debug, Default)]
struct Slot(Mutex<SlotState>);

#[derive(Debug, Default)]
struct SlotState {
    reply: Option<Result<StoreReply, BackendError>>,
    /// No reply will come (the answer was dropped, or one was taken).
    closed: bool,
    waker: Option<Waker>,
}

impl Slot {
    fn put(&self, reply: Result<StoreReply, BackendError>) {
        let waker = {
            let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            if state.closed {
                return;
            }
            state.reply = Some(reply);
            state.closed = true;
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    fn close(&self) {
        let waker = {
            let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            state.closed = true;
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// The reply, or none if the answer was dropped without one.
struct Receive(Arc<Slot>);

impl Future for Receive {
    type Output = Option<Result<StoreReply, BackendError>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.0.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(reply) = state.reply.take() {
            return Poll::Ready(Some(reply));
        }
        if state.closed {
            return Poll::Ready(None);
        }
        state.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// Whether the driver still waits for a call, and what runs it once started.
struct Pending<R> {
    running: Mutex<Option<R>>,
    dropped: AtomicBool,
}

impl<R> Pending<R> {
    /// Keeps what runs the call, to cancel it if the driver gives up (at once if it already did).
    fn hold<H: Host<Running = R>>(&self, host: &H, running: R) {
        *self.running.lock().unwrap_or_else(PoisonError::into_inner) = Some(running);
        if self.dropped.load(Ordering::SeqCst) {
            self.cancel_here(host);
        }
    }

    fn cancel_here<H: Host<Running = R>>(&self, host: &H) {
        let running = self.running.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(running) = running {
            host.cancel(running);
        }
    }
}

/// Cancels the call when the driver drops it before its answer (a timeout, a cancelled caller).
struct CancelOnDrop<H: Host> {
    pending: Arc<Pending<H::Running>>,
    home: Arc<dyn Home>,
    store: Arc<Inner<H>>,
    /// Cleared once the answer came.
    armed: bool,
}

impl<H: Host> Drop for CancelOnDrop<H> {
    fn drop(&mut self) {
        if !self.armed || self.pending.dropped.swap(true, Ordering::SeqCst) {
            return;
        }
        let (pending, store) = (self.pending.clone(), self.store.clone());
        call_on(&self.home, Box::new(move || pending.cancel_here(&store.host)));
    }
}

#[cfg(test)]
mod tests;
