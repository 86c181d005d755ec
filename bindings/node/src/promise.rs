//! Rust futures as JavaScript values or promises.
//!
//! - A future is polled once at once, on the calling JavaScript thread (inside the runtime's
//!   context): if it is already done — the memory store, a lock already known taken — the caller
//!   gets its value (or its exception) directly; `await` takes either.
//! - Otherwise it goes on as a task of that thread ([`LoopTask`]), polled there whenever it is
//!   woken, and settles a promise there. A pending promise keeps the thread's event loop alive,
//!   as a pending timer does; a panic rejects it.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::ptr::null_mut;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use futures_lite::FutureExt;
use napi::bindgen_prelude::{Either, Object, ToNapiValue};
use napi::{Env, JsError, sys};

use crate::event_loop::{Inbox, LoopTask, scope};
use crate::fail::Fail;

/// A value now, or a promise of it.
pub(crate) type Settled<'env, T> = Either<T, Object<'env>>;

/// What `future` gives, now if it is ready at its first poll, else as a promise.
pub(crate) fn promise<T, F>(env: &Env, future: F) -> napi::Result<Settled<'_, T>>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = Result<T, Fail>> + Send + 'static,
{
    let inbox = Inbox::of(env.raw())?;
    let task = LoopTask::empty(inbox.clone());
    let waker = Waker::from(task.clone());
    let mut future = Box::pin(AssertUnwindSafe(future).catch_unwind());
    let mut settled = None;
    // Wake-ups during the first poll run once the task has its future, at the scope's end.
    scope(|| {
        let first = {
            let _runtime = crate::process_runtime().enter();
            future.as_mut().poll(&mut Context::from_waker(&waker))
        };
        settled = Some(match first {
            Poll::Ready(outcome) => {
                outcome.unwrap_or_else(|panic| Err(panicked(&*panic))).map(Either::A).map_err(Fail::into_napi)
            }
            Poll::Pending => pending(env, &inbox, &task, future),
        });
    });
    settled.unwrap_or_else(|| Err(napi::Error::from_reason("tenure: a call was not run")))
}

/// Hands the rest of `future` to `task`, settling a new promise.
fn pending<'env, T, F>(env: &'env Env, inbox: &Arc<Inbox>, task: &LoopTask, future: F) -> napi::Result<Settled<'env, T>>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = std::thread::Result<Result<T, Fail>>> + Send + 'static,
{
    let mut deferred = null_mut();
    let mut promise = null_mut();
    let status = unsafe { sys::napi_create_promise(env.raw(), &mut deferred, &mut promise) };
    if status != sys::Status::napi_ok {
        return Err(napi::Error::from_reason(format!("tenure could not make a promise (napi status {status})")));
    }
    let deferred = Deferred(deferred);
    let home = inbox.clone();
    home.hold();
    task.install(Box::pin(async move {
        let outcome = future.await.unwrap_or_else(|panic| Err(panicked(&*panic)));
        home.unhold();
        deferred.settle(home.env(), outcome);
    }));
    Ok(Either::B(Object::from_raw(env.raw(), promise)))
}

/// A promise's resolver, used on its thread only (its task is polled nowhere else).
struct Deferred(sys::napi_deferred);

unsafe impl Send for Deferred {}

impl Deferred {
    /// Settles the promise with `outcome` (on its thread, in a handle scope).
    fn settle<T: ToNapiValue>(self, env: sys::napi_env, outcome: Result<T, Fail>) {
        let value = outcome.map_err(Fail::into_napi).and_then(|value| unsafe { T::to_napi_value(env, value) });
        unsafe {
            match value {
                Ok(value) => sys::napi_resolve_deferred(env, self.0, value),
                Err(error) => sys::napi_reject_deferred(env, self.0, JsError::from(error).into_value(env)),
            };
        }
    }
}

fn panicked(panic: &(dyn std::any::Any + Send)) -> Fail {
    Fail::Panic(tenure::host::panic_message(panic).to_owned())
}
