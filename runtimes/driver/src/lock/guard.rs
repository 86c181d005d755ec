//! `LockGuard`: proof of holding a lock, released on drop.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tenure_core::{Error, FencingToken, LockHandle, Name, Timestamp};

use super::LockHolder;
use crate::keep_alive::{KeepAlive, Keepable, Renew, Sealed, Step};
use crate::runtime::Runtime;

/// A held lock. Send [`LockGuard::fencing_token`] with every write the lock protects, so the
/// resource can refuse writes from a holder whose lease has since passed to someone else.
///
/// Dropping the guard without [`LockGuard::release`] hands the release to the runtime in the
/// background (it never blocks or panics in `Drop`); release explicitly to see its outcome.
#[must_use = "dropping the guard releases the lock"]
pub struct LockGuard<R: Runtime> {
    /// Taken only by `release` and `drop`, which consume the guard.
    holder: Option<LockHolder<R>>,
    handle: LockHandle,
}

impl<R: Runtime> LockGuard<R> {
    pub(crate) fn new(holder: LockHolder<R>, handle: LockHandle) -> Self {
        Self { holder: Some(holder), handle }
    }

    /// Lets the guard go without releasing: its holder keeps the lease (a binding's holder
    /// object that made the guard only to keep it alive).
    pub(crate) fn forget(mut self) {
        self.holder = None;
    }

    fn inner(&self) -> &LockHolder<R> {
        // `holder` is only taken by `release` and `drop`, after which no `&self` exists.
        self.holder.as_ref().expect("a live guard has its holder")
    }

    /// The handle: name, ownership token and fencing token.
    pub fn handle(&self) -> &LockHandle {
        &self.handle
    }

    /// The fencing token of this acquisition (or of the lease an extend re-granted).
    pub fn fencing_token(&self) -> FencingToken {
        self.handle.fencing_token
    }

    /// The lock name.
    pub fn name(&self) -> &Name {
        &self.handle.name
    }

    /// Whether the lease may still be counted on now.
    pub fn is_valid(&self) -> bool {
        self.inner().is_held()
    }

    /// Until when the lease may be counted on, on the runtime's clock: the send instant of the
    /// request that granted or last renewed it, plus the lease less the 1 % drift allowance.
    /// `None` once it is lost or released. (On the real runtimes,
    /// [`clock::instant`](crate::runtime::clock::instant) turns it into an `Instant`.)
    pub fn valid_until(&self) -> Option<Timestamp> {
        self.inner().valid_until(self.handle.fencing_token)
    }

    /// Keeps the lease alive in the background while the job runs: renewed every third of the
    /// lease, retried while still valid, released after `max_hold` (`Duration::MAX`: never).
    /// See [`KeepAlive`].
    pub fn keep_alive(self, max_hold: Duration) -> KeepAlive<Self> {
        KeepAlive::new(self, max_hold)
    }

    /// Renews the lease for another `lease_duration`. If it had lapsed and nobody took it, the
    /// store grants it again with a greater fencing token, which this guard then carries.
    pub async fn extend(&mut self) -> Result<&LockHandle, Error> {
        self.handle = self.inner().extend().await?;
        Ok(&self.handle)
    }

    /// On the write side of a read-write lock: turns the write lease into a read lease in one
    /// step (no other writer gets in between); the guard then holds the read lease, its fencing
    /// token the generation read (see [`super::WriteGuard::downgrade`]). [`Error::NotOwned`]
    /// elsewhere, or if the write lease was gone.
    pub async fn downgrade(&mut self) -> Result<&LockHandle, Error> {
        self.handle = self.inner().downgrade().await?;
        Ok(&self.handle)
    }

    /// Releases the lock. [`Error::NotOwned`] if the lease had already run out or been taken.
    pub async fn release(mut self) -> Result<(), Error> {
        let Some(holder) = self.holder.take() else { return Ok(()) };
        let released = holder.release().await;
        holder.recycle();
        released
    }

    /// Whether the store still has this guard's token as the holder.
    pub async fn owned(&self) -> Result<bool, Error> {
        self.inner().owned().await
    }

    /// Completes when the lease is lost: it ran out locally before an extend, an extend found
    /// it taken, or it was released.
    pub fn lost(&self) -> impl Future<Output = ()> + Send + 'static + use<R> {
        self.inner().lost()
    }

    /// The holder behind this guard.
    pub fn holder(&self) -> &LockHolder<R> {
        self.inner()
    }
}

impl<R: Runtime> Sealed for LockGuard<R> {
    fn lease_of(&self) -> Arc<dyn Renew> {
        Arc::new(KeptLease { holder: self.inner().clone(), fence: self.handle.fencing_token })
    }
}

impl<R: Runtime> Keepable for LockGuard<R> {
    type Runtime = R;

    fn runtime(&self) -> &R {
        &self.inner().lock().shared.runtime
    }

    fn lost(&self) -> impl Future<Output = ()> + Send + 'static + use<R> {
        LockGuard::lost(self)
    }
}

/// A guard's lease as its renewal task sees it: through the holder, under the guard's fence.
struct KeptLease<R: Runtime> {
    holder: LockHolder<R>,
    fence: FencingToken,
}

impl<R: Runtime> Renew for KeptLease<R> {
    fn name(&self) -> &str {
        self.holder.lock().name().as_str()
    }

    fn lease(&self) -> Duration {
        self.holder.lock().shared.config().lease_duration()
    }

    fn valid_until(&self) -> Option<Timestamp> {
        self.holder.valid_until(self.fence)
    }

    fn renew(&self) -> Step<'_> {
        Box::pin(async { self.holder.extend().await.map(drop) })
    }

    fn end(&self) -> Step<'_> {
        Box::pin(self.holder.release())
    }

    fn fence(&self) -> FencingToken {
        self.fence
    }

    fn loss(&self) -> Option<tenure_core::LossCause> {
        self.holder.loss(self.fence)
    }

    fn validity_low(&self, left: Duration) {
        self.holder.meter().validity_low(self.fence.get(), left);
    }

    fn lost(&self, cause: &'static str) {
        self.holder.meter().lost(self.fence.get(), cause);
    }
}

impl<R: Runtime> Drop for LockGuard<R> {
    fn drop(&mut self) {
        if let Some(holder) = self.holder.take() {
            holder.release_in_background();
        }
    }
}

impl<R: Runtime> std::fmt::Debug for LockGuard<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard").field("handle", &self.handle).field("valid", &self.is_valid()).finish()
    }
}
