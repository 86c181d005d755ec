//! [`KeepAlive`]: a held lease renewed in the background while a job runs (DESIGN §4.8).
//!
//! The schedule is the core's [`tenure_core::KeepAlive`]; this module runs it on the runtime: a
//! background task renews through the guard's holder, retries a failed renewal while the lease
//! is still valid, and releases at the maximum hold. The lease's own validity (counted from each
//! request's send) decides when it is lost, so [`KeepAlive::lost`] completes the moment a frozen
//! store lets it run out — before the store could grant it to anyone else.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use event_listener::Event;
use futures_lite::future;
use tenure_core::{BackendErrorKind, Error, FencingToken, KeepAliveStep, LossCause, Timestamp};

use crate::runtime::{Runtime, sleep_until};

/// A boxed future of a renewal or an end.
pub(crate) type Step<'a> = Pin<Box<dyn Future<Output = Result<(), Error>> + Send + 'a>>;

pub(crate) mod private {
    use super::{Duration, FencingToken, Step, Timestamp};

    /// A held lease, as the renewal task sees it: through its holder, not its guard.
    pub trait Renew: Send + Sync + 'static {
        /// The lock name, for logs.
        fn name(&self) -> &str;
        /// The lease a renewal asks for.
        fn lease(&self) -> Duration;
        /// The end of validity of the kept lease (`None` once it is lost, ended or replaced).
        fn valid_until(&self) -> Option<Timestamp>;
        /// Extends the lease.
        fn renew(&self) -> Step<'_>;
        /// Ends it at the maximum hold (a lock is released; a task lock exits).
        fn end(&self) -> Step<'_>;
        /// Its fencing token.
        fn fence(&self) -> FencingToken;
        /// Why it was lost, once its machine has said so (the renewal task may not know yet).
        fn loss(&self) -> Option<super::LossCause> {
            None
        }
        /// Tells its holder's metrics that renewals keep failing with only `left` of its
        /// validity remaining.
        fn validity_low(&self, left: Duration);
        /// Tells its holder's metrics the lease is lost (`expired`, `unreachable`, `taken`,
        /// `fence_regression` or `revoked`).
        fn lost(&self, cause: &'static str);
    }

    /// A guard a [`KeepAlive`](super::KeepAlive) can keep.
    pub trait Sealed {
        /// The lease as the renewal task sees it.
        fn lease_of(&self) -> std::sync::Arc<dyn Renew>;
    }
}

pub(crate) use private::{Renew, Sealed};

/// A guard whose lease a [`KeepAlive`] keeps: [`LockGuard`](crate::LockGuard) and
/// [`TaskLockGuard`](crate::TaskLockGuard).
pub trait Keepable: private::Sealed + Send + Sized + 'static {
    /// The runtime the renewals run on.
    type Runtime: Runtime;

    /// That runtime.
    fn runtime(&self) -> &Self::Runtime;

    /// Completes when the lease is lost (or ended).
    fn lost(&self) -> impl Future<Output = ()> + Send + 'static + use<Self>;
}

/// Why a [`KeepAlive`] stopped renewing on its own: the core's [`LossCause`], the cause of the
/// [`Error::Lost`](crate::Error::Lost) that work held under it ends with.
pub type KeepAliveEnd = LossCause;

/// A held lease kept alive in the background: renewed every third of the lease, retried while
/// still valid, released at the maximum hold. Made by [`LockGuard::keep_alive`] and
/// [`TaskLockGuard::keep_alive`].
///
/// Race the job against [`KeepAlive::lost`] so it stops when the lease goes; send
/// [`KeepAlive::fencing_token`] with every write it protects. Dropping the `KeepAlive` stops the
/// renewals and releases the lease in the background; [`KeepAlive::stop`] stops them and hands
/// the guard back (to release and see the outcome, or to exit a task lock).
///
/// ```
/// # use std::time::Duration;
/// # use tenure::{Lock, MemoryBackend};
/// # async fn job() {}
/// # async fn example<R: tenure::Runtime>(runtime: R) -> Result<(), tenure::Error> {
/// let lock = Lock::builder("reindex", runtime).backend(MemoryBackend::new()).build()?;
/// let kept = lock.acquire().await?.keep_alive(Duration::from_secs(3600));
/// let lost = kept.lost();
/// futures_lite::future::or(async { job().await; true }, async { lost.await; false }).await;
/// kept.stop().release().await?;
/// # Ok(()) }
/// ```
///
/// [`LockGuard::keep_alive`]: crate::LockGuard::keep_alive
/// [`TaskLockGuard::keep_alive`]: crate::TaskLockGuard::keep_alive
#[must_use = "dropping the KeepAlive releases the lease"]
pub struct KeepAlive<G: Keepable> {
    /// Taken only by `stop` (which consumes the `KeepAlive`) and `drop`.
    guard: Option<G>,
    lease: Arc<dyn Renew>,
    shared: Arc<Shared>,
}

