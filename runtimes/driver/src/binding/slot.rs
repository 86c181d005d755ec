//! [`LeaseSlot`]: one acquisition as a binding's guard object holds it — the guard, then its
//! keep-alive, until released — with the rules every front end shares: a release beats the
//! loss its own stop would show, a downgrade is refused while renewals run, and a lost lease
//! ends with the core's [`Error::Lost`] and its cause.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use event_listener::Event;
use tenure_core::{Error, FencingToken, LockHandle, LossCause, Timestamp};

use crate::keep_alive::KeepAlive;
use crate::lock::{LockGuard, LockHolder};
use crate::runtime::Runtime;

/// What the slot holds.
enum Held<R: Runtime> {
    Guard(LockGuard<R>),
    Kept(KeepAlive<LockGuard<R>>),
    /// A downgrade is under way (the guard comes back when it ends).
    Busy,
    Released,
}

struct Inner<R: Runtime> {
    name: String,
    fence: FencingToken,
    held: Mutex<Held<R>>,
    /// Set once released: a release wins over the loss its own stop would show.
    released: AtomicBool,
    /// The keep-alive's warnings the binding's loop was told of ([`LeaseSlot::next_warning`]).
    warnings_told: AtomicU64,
    released_event: Event,
}

/// One acquisition of a lock (or of a side of a read-write lock, or a permit's lease) as a
/// binding's guard object holds it. Cheap to clone: clones share the acquisition. Every future
/// it gives is `'static`, for bindings that hand them to a foreign event loop.
pub struct LeaseSlot<R: Runtime> {
    inner: Arc<Inner<R>>,
}

impl<R: Runtime> Clone for LeaseSlot<R> {
    fn clone(&self) -> Self {
        Self { inner: self.inner.clone() }
    }
}

impl<R: Runtime> std::fmt::Debug for LeaseSlot<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseSlot").field("name", &self.inner.name).field("fence", &self.inner.fence).finish()
    }
}

impl<R: Runtime> LeaseSlot<R> {
    /// The slot of a lease just acquired.
    pub fn new(guard: LockGuard<R>) -> Self {
        let (name, fence) = (guard.name().as_str().to_owned(), guard.fencing_token());
        Self::holding(name, fence, Held::Guard(guard))
    }

    /// The slot of a lease already kept alive.
    pub fn kept(kept: KeepAlive<LockGuard<R>>) -> Self {
        let (name, fence) = (kept.guard().name().as_str().to_owned(), kept.fencing_token());
        Self::holding(name, fence, Held::Kept(kept))
    }

    fn holding(name: String, fence: FencingToken, held: Held<R>) -> Self {
        let inner = Inner {
            name,
            fence,
            held: Mutex::new(held),
            released: AtomicBool::new(false),
            warnings_told: AtomicU64::new(0),
            released_event: Event::new(),
        };
        Self { inner: Arc::new(inner) }
    }

    fn held(&self) -> MutexGuard<'_, Held<R>> {
        self.inner.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn busy(&self, operation: &'static str) -> Error {
        Error::Busy { name: self.inner.name.clone(), operation }
    }

    fn not_owned(&self) -> Error {
        Error::NotOwned { name: self.inner.name.clone() }
    }

    /// The lock name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The holder while the lease is held (released, it goes back to the lock's pool).
    pub fn holder(&self) -> Option<LockHolder<R>> {
        match &*self.held() {
            Held::Guard(g) => Some(g.holder().clone()),
            Held::Kept(k) => Some(k.guard().holder().clone()),
            Held::Busy | Held::Released => None,
        }
    }

    /// The fencing token as it stands (a downgrade's read lease has its own), else the one
    /// granted.
    pub fn fencing_token(&self) -> FencingToken {
        self.holder().and_then(|h| h.handle()).map_or(self.inner.fence, |h| h.fencing_token)
    }

    /// On the write side of a read-write lock: whether the writer before this one let its lease
    /// run out without releasing, or this lease lapsed and an extend granted it again.
    pub fn poisoned(&self) -> bool {
        self.holder().is_some_and(|h| h.poisoned())
    }

