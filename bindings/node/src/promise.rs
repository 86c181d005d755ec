//! Rust futures as JavaScript promises: the future runs on Tenure's runtime and settles a
//! deferred promise, which napi resolves on the JavaScript thread that made it. A pending
//! promise keeps that thread's event loop alive, as a pending timer does; a panic rejects it.

use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures_lite::FutureExt;
use napi::bindgen_prelude::{Object, ToNapiValue};
use napi::{Env, JsDeferred};

use crate::fail::Fail;

type Settle<T> = Box<dyn FnOnce(Env) -> napi::Result<T> + Send>;

/// A promise of what `future` gives.
pub(crate) fn promise<T, F>(env: &Env, future: F) -> napi::Result<Object<'_>>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = Result<T, Fail>> + Send + 'static,
{
    let (deferred, promise): (JsDeferred<T, Settle<T>>, _) = env.create_deferred()?;
    crate::process_runtime().spawn(async move {
        let outcome = AssertUnwindSafe(future).catch_unwind().await.unwrap_or_else(|panic| {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(Fail::Panic(message))
        });
        match outcome {
            Ok(value) => deferred.resolve(Box::new(move |_| Ok(value))),
            Err(fail) => deferred.reject(fail.into_napi()),
        }
    });
    Ok(promise)
}