/// What the renewal task and the `KeepAlive` share.
#[derive(Default)]
struct Shared {
    stopped: AtomicBool,
    /// Rung on stop (so a waiting renewal task ends at once), on the end and on each warning.
    event: Event,
    ended: Mutex<Option<KeepAliveEnd>>,
    /// A renewal was tried and none confirmed since: a loss by expiry is then `Unreachable`.
    failing: AtomicBool,
    /// The warnings given so far, and the validity left at the last.
    warnings: Mutex<(u64, Duration)>,
}

impl Shared {
    /// Records a warning, unless the renewals were stopped (nobody is to be warned of a lease
    /// given up): checked under the lock a reader's `warning_after` reads it with.
    fn warn(&self, left: Duration) {
        let mut warnings = self.warnings.lock().unwrap_or_else(PoisonError::into_inner);
        if self.stopped.load(Ordering::SeqCst) {
            return;
        }
        *warnings = (warnings.0 + 1, left);
        drop(warnings);
        self.event.notify(usize::MAX);
    }

    fn warnings(&self) -> (u64, Duration) {
        *self.warnings.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Completes with the warnings given and the validity left at the last, once more than
    /// `seen` were given, or with `None` once the renewals have stopped or ended.
    async fn warning_after(self: Arc<Self>, seen: u64) -> Option<(u64, Duration)> {
        loop {
            let listener = self.event.listen();
            match self.warnings() {
                (count, left) if count > seen => return Some((count, left)),
                _ if self.stopped.load(Ordering::SeqCst) || self.ended().is_some() => return None,
                _ => listener.await,
            }
        }
    }

    fn stop(&self) {
        // (under the warnings' lock: a warning is recorded before the stop or not at all)
        let warnings = self.warnings.lock().unwrap_or_else(PoisonError::into_inner);
        self.stopped.store(true, Ordering::SeqCst);
        drop(warnings);
        self.event.notify(usize::MAX);
    }

    fn end(&self, end: KeepAliveEnd) {
        *self.ended.lock().unwrap_or_else(PoisonError::into_inner) = Some(end);
        self.event.notify(usize::MAX);
    }

    fn ended(&self) -> Option<KeepAliveEnd> {
        self.ended.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Completes once the renewals have ended on their own.
    async fn until_ended(self: Arc<Self>) {
        loop {
            let listener = self.event.listen();
            if self.ended().is_some() {
                return;
            }
            listener.await;
        }
    }
}

impl<G: Keepable> KeepAlive<G> {
    /// Starts keeping `guard`'s lease for at most `max_hold` (`Duration::MAX`: no bound); the
    /// same as the guard's own `keep_alive`.
    pub fn new(guard: G, max_hold: Duration) -> Self {
        let lease = private::Sealed::lease_of(&guard);
        let runtime = guard.runtime().clone();
        let policy = tenure_core::KeepAlive::new(runtime.now(), lease.lease(), max_hold);
        Self::start(guard, lease, policy)
    }

    /// [`KeepAlive::new`], warning when renewals fail and less than `warn_below` of the lease's
    /// validity is left (instead of a third of the lease). A threshold that is not greater than 0
    /// and under half the lease (a renewal is due when two thirds are left, and must have time
    /// to be answered before the warning) is refused as a settings error naming `warn_below`,
    /// before anything starts: the guard comes back with the error, holding as it was.
    pub fn with_warning(guard: G, max_hold: Duration, warn_below: Duration) -> Result<Self, (Error, G)> {
        let lease = private::Sealed::lease_of(&guard);
        let runtime = guard.runtime().clone();
        let mut policy = tenure_core::KeepAlive::new(runtime.now(), lease.lease(), max_hold);
        match policy.set_warning(warn_below) {
            Ok(()) => Ok(Self::start(guard, lease, policy)),
            Err(refused) => Err((refused, guard)),
        }
    }

    fn start(guard: G, lease: Arc<dyn Renew>, policy: tenure_core::KeepAlive) -> Self {
        let runtime = guard.runtime().clone();
        let shared = Arc::new(Shared::default());
        runtime.clone().spawn(renew(runtime, lease.clone(), policy, shared.clone()));
        Self { guard: Some(guard), lease, shared }
    }

    /// The guard whose lease is kept.
    pub fn guard(&self) -> &G {
        // `guard` is only taken by `stop` and `drop`, after which no `&self` exists.
        self.guard.as_ref().expect("a live KeepAlive has its guard")
    }

    /// The fencing token of the kept lease: send it with every write the lock protects.
    pub fn fencing_token(&self) -> FencingToken {
        self.lease.fence()
    }

    /// Until when the lease may be counted on, on the runtime's clock; `None` once it is lost or
    /// ended. Moves forward with every confirmed renewal.
    pub fn valid_until(&self) -> Option<Timestamp> {
        self.lease.valid_until().filter(|_| self.ended().is_none())
    }

    /// Whether the lease may be counted on now.
    pub fn is_valid(&self) -> bool {
        let now = self.guard().runtime().now();
        self.valid_until().is_some_and(|until| now < until)
    }

    /// Completes when the lease is lost — its validity ran out without a confirmed renewal, a
    /// renewal found it taken — or ended at the maximum hold.
    ///
    /// Once it has completed the `KeepAlive` renews no more, even if a renewal sent before the
    /// validity ran out is confirmed after it.
    pub fn lost(&self) -> impl Future<Output = ()> + Send + 'static + use<G> {
        future::or(self.guard().lost(), self.shared.clone().until_ended())
    }

    /// Why the renewals stopped on their own, once they have — or why the lease was lost, once
    /// its holder knows (so that whoever wakes on [`KeepAlive::lost`] reads the cause even
    /// before the renewal task, woken by the same answer, has said it).
    pub fn ended(&self) -> Option<KeepAliveEnd> {
        self.shared.ended().or_else(|| held_loss(&*self.lease, &self.shared))
    }

    /// Why the lease was lost, for whoever woke on [`KeepAlive::lost`] before the renewal task
    /// said it: [`KeepAlive::ended`], else how its validity ran out (`Unreachable` while renewals
    /// failed or went unanswered, else `Expired`).
    pub fn loss_cause(&self) -> KeepAliveEnd {
        self.ended().unwrap_or_else(|| match self.shared.failing.load(Ordering::SeqCst) {
            true => LossCause::Unreachable,
            false => LossCause::Expired,
        })
    }

    /// Completes at the next warning — renewals keep failing and less than the threshold (a
    /// third of the lease unless [`KeepAlive::with_warning`] set it) of validity is left — with
    /// the validity left then: the work's last chance to checkpoint before the loss. `None` once
    /// the renewals have stopped or ended. One warning per run of failed renewals; the same is
    /// logged and counted (`tenure.lock.validity.warnings`).
    pub fn warning(&self) -> impl Future<Output = Option<Duration>> + Send + 'static + use<G> {
        let next = self.warning_after(self.shared.warnings().0);
        async move { next.await.map(|(_, left)| left) }
    }

