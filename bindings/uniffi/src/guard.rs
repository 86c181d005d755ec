//! `LockGuard`: one acquisition of a lock, with its fencing token. Freed while held (Kotlin's
//! `close()` after `release`, or the collector), it releases in the background.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tenure::{KeepAlive, KeepAliveEnd, LockHolder};
use tenure_tokio::Tokio;

use crate::seconds::optional;
use crate::{TenureError, block};

/// Why a keep-alive stopped renewing on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum KeepAliveStop {
    /// The maximum hold was reached and the lease released.
    MaxHold,
    /// The lease ran out without a confirmed renewal (the store was unreachable or slow).
    Expired,
    /// A renewal found the lease taken by another holder.
    Lost,
}

impl From<KeepAliveEnd> for KeepAliveStop {
    fn from(end: KeepAliveEnd) -> Self {
        match end {
            KeepAliveEnd::MaxHold => Self::MaxHold,
            KeepAliveEnd::Expired => Self::Expired,
            _ => Self::Lost,
        }
    }
}

/// What a guard holds.
enum Held {
    Guard(tenure::LockGuard<Tokio>),
    Kept(KeepAlive<tenure::LockGuard<Tokio>>),
    Released,
}

type Lost = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A fencing token as the foreign side reads it: a `long`. Stores keep them as signed 64-bit
/// integers, so a token past `i64::MAX` cannot come from one; it would read as `i64::MAX`.
pub(crate) fn fence(token: tenure::FencingToken) -> i64 {
    i64::try_from(token.get()).unwrap_or(i64::MAX)
}

/// One acquisition of a lock.
#[derive(uniffi::Object)]
pub struct LockGuard {
    name: String,
    fence: i64,
    held: Mutex<Held>,
    /// Sends `true` once released (a release wins over the loss its own stop would show).
    released: tokio::sync::watch::Sender<bool>,
}

impl LockGuard {
    pub(crate) fn new(guard: tenure::LockGuard<Tokio>) -> Arc<Self> {
        Arc::new(Self {
            name: guard.name().as_str().to_owned(),
            fence: fence(guard.fencing_token()),
            held: Mutex::new(Held::Guard(guard)),
            released: tokio::sync::watch::Sender::new(false),
        })
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The holder while the lock is held.
    fn holder(&self) -> Option<LockHolder<Tokio>> {
        match &*self.held() {
            Held::Guard(g) => Some(g.holder().clone()),
            Held::Kept(k) => Some(k.guard().holder().clone()),
            Held::Released => None,
        }
    }

    fn not_owned(&self) -> TenureError {
        tenure::Error::NotOwned { name: self.name.clone() }.into()
    }
}

#[uniffi::export]
impl LockGuard {
    /// The lock name.
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// The fencing token of this acquisition: send it with every write the lock protects.
    pub fn fencing_token(&self) -> i64 {
        self.holder().and_then(|h| h.handle()).map_or(self.fence, |h| fence(h.fencing_token))
    }

    /// Whether the lease may be counted on now (held, and its validity, counted from the
    /// request's send, has not run out).
    pub fn is_valid(&self) -> bool {
        match &*self.held() {
            Held::Guard(g) => g.is_valid(),
            Held::Kept(k) => k.is_valid(),
            Held::Released => false,
        }
    }

    /// Whether a keep-alive renews the lease (kept, not ended, still valid).
    pub fn keeping(&self) -> bool {
        matches!(&*self.held(), Held::Kept(k) if k.ended().is_none() && k.is_valid())
    }

    /// Why the keep-alive stopped on its own, once it has.
    pub fn keep_alive_stop(&self) -> Option<KeepAliveStop> {
        match &*self.held() {
            Held::Kept(k) => k.ended().map(KeepAliveStop::from),
            _ => None,
        }
    }

    /// Renews the lease for another lease duration; the fencing token (unchanged while held).
    pub async fn extend(&self) -> Result<i64, TenureError> {
        let holder = self.holder().ok_or_else(|| self.not_owned())?;
        Ok(fence(holder.extend().await?.fencing_token))
    }

    /// [`LockGuard::extend`], blocking the calling thread.
    pub fn extend_blocking(&self) -> Result<i64, TenureError> {
        block("LockGuard.extendBlocking", self.extend())
    }

    /// Whether this acquisition still holds a live lease in the store.
    pub async fn owned(&self) -> Result<bool, TenureError> {
        match self.holder() {
            Some(holder) => Ok(holder.owned().await?),
            None => Ok(false),
        }
    }

    /// [`LockGuard::owned`], blocking the calling thread.
    pub fn owned_blocking(&self) -> Result<bool, TenureError> {
        block("LockGuard.ownedBlocking", self.owned())
    }

    /// Releases: `LockNotOwned` if it was released already or its lease was lost.
    pub async fn release(&self) -> Result<(), TenureError> {
        let held = std::mem::replace(&mut *self.held(), Held::Released);
        // Before stopping a keep-alive, whose end would otherwise read as a loss.
        self.released.send_replace(true);
        match held {
            Held::Guard(guard) => Ok(guard.release().await?),
            Held::Kept(kept) => Ok(kept.stop().release().await?),
            Held::Released => Err(self.not_owned()),
        }
    }

    /// [`LockGuard::release`], blocking the calling thread.
    pub fn release_blocking(&self) -> Result<(), TenureError> {
        block("LockGuard.releaseBlocking", self.release())
    }

    /// Keeps the lease alive in the background (a renewal every third of it) for at most
    /// `max_hold` seconds (no bound without one), then releases it.
    #[uniffi::method(default(max_hold = None))]
    pub fn keep_alive(&self, max_hold: Option<f64>) -> Result<(), TenureError> {
        let max_hold = optional("maxHold", max_hold)?.unwrap_or(Duration::MAX);
        let mut held = self.held();
        *held = match std::mem::replace(&mut *held, Held::Released) {
            Held::Guard(guard) => Held::Kept(guard.keep_alive(max_hold)),
            kept @ Held::Kept(_) => kept,
            Held::Released => return Err(self.not_owned()),
        };
        Ok(())
    }

    /// Completes with `true` the moment the lease is lost (or a keep-alive reached its maximum
    /// hold), with `false` once it is released.
    pub async fn lost(&self) -> bool {
        let lost: Option<Lost> = match &*self.held() {
            Held::Guard(g) => Some(Box::pin(g.lost())),
            Held::Kept(k) => Some(Box::pin(k.lost())),
            Held::Released => None,
        };
        let Some(lost) = lost else { return false };
        let mut released = self.released.subscribe();
        let released = async move {
            // An error: the guard is gone, which only a release ends.
            let _ = released.wait_for(|r| *r).await;
            false
        };
        futures_lite::future::or(released, async move {
            lost.await;
            true
        })
        .await
    }
}
