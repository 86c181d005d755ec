//! Rust futures as JavaScript values or promises.
//!
//! - A future is polled once at once, on the calling JavaScript thread (inside the runtime's
//!   context): if it is already done — the memory store, a lock already known taken — the caller
//!   gets its value (or its exception) directly, with no thread hop; `await` takes either.
//! - Otherwise it goes on running on Tenure's runtime and settles a deferred promise, which napi
//!   resolves on the JavaScript thread that made it. A pending promise keeps that thread's event
//!   loop alive, as a pending timer does; a panic rejects it.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::task::{Context, Poll, Waker};

use futures_lite::FutureExt;
use napi::bindgen_prelude::{Either, Object, ToNapiValue};
use napi::{Env, JsDeferred};

use crate::fail::Fail;

type Settle<T> = Box<dyn FnOnce(Env) -> napi::Result<T> + Send>;

/// A value now, or a promise of it.
pub(crate) type Settled<'env, T> = Either<T, Object<'env>>;

/// What `future` gives, now if it is ready at its first poll, else as a promise.
pub(crate) fn promise<T, F>(env: &Env, future: F) -> napi::Result<Settled<'_, T>>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = Result<T, Fail>> + Send + 'static,
{
    let mut future = Box::pin(AssertUnwindSafe(future).catch_unwind());
    let first = {
        let _runtime = crate::process_runtime().enter();
        future.as_mut().poll(&mut Context::from_waker(Waker::noop()))
    };
    if let Poll::Ready(outcome) = first {
        return outcome.unwrap_or_else(|panic| Err(panicked(&*panic))).map(Either::A).map_err(Fail::into_napi);
    }
    let (deferred, promise): (JsDeferred<T, Settle<T>>, _) = env.create_deferred()?;
    // Polled at once on the runtime, which registers its own waker: a wake-up the first poll
    // asked for is not lost.
    crate::process_runtime().spawn(async move {
        match future.await.unwrap_or_else(|panic| Err(panicked(&*panic))) {
            Ok(value) => deferred.resolve(Box::new(move |_| Ok(value))),
            Err(fail) => deferred.reject(fail.into_napi()),
        }
    });
    Ok(Either::B(promise))
}

fn panicked(panic: &(dyn std::any::Any + Send)) -> Fail {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    Fail::Panic(message)
}