    /// The first warning after `seen` were given (a consumer's cursor, so that none is missed
    /// while it handles the last): how many were given then, and the validity left.
    pub(crate) fn warning_after(
        &self,
        seen: u64,
    ) -> impl Future<Output = Option<(u64, Duration)>> + Send + 'static + use<G> {
        self.shared.clone().warning_after(seen)
    }

    /// Stops renewing and hands the guard back at once (a renewal already in flight still
    /// completes, in the background).
    pub fn stop(mut self) -> G {
        self.shared.stop();
        // `guard` is only taken here and in `drop`, each once.
        self.guard.take().expect("a live KeepAlive has its guard")
    }
}

impl<G: Keepable> Drop for KeepAlive<G> {
    fn drop(&mut self) {
        self.shared.stop();
        // The guard's own drop releases (or exits) in the background.
        drop(self.guard.take());
    }
}

impl<G: Keepable> std::fmt::Debug for KeepAlive<G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeepAlive")
            .field("name", &self.lease.name())
            .field("fencing_token", &self.fencing_token())
            .field("ended", &self.ended())
            .finish_non_exhaustive()
    }
}

/// Ends the renewals on a loss, counted in the holder's metrics at once by the cause's name
/// there (`taken` for [`LossCause::Lost`]). The loss the holder recorded first, if it did, is the
/// one told: [`KeepAlive::ended`] read it already, and never changes its answer.
fn lost(lease: &dyn Renew, shared: &Shared, end: KeepAliveEnd) {
    let end = held_loss(lease, shared).unwrap_or(end);
    lease.lost(match end {
        LossCause::Lost => "taken",
        ref cause => cause.as_str(),
    });
    shared.end(end);
}

/// The loss the lease's holder recorded (an answer to any of its calls), told as the keep-alive
/// tells it: run out while renewals failed is `Unreachable`, whatever the holder saw.
fn held_loss(lease: &dyn Renew, shared: &Shared) -> Option<KeepAliveEnd> {
    lease.loss().map(|cause| match cause {
        LossCause::Expired if shared.failing.load(Ordering::SeqCst) => LossCause::Unreachable,
        cause => cause,
    })
}

/// The validity ran out: `Unreachable` if renewals were failing or unanswered, else `Expired`
/// (none was even tried: the process paused). (The loss its holder recorded first, if any, comes
/// before: see [`lost`].)
fn ran_out(policy: &tenure_core::KeepAlive) -> KeepAliveEnd {
    if policy.failing() { LossCause::Unreachable } else { LossCause::Expired }
}

