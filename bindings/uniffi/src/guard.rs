//! `LockGuard`: one acquisition of a lock, with its fencing token. Freed while held (Kotlin's
//! `close()` after `release`, or the collector), it releases in the background.

use std::sync::Arc;
use std::time::Duration;

use tenure::KeepAliveEnd;
use tenure::binding::LeaseSlot;
use tenure_tokio::Tokio;

use crate::seconds::optional;
use crate::{TenureError, block};

/// Why a keep-alive stopped renewing on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum KeepAliveStop {
    /// The maximum hold was reached and the lease released.
    MaxHold,
    /// The lease ran out before a renewal was even tried (the process was paused).
    Expired,
    /// The lease ran out while renewals failed or went unanswered (the store was unreachable or
    /// too slow).
    Unreachable,
    /// A renewal found the lease taken by another holder.
    Lost,
    /// A renewal was answered with a lower fencing token (the store lost its grants).
    FenceRegression,
    /// An operator revoked the lease (`tenure revoke`); the loss's error gives the reason.
    Revoked,
}

impl From<KeepAliveEnd> for KeepAliveStop {
    fn from(end: KeepAliveEnd) -> Self {
        match end {
            KeepAliveEnd::MaxHold => Self::MaxHold,
            KeepAliveEnd::Expired => Self::Expired,
            KeepAliveEnd::Unreachable => Self::Unreachable,
            KeepAliveEnd::FenceRegression => Self::FenceRegression,
            KeepAliveEnd::Revoked(_) => Self::Revoked,
            // (Lost, and a cause this package does not know yet)
            _ => Self::Lost,
        }
    }
}

/// A fencing token as the foreign side reads it: a `long`. Stores keep them as signed 64-bit
/// integers, so a token past `i64::MAX` cannot come from one; it would read as `i64::MAX`.
pub(crate) fn fence(token: tenure::FencingToken) -> i64 {
    i64::try_from(token.get()).unwrap_or(i64::MAX)
}

/// One acquisition of a lock; the driver's [`LeaseSlot`] keeps the rules.
#[derive(uniffi::Object)]
pub struct LockGuard {
    slot: LeaseSlot<Tokio>,
}

impl LockGuard {
    pub(crate) fn new(guard: tenure::LockGuard<Tokio>) -> Arc<Self> {
        Arc::new(Self { slot: LeaseSlot::new(guard) })
    }
}

#[uniffi::export]
impl LockGuard {
    /// The lock name.
    pub fn name(&self) -> String {
        self.slot.name().to_owned()
    }

    /// The fencing token of this acquisition: send it with every write the lock protects.
    pub fn fencing_token(&self) -> i64 {
        fence(self.slot.fencing_token())
    }

    /// Whether the lease may be counted on now (held, and its validity, counted from the
    /// request's send, has not run out).
    pub fn is_valid(&self) -> bool {
        self.slot.is_valid()
    }

    /// Whether a keep-alive renews the lease (kept, not ended, still valid).
    pub fn keeping(&self) -> bool {
        self.slot.keeping()
    }

    /// Why the keep-alive stopped on its own, once it has.
    pub fn keep_alive_stop(&self) -> Option<KeepAliveStop> {
        self.slot.ended().map(KeepAliveStop::from)
    }

    /// Renews the lease for another lease duration; the fencing token (unchanged while held).
    pub async fn extend(&self) -> Result<i64, TenureError> {
        Ok(fence(self.slot.extend().await?.fencing_token))
    }

    /// [`LockGuard::extend`], blocking the calling thread.
    pub fn extend_blocking(&self) -> Result<i64, TenureError> {
        block("LockGuard.extendBlocking", self.extend())
    }

    /// Whether this acquisition still holds a live lease in the store.
    pub async fn owned(&self) -> Result<bool, TenureError> {
        Ok(self.slot.owned().await?)
    }

    /// [`LockGuard::owned`], blocking the calling thread.
    pub fn owned_blocking(&self) -> Result<bool, TenureError> {
        block("LockGuard.ownedBlocking", self.owned())
    }

    /// Releases: `LockNotOwned` if it was released already or its lease was lost.
    pub async fn release(&self) -> Result<(), TenureError> {
        Ok(self.slot.release().await?)
    }

    /// [`LockGuard::release`], blocking the calling thread.
    pub fn release_blocking(&self) -> Result<(), TenureError> {
        block("LockGuard.releaseBlocking", self.release())
    }

    /// Keeps the lease alive in the background (a renewal every third of it) for at most
    /// `max_hold` seconds (no bound without one), then releases it; warns below `warn_below`
    /// seconds of validity left while renewals fail (a third of the lease without).
    #[uniffi::method(default(max_hold = None, warn_below = None))]
    pub fn keep_alive(&self, max_hold: Option<f64>, warn_below: Option<f64>) -> Result<(), TenureError> {
        let max_hold = optional("maxHold", max_hold)?.unwrap_or(Duration::MAX);
        let warn_below = optional("warnBelow", warn_below)?;
        Ok(self.slot.keep_alive(max_hold, warn_below)?)
    }

    /// Completes at the keep-alive's next warning (renewals keep failing, the validity running
    /// out) with the seconds of validity left, or with `None` once the lease is released or lost.
    pub async fn warning(&self) -> Option<f64> {
        self.slot.warning().await.map(|left| left.as_secs_f64())
    }

    /// [`LockGuard::warning`] for `withLock`'s own loop: the next one it was not told of.
    pub async fn next_warning(&self) -> Option<f64> {
        self.slot.next_warning().await.map(|left| left.as_secs_f64())
    }

    /// Completes with `true` the moment the lease is lost (or a keep-alive reached its maximum
    /// hold), with `false` once it is released; `LockBusy` while a downgrade is under way.
    pub async fn lost(&self) -> Result<bool, TenureError> {
        Ok(self.slot.lost()?.await)
    }

    /// On the write side of a read-write lock: whether the writer before this one let its lease
    /// run out without releasing, or this lease lapsed and an extend granted it again.
    pub fn poisoned(&self) -> bool {
        self.slot.poisoned()
    }

    /// On the write side of a read-write lock: turns the write lease into a read lease in one
    /// step; the generation read. Refused while a keep-alive renews it.
    pub async fn downgrade(&self) -> Result<i64, TenureError> {
        Ok(fence(self.slot.downgrade().await?))
    }

    /// [`LockGuard::downgrade`], blocking the calling thread.
    pub fn downgrade_blocking(&self) -> Result<i64, TenureError> {
        block("LockGuard.downgradeBlocking", self.downgrade())
    }

    /// Throws the core's `LockLost` error for this lease, by why its keep-alive ended.
    pub fn lost_error(&self) -> Result<(), TenureError> {
        Err(self.slot.lost_error().into())
    }
}