    /// Whether the lease may be counted on now (validity counted from the request's send).
    pub fn is_valid(&self) -> bool {
        match &*self.held() {
            Held::Guard(g) => g.is_valid(),
            Held::Kept(k) => k.is_valid(),
            Held::Busy | Held::Released => false,
        }
    }

    /// Until when the lease may be counted on, while held.
    pub fn valid_until(&self) -> Option<Timestamp> {
        match &*self.held() {
            Held::Guard(g) => g.valid_until(),
            Held::Kept(k) => k.valid_until(),
            Held::Busy | Held::Released => None,
        }
    }

    /// Whether a keep-alive renews the lease (kept, not ended, still valid).
    pub fn keeping(&self) -> bool {
        matches!(&*self.held(), Held::Kept(k) if k.ended().is_none() && k.is_valid())
    }

    /// Why the keep-alive stopped on its own, once it has.
    pub fn ended(&self) -> Option<LossCause> {
        match &*self.held() {
            Held::Kept(k) => k.ended(),
            _ => None,
        }
    }

    /// The core's [`Error::Lost`] for this lease, by why its keep-alive ended
    /// ([`KeepAlive::loss_cause`]: when no end was said yet, how the validity ran out).
    pub fn lost_error(&self) -> Error {
        let cause = match &*self.held() {
            Held::Kept(k) => k.loss_cause(),
            _ => LossCause::Expired,
        };
        Error::Lost { name: self.inner.name.clone(), cause }
    }

    /// Keeps the lease alive in the background for at most `max_hold` (`Duration::MAX`: no
    /// bound), warning when renewals fail and less than `warn_below` of its validity is left (a
    /// third of the lease without; see [`KeepAlive::with_warning`]: a threshold refused leaves
    /// the lease held as it was). A second call keeps the first keep-alive, and refuses another
    /// threshold (it is set when the keep-alive starts).
    pub fn keep_alive(&self, max_hold: Duration, warn_below: Option<Duration>) -> Result<(), Error> {
        let mut held = self.held();
        *held = match std::mem::replace(&mut *held, Held::Released) {
            Held::Guard(guard) => match warn_below {
                None => Held::Kept(guard.keep_alive(max_hold)),
                Some(threshold) => match KeepAlive::with_warning(guard, max_hold, threshold) {
                    Ok(kept) => Held::Kept(kept),
                    Err((refused, guard)) => {
                        *held = Held::Guard(guard);
                        return Err(refused);
                    }
                },
            },
            kept @ Held::Kept(_) if warn_below.is_none() => kept,
            kept @ Held::Kept(_) => {
                *held = kept;
                let why = "warn_below is set when the keep-alive starts, and this lease is kept alive already";
                return Err(Error::settings("warn_below", why));
            }
            Held::Busy => {
                *held = Held::Busy;
                return Err(self.busy("downgrade"));
            }
            Held::Released => return Err(self.not_owned()),
        };
        Ok(())
    }

