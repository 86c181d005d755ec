//! Backends written by users in a host language (Python, JavaScript): an object with grelmicro's
//! lock calls (`acquire`, `release`, `locked`, `owned`), election calls (`acquire_or_renew`,
//! `release`, `get`), read-write lock calls (grelmicro 0.44's nine: `acquire_read`,
//! `acquire_write`, ...) or semaphore calls (`acquire`, `release`, `owned`, `state`), run by the
//! driver like a built-in store. What is the same in every binding lives here once:
//!
//! - which call a store operation is ([`Call`]), and the answer's shape and range ([`Answer`]);
//! - the call runs on the host's event loop ([`Host::home`], a [`Home`]), started there by the
//!   binding ([`Host::start`]); its answer comes back through an [`Answer`], from any thread;
//! - a call the driver drops before its answer (after `backend_timeout`, or a cancelled caller)
//!   is cancelled on the loop ([`Host::cancel`]);
//! - a lock's or a writer's fencing token lower than one the backend answered before for the
//!   same name, to any holder, is refused ([`Fences`]): the backend lost its counter, and
//!   exclusion could no longer be proven. (A semaphore's permits are held at once, so their
//!   grants may answer out of order; a reader's generation is the writer's, not checked again.)
//!
//! A binding converts the host's values and errors; it decides nothing.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tenure_core::{BackendError, BackendErrorKind, FencingToken, StoreOp, StoreReply, WriteGrant};

use super::{BackendFuture, LeaderElectionBackend, LockBackend, ReadWriteLockBackend, SemaphoreBackend};
use crate::host::{Home, call_on};

mod answer;
mod call;

pub use answer::Answer;
use answer::{Receive, Slot};
pub use call::{Call, Method, Shape};

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

    /// The name the user's object has `method` under, for calls and messages (grelmicro's
    /// snake case by default; JavaScript's hosts answer camel case).
    fn method_name(method: Method) -> &'static str
    where
        Self: Sized,
    {
        method.user_name()
    }
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
            let message = format!("{} is a backend written by a user, not a schedule backend", self.0.label);
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
        let (inner, name, method) = (self.0.clone(), call.name.clone(), call.method);
        let answer = Answer { slot: reply.clone(), method, name: H::method_name(method), asked: call.permits };
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
                Ok(StoreReply::Fence(Some(fence))) if method == Method::Acquire => store
                    .fences
                    .note(&store.label, H::method_name(method), &name, fence)
                    .map(|()| StoreReply::Fence(Some(fence))),
                Ok(StoreReply::Write(Some(grant))) => {
                    let WriteGrant { fence, .. } = grant;
                    store
                        .fences
                        .note(&store.label, H::method_name(method), &name, fence)
                        .map(|()| StoreReply::Write(Some(grant)))
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

impl<H: Host> ReadWriteLockBackend for UserStore<H> {
    fn execute(&self, op: StoreOp) -> BackendFuture<'static, StoreReply> {
        self.call(&op)
    }
}

impl<H: Host> SemaphoreBackend for UserStore<H> {
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
    fn note(&self, label: &str, method: &str, name: &str, fence: FencingToken) -> Result<(), BackendError> {
        let mut fences = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let highest = fences.entry(name.to_owned()).or_insert(0);
        if fence.get() < *highest {
            return Err(BackendError::new(
                BackendErrorKind::FenceRegression,
                format!("{label}.{method} answered fencing token {} after {} for {name}", fence.get(), *highest),
            ));
        }
        *highest = fence.get();
        Ok(())
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
