//! `Cancel`: what an `AbortSignal` does to a call in flight. The JavaScript half makes one per
//! call that has a signal and cancels it on `abort`; the call's future is then dropped (an
//! abandoned acquire gives back a grant that lands afterwards, as the driver does in Rust).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use event_listener::Event;
use napi_derive::napi;

use crate::fail::Fail;

/// Something that happens once, and every future waiting for it.
#[derive(Debug, Default)]
pub(crate) struct Flag {
    set: AtomicBool,
    event: Event,
}

impl Flag {
    /// It happened.
    pub(crate) fn raise(&self) {
        self.set.store(true, Ordering::SeqCst);
        self.event.notify(usize::MAX);
    }

    /// Completes once it has happened.
    pub(crate) async fn raised(&self) {
        loop {
            if self.set.load(Ordering::SeqCst) {
                return;
            }
            let listener = self.event.listen();
            if self.set.load(Ordering::SeqCst) {
                return;
            }
            listener.await;
        }
    }
}

/// A cancellation a call can be made under.
#[napi]
#[derive(Debug, Default)]
pub struct Cancel {
    flag: Arc<Flag>,
}

#[napi]
impl Cancel {
    /// A cancellation not yet made.
    #[napi(constructor)]
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels the calls made under it (now and later).
    #[napi]
    pub fn cancel(&self) {
        self.flag.raise();
    }
}

/// `call`, unless `cancel` is cancelled first (then [`Fail::Aborted`], and `call` is dropped).
pub(crate) fn unless<T, F>(cancel: Option<&Cancel>, call: F) -> impl Future<Output = Result<T, Fail>> + Send + use<T, F>
where
    F: Future<Output = Result<T, Fail>> + Send,
{
    let flag = cancel.map(|c| c.flag.clone());
    let cancelled = async move {
        match flag {
            Some(flag) => flag.raised().await,
            None => std::future::pending().await,
        }
        Err(Fail::Aborted)
    };
    futures_lite::future::or(call, cancelled)
}