    /// Completes at the keep-alive's next warning after this call (renewals keep failing and
    /// its validity is running out) with the validity left, or with `None` once it ended, was
    /// released or was never started.
    pub fn warning(&self) -> impl Future<Output = Option<Duration>> + Send + 'static + use<R> {
        let next = match &*self.held() {
            Held::Kept(kept) => Some(kept.warning()),
            _ => None,
        };
        async move { next?.await }
    }

    /// The next warning the binding's own loop (the one that calls the user's callback) has not
    /// been told of, or `None` once the keep-alive ended: the slot keeps that loop's place, so a
    /// warning given while the callback ran is told next, and one given before the loop's first
    /// call too. Only that loop calls it; a user's own waits use [`LeaseSlot::warning`].
    pub fn next_warning(&self) -> impl Future<Output = Option<Duration>> + Send + 'static + use<R> {
        let seen = self.inner.warnings_told.load(Ordering::SeqCst);
        let next = match &*self.held() {
            Held::Kept(kept) => Some(kept.warning_after(seen)),
            _ => None,
        };
        let inner = self.inner.clone();
        async move {
            let (count, left) = next?.await?;
            inner.warnings_told.fetch_max(count, Ordering::SeqCst);
            Some(left)
        }
    }

    /// Renews the lease for another lease duration.
    pub fn extend(&self) -> impl Future<Output = Result<LockHandle, Error>> + Send + 'static + use<R> {
        let (holder, not_owned) = (self.holder(), self.not_owned());
        async move { holder.ok_or(not_owned)?.extend().await }
    }

    /// Whether this acquisition still holds a live lease in the store (`false` once released).
    pub fn owned(&self) -> impl Future<Output = Result<bool, Error>> + Send + 'static + use<R> {
        let holder = self.holder();
        async move {
            match holder {
                Some(holder) => holder.owned().await,
                None => Ok(false),
            }
        }
    }

    /// Releases (the renewals stopped first): `NotOwned` if it was released already or lost,
    /// `Busy` while a downgrade is under way.
    pub fn release(&self) -> impl Future<Output = Result<(), Error>> + Send + 'static + use<R> {
        let taken = {
            let mut held = self.held();
            if matches!(*held, Held::Busy) {
                Err(self.busy("downgrade"))
            } else {
                Ok(std::mem::replace(&mut *held, Held::Released))
            }
        };
        // Before stopping a keep-alive, whose end would otherwise read as a loss.
        if taken.is_ok() {
            self.inner.released.store(true, Ordering::SeqCst);
            self.inner.released_event.notify(usize::MAX);
        }
        let not_owned = self.not_owned();
        async move {
            match taken? {
                Held::Guard(guard) => guard.release().await,
                Held::Kept(kept) => kept.stop().release().await,
                Held::Busy | Held::Released => Err(not_owned),
            }
        }
    }

    /// On the write side of a read-write lock: turns the write lease into a read lease in one
    /// step; the generation read. Refused while a keep-alive renews it (release or stop it).
    pub fn downgrade(&self) -> impl Future<Output = Result<FencingToken, Error>> + Send + 'static + use<R> {
        let taken = {
            let mut held = self.held();
            match std::mem::replace(&mut *held, Held::Busy) {
                Held::Guard(guard) => Ok(guard),
                kept @ Held::Kept(_) => {
                    *held = kept;
                    Err(self.busy("keep-alive"))
                }
                Held::Busy => Err(self.busy("downgrade")),
                Held::Released => {
                    *held = Held::Released;
                    Err(self.not_owned())
                }
            }
        };
        let slot = self.clone();
        async move {
            let mut guard = taken?;
            let downgraded = guard.downgrade().await.map(|h| h.fencing_token);
            *slot.held() = Held::Guard(guard);
            downgraded
        }
    }

    /// Completes with `true` the moment the lease is lost (or a keep-alive ended at its maximum
    /// hold), with `false` once it is released: a release beats the loss its stop shows.
    /// `Busy` while a downgrade is under way.
    pub fn lost(&self) -> Result<impl Future<Output = bool> + Send + 'static + use<R>, Error> {
        let lost: Option<std::pin::Pin<Box<dyn Future<Output = ()> + Send>>> = match &*self.held() {
            Held::Guard(g) => Some(Box::pin(g.lost())),
            Held::Kept(k) => Some(Box::pin(k.lost())),
            Held::Busy => return Err(self.busy("downgrade")),
            Held::Released => None,
        };
        let inner = self.inner.clone();
        Ok(async move {
            let Some(lost) = lost else { return false };
            let released = async move {
                loop {
                    if inner.released.load(Ordering::SeqCst) {
                        return false;
                    }
                    let listener = inner.released_event.listen();
                    if inner.released.load(Ordering::SeqCst) {
                        return false;
                    }
                    listener.await;
                }
            };
            futures_lite::future::or(released, async move {
                lost.await;
                true
            })
            .await
        })
    }
}