/// The warning a job checkpoints on: renewals keep failing and less than the threshold of the
/// lease's validity is left. Given once per run of failed renewals.
fn warn_low(lease: &dyn Renew, shared: &Shared, policy: &mut tenure_core::KeepAlive, left: Duration) {
    policy.warned();
    let left_ms = u64::try_from(left.as_millis()).unwrap_or(u64::MAX);
    tracing::warn!(
        name = lease.name(),
        fence = lease.fence().get(),
        validity_left_ms = left_ms,
        "a kept lease's renewals keep failing and its validity is running out: checkpoint the work"
    );
    lease.validity_low(left);
    shared.warn(left);
}

/// A renewal's answer; if it is still unanswered when the warning is due, the warning first
/// (unless the keep-alive was stopped meanwhile: nobody is to be warned of a lease given up).
async fn answer<R: Runtime>(
    runtime: &R,
    lease: &dyn Renew,
    shared: &Shared,
    policy: &mut tenure_core::KeepAlive,
    before: Option<Timestamp>,
    mut renewal: Step<'_>,
) -> Result<(), Error> {
    let Some((until, warn_at)) = before.and_then(|until| Some((until, policy.warning_at(until)?))) else {
        return renewal.await;
    };
    let due = async {
        sleep_until(runtime, Some(warn_at)).await;
        None
    };
    if let Some(answered) = future::or(async { Some((&mut renewal).await) }, due).await {
        return answered;
    }
    let now = runtime.now();
    if now < until && !shared.stopped.load(Ordering::SeqCst) {
        warn_low(lease, shared, policy, until.saturating_duration_since(now));
    }
    renewal.await
}

/// Whether a lease valid until `until` still is.
fn validity_held<R: Runtime>(runtime: &R, until: Option<Timestamp>) -> bool {
    until.is_some_and(|until| runtime.now() < until)
}

/// The renewal task: follows the core's schedule until stopped, lost or ended.
async fn renew<R: Runtime>(runtime: R, lease: Arc<dyn Renew>, mut policy: tenure_core::KeepAlive, shared: Arc<Shared>) {
    loop {
        // Listen before looking, so a stop in between is not missed.
        let stopped = shared.event.listen();
        if shared.stopped.load(Ordering::SeqCst) {
            return;
        }
        let before = lease.valid_until();
        match policy.next(runtime.now(), before) {
            KeepAliveStep::Wait(at) => future::or(sleep_until(&runtime, Some(at)), stopped).await,
            KeepAliveStep::Warn(left) => warn_low(&*lease, &shared, &mut policy, left),
            KeepAliveStep::Renew => {
                policy.renewing();
                shared.failing.store(true, Ordering::SeqCst);
                match answer(&runtime, &*lease, &shared, &mut policy, before, lease.renew()).await {
                    // A confirmation that came after the validity it renewed ran out is no use:
                    // the holder has been told the lease is lost (its `lost()` completed) and may
                    // have stopped its job. Lost is final.
                    Ok(()) if !validity_held(&runtime, before) => {
                        return lost(&*lease, &shared, LossCause::Unreachable);
                    }
                    Ok(()) => {
                        shared.failing.store(false, Ordering::SeqCst);
                        policy.renewed();
                    }
                    // Revoked by an operator: told so, with the reason, whatever the validity left.
                    Err(Error::Lost { cause: cause @ LossCause::Revoked(_), .. }) => {
                        return lost(&*lease, &shared, cause);
                    }
                    // Told it holds no more after its validity ran out: it ended by expiry first.
                    Err(e) if e.is_not_owned() && !validity_held(&runtime, before) => {
                        return lost(&*lease, &shared, LossCause::Unreachable);
                    }
                    Err(e) if e.is_not_owned() => return lost(&*lease, &shared, LossCause::Lost),
                    // The store answered a fence below this lease's: it lost the grant.
                    Err(e) if e.backend_error().is_some_and(|c| c.kind() == BackendErrorKind::FenceRegression) => {
                        return lost(&*lease, &shared, LossCause::FenceRegression);
                    }
                    Err(e) => {
                        tracing::warn!(name = lease.name(), error = %e, "renewing a kept lease failed; retrying while it is valid");
                        policy.failed(runtime.now());
                    }
                }
            }
            KeepAliveStep::Release => {
                // Said before the release starts, so whoever sees the lease go knows why.
                shared.end(KeepAliveEnd::MaxHold);
                if let Err(e) = lease.end().await {
                    tracing::warn!(name = lease.name(), error = %e, "ending a kept lease at its maximum hold failed");
                }
                return;
            }
            KeepAliveStep::Lost => return lost(&*lease, &shared, ran_out(&policy)),
            // A step this driver does not know: nothing it can keep.
            _ => return,
        }
    }
}
