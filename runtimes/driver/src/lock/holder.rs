//! `LockHolder`: one ownership token and its machine.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tenure_core::{
    Access, BackendError, BackendErrorKind, Error, HolderKind, LockConfig, LockEvent, LockHandle, LockMachine, Query,
    StoreRequest, Timestamp, Token,
};

use super::{Lock, LockGuard};
use crate::backend::Wakeup;
use crate::drive::{Cell, Execute, Purpose, command, settle, watch};
use crate::identity::holder_token;
use crate::keep_alive::KeepAlive;
use crate::observe::primitive;
use crate::runtime::Runtime;

/// One holder of a [`Lock`]: an ownership token and the state of its lease.
///
/// Acquire, extend and release as many times as needed; a nested acquire while holding is
/// [`Error::Reentrant`], and operations never run concurrently on one holder ([`Error::Busy`]).
/// [`Lock::acquire`] makes a fresh holder per acquisition and wraps it in a [`LockGuard`].
pub struct LockHolder<R: Runtime> {
    lock: Lock<R>,
    cell: Arc<Cell<LockMachine>>,
    kind: HolderKind,
}

impl<R: Runtime> LockHolder<R> {
    pub(crate) fn new(lock: Lock<R>, kind: HolderKind) -> Self {
        let config = lock.shared.config();
        // The token is a capability (the OS's generator); the jitter is the runtime's to seed.
        let token = holder_token(config.worker(), kind, &mut rand::rng());
        let mut jitter = tenure_core::SplitMix64::new(lock.shared.runtime.jitter_seed());
        let machine =
            LockMachine::with_access(lock.shared.key.clone(), token, lock.shared.access, &config, &mut jitter);
        let cell = Arc::new(Cell::new(machine));
        Self { lock, cell, kind }
    }

    pub(crate) fn from_cell(lock: Lock<R>, cell: Arc<Cell<LockMachine>>) -> Self {
        Self { lock, cell, kind: HolderKind::Task }
    }

    /// Who holds, as the lock says now (its purpose may have changed since this holder was made).
    fn details(&self) -> Option<tenure_core::HolderDetails> {
        self.lock.shared.details.get()
    }

    /// Returns this task holder to its lock's idle holders if nobody else refers to it and its
    /// machine is quiescent (nothing held, nothing in flight, no late answer awaited). Its machine
    /// then serves a later acquisition of the same lock in this process, under a fresh token.
    pub(crate) fn recycle(self) {
        let reusable = self.kind == HolderKind::Task && Arc::strong_count(&self.cell) == 1;
        if !reusable || !self.cell.lock().is_quiescent() {
            return;
        }
        let mut idle = self.lock.shared.idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if idle.len() < super::IDLE_HOLDERS {
            idle.push(self.cell);
        }
    }

    /// Starts the release now (the holder stops counting on its lease at once, and a new command
    /// on it waits for the release) and finishes it in the background; never blocks.
    pub(crate) fn release_in_background(self) {
        let runtime = self.lock.shared.runtime.clone();
        let started = {
            let mut machine = self.cell.lock();
            let now = runtime.now();
            machine.release(now)
        };
        let spawner = runtime.clone();
        spawner.spawn(async move {
            // Outcomes are traced by the driver; nobody is left to tell.
            if started.is_ok() {
                settle(&runtime, &self.cell, &self.lock.shared.exec()).await;
            } else {
                // Another operation was under way: release after it.
                let _ = self.release().await;
            }
            self.recycle();
        });
    }

    /// The ownership token this holder writes in the store. A capability: do not log it.
    pub fn token(&self) -> Token {
        self.cell.lock().token().clone()
    }

    /// The lock.
    pub fn lock(&self) -> &Lock<R> {
        &self.lock
    }

    /// Whether the write lease this holder holds or last held (a side of a read-write lock) is
    /// poisoned: the writer before it expired without releasing, or it lapsed and an extend
    /// granted it again.
    pub fn poisoned(&self) -> bool {
        self.cell.lock().poisoned()
    }

    /// What this holder's machine is doing.
    pub fn phase(&self) -> tenure_core::LockPhase {
        self.cell.lock().phase()
    }

    /// Whether a guard (or another clone) shares this holder.
    pub(crate) fn is_shared(&self) -> bool {
        Arc::strong_count(&self.cell) > 1
    }

    /// Which lease this holder takes (a side's holder that downgraded reads).
    pub fn access(&self) -> Access {
        self.cell.lock().access()
    }

    /// Whether this holder may act as the owner now: it holds a lease whose validity (counted
    /// from the request's send, less a drift allowance) has not run out.
    pub fn is_held(&self) -> bool {
        self.cell.lock().is_held(self.lock.now())
    }

    /// How long the lease this holder holds stays valid, as the driver counts it (from the
    /// request's send, less a drift allowance): `None` when it holds none that is valid now.
    pub fn valid_for(&self) -> Option<Duration> {
        let now = self.lock.now();
        let machine = self.cell.lock();
        machine.valid_until().filter(|_| machine.is_held(now)).map(|until| until.saturating_duration_since(now))
    }

    /// The end of validity of the lease with fencing token `fence`, while this holder counts on
    /// it (a later lease of the same holder is another one).
    pub(crate) fn valid_until(&self, fence: tenure_core::FencingToken) -> Option<Timestamp> {
        let machine = self.cell.lock();
        machine.valid_until().filter(|_| machine.fence() == Some(fence))
    }

    /// Why the lease `fence` was lost, once its machine has said so (before its event is seen).
    pub(crate) fn loss(&self, fence: tenure_core::FencingToken) -> Option<tenure_core::LossCause> {
        let (_, reason) = self.cell.lock().loss().filter(|(lost, _)| *lost == fence)?;
        Some(super::loss_cause(reason))
    }

    /// This holder's metrics.
    pub(crate) fn meter(&self) -> &crate::telemetry::Meter {
        &self.cell.meter
    }

    /// The handle of the lease held (or last held, until released).
    pub fn handle(&self) -> Option<LockHandle> {
        self.cell.lock().handle()
    }

    /// Acquires, waiting up to `timeout` (`None`: forever). See [`Lock::acquire_timeout`].
    ///
    /// On a store that keeps a queue of waiters ([`crate::backend::LockBackend::turn`]), the
    /// attempts keep a place in it and the store hands the lock over in turn; otherwise the
    /// holder polls, woken early by pushed releases.
    pub async fn acquire(&self, timeout: Option<Duration>) -> Result<LockHandle, Error> {
        let shared = &self.lock.shared;
        // The token the attempts will carry, known now: a turn is the token's.
        let token = {
            let mut machine = self.cell.lock();
            let _ = fresh_token(&mut machine, shared.config().worker(), self.kind, shared.access);
            machine.token().clone()
        };
        // Subscribe before the first attempt, so a release or hand-off after a refusal is not
        // missed. (The sides of a read-write lock keep no queue: their waiters are woken.)
        let turn = (shared.access == Access::Exclusive)
            .then(|| shared.backend.turn(shared.key.as_str(), token.as_str()))
            .flatten();
        let queued = turn.is_some();
        let wakeup = turn.or_else(|| shared.backend.wakeup(shared.key.as_str()));
        let (kind, access, seen, details) = (self.kind, shared.access, shared.seen_fence(), self.details());
        let start = move |m: &mut LockMachine, now, config: &LockConfig| {
            fresh_token(m, config.worker(), kind, access)?;
            remember(m, seen);
            m.set_details(details.clone());
            // A semaphore's waiter keeps a short place in line, as a queued lock's does.
            m.set_queued((queued || matches!(access, Access::Permit(_))).then(|| queue_wait(config)));
            m.acquire(now, timeout)
        };
        let ended = self.run(start, wakeup, queued, "acquire").await;
        if ended.is_err() && (queued || matches!(access, Access::Write | Access::Permit(_))) {
            // A writer that gives up withdraws its intent before saying so (as grelmicro
            // awaits it), and a waiter its place in the queue or line: a caller that exits at once
            // (the CLI after a timeout) must not leave an intent that keeps new readers out, a
            // place that holds later waiters back, or one the store would hand the lock to, for a
            // lease. Bounded by the backend timeout.
            let deadline = shared.runtime.now().saturating_add(shared.config().backend_timeout());
            let _ = shared.runtime.timeout_at(deadline, settle(&shared.runtime, &self.cell, &shared.exec())).await;
        }
        self.handle_after(&ended?, "acquire")
    }

    /// One attempt; [`Error::WouldBlock`] if another holder has the lock.
    pub async fn acquire_nowait(&self) -> Result<LockHandle, Error> {
        let (kind, access, seen) = (self.kind, self.lock.shared.access, self.lock.shared.seen_fence());
        let details = self.details();
        let start = move |m: &mut LockMachine, now, config: &LockConfig| {
            fresh_token(m, config.worker(), kind, access)?;
            remember(m, seen);
            m.set_details(details.clone());
            m.acquire_nowait(now)
        };
        let ended = self.run(start, None, false, "acquire").await;
        self.handle_after(&ended?, "acquire")
    }

    /// Renews the lease for another `lease_duration`. A live lease keeps its fencing token; a
    /// lapsed one nobody took is granted again with a greater one (compare the handle's token);
    /// a lease taken by another holder is [`Error::NotOwned`].
    pub async fn extend(&self) -> Result<LockHandle, Error> {
        let event = self.run(|m, now, _| m.extend(now), None, false, "extend").await?;
        self.handle_after(&event, "extend")
    }

    /// Releases the lease ([`Error::NotOwned`] if it was not held any more).
    pub async fn release(&self) -> Result<(), Error> {
        self.run(|m, now, _| m.release(now), None, false, "release").await.map(drop)
    }

    /// Turns the write lease this holder holds into a read lease in one step (a side of a
    /// read-write lock: see [`tenure_core::LockMachine::downgrade`]); the handle of the read
    /// lease, whose fencing token is the generation read.
    pub async fn downgrade(&self) -> Result<LockHandle, Error> {
        let event = self.run(|m, now, _| m.downgrade(now), None, false, "downgrade").await?;
        match event {
            LockEvent::Downgraded { generation, .. } => {
                Ok(LockHandle { name: self.lock.name().clone(), token: self.token(), fencing_token: generation })
            }
            _ => Err(stopped(self.lock.name(), "downgrade")),
        }
    }

    /// Whether this holder's token holds the lock in the store ([`Error::OwnedCheck`]); for a
    /// side of a read-write lock, the side it holds now.
    pub async fn owned(&self) -> Result<bool, Error> {
        let (token, access) = {
            let machine = self.cell.lock();
            (machine.token().clone(), machine.access())
        };
        let (query, request) =
            Query::owned_as(&self.lock.shared.key, &token, access, self.lock.now(), self.lock.backend_timeout());
        ask(&self.lock.shared.runtime, &self.lock.shared.exec(), query, request).await
    }

    /// Completes when this holder stops holding: its lease ran out locally, an extend found it
    /// taken, or it was released. Completes at once if nothing is held.
    pub fn lost(&self) -> impl Future<Output = ()> + Send + 'static + use<R> {
        let (cell, runtime) = (self.cell.clone(), self.lock.shared.runtime.clone());
        // The lease held now: a later acquisition by this holder is another lease.
        let fence = cell.lock().fence();
        async move {
            let held = |m: &LockMachine, now| m.valid_until().filter(|_| m.is_held(now) && m.fence() == fence);
            watch(&cell, &runtime, held).await;
        }
    }

    /// Keeps the lease this holder holds alive in the background (see [`KeepAlive`]), warning
    /// below `warn_below` of validity left (a third of the lease without): [`Error::NotOwned`]
    /// if it holds none, a settings error naming `warn_below` if that is not under half the lease
    /// (the lease then held as before). Dropping the `KeepAlive` releases the lease.
    pub fn keep_alive(
        &self,
        max_hold: Duration,
        warn_below: Option<Duration>,
    ) -> Result<KeepAlive<LockGuard<R>>, Error> {
        let handle = self
            .handle()
            .filter(|_| self.is_held())
            .ok_or_else(|| Error::NotOwned { name: self.lock.name().as_str().to_owned() })?;
        let guard = LockGuard::new(self.clone(), handle);
        match warn_below {
            None => Ok(guard.keep_alive(max_hold)),
            // A refused threshold: the guard is forgotten, not dropped (a drop would release).
            Some(threshold) => KeepAlive::with_warning(guard, max_hold, threshold).map_err(|(refused, guard)| {
                guard.forget();
                refused
            }),
        }
    }

    pub(crate) async fn acquire_guard(self, timeout: Option<Duration>) -> Result<LockGuard<R>, Error> {
        match self.acquire(timeout).await {
            Ok(handle) => Ok(LockGuard::new(self, handle)),
            Err(e) => {
                self.recycle();
                Err(e)
            }
        }
    }

    pub(crate) async fn acquire_nowait_guard(self) -> Result<LockGuard<R>, Error> {
        match self.acquire_nowait().await {
            Ok(handle) => Ok(LockGuard::new(self, handle)),
            Err(e) => {
                self.recycle();
                Err(e)
            }
        }
    }

    /// Runs a command, with the current configuration, to its completion event.
    async fn run(
        &self,
        begin: impl FnOnce(&mut LockMachine, Timestamp, &LockConfig) -> Result<(), Error>,
        wakeup: Option<Wakeup>,
        queued: bool,
        operation: &'static str,
    ) -> Result<LockEvent, Error> {
        let shared = &self.lock.shared;
        let config = shared.config();
        let start = move |machine: &mut LockMachine, now| {
            machine.set_config(&config);
            begin(machine, now, &config)
        };
        let purpose = Command { backend: &*shared.backend, key: shared.key.as_str(), queued };
        let fence = || self.cell.lock().fence().map(|fence| fence.get());
        let metered = self.cell.meter.command(primitive(shared.access), self.lock.name().as_str(), operation, fence);
        let ended = command(&shared.runtime, &self.cell, &shared.exec(), purpose, wakeup, start).await;
        shared.saw_fence(self.cell.lock().last_fence());
        let ended = match ended {
            Ok(Some(outcome)) => outcome,
            Ok(None) => Err(stopped(self.lock.name(), operation)),
            Err(refused) => Err(refused),
        };
        if let Some(metered) = metered {
            metered.finish(ended.as_ref());
        }
        ended
    }

    /// The handle an acquire or extend yielded.
    fn handle_after(&self, event: &LockEvent, operation: &'static str) -> Result<LockHandle, Error> {
        match event {
            LockEvent::Acquired { fence, .. } | LockEvent::Extended { fence, .. } => {
                Ok(LockHandle { name: self.lock.name().clone(), token: self.token(), fencing_token: *fence })
            }
            _ => Err(stopped(self.lock.name(), operation)),
        }
    }
}

impl<R: Runtime> Clone for LockHolder<R> {
    fn clone(&self) -> Self {
        Self { lock: self.lock.clone(), cell: self.cell.clone(), kind: self.kind }
    }
}

impl<R: Runtime> std::fmt::Debug for LockHolder<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockHolder").field("name", self.lock.name()).field("held", &self.is_held()).finish()
    }
}

/// Tells a holder about to acquire the highest fencing token its lock's holders saw (taken when
/// the acquire began: whatever the store grants it after that is greater, unless the store lost
/// its counter). Not before a renewal: the holders of a semaphore hold different tokens at once,
/// and a renewal keeps its own.
fn remember(machine: &mut LockMachine, seen: Option<tenure_core::FencingToken>) {
    if let Some(fence) = seen {
        machine.remember_fence(fence);
    }
}

/// A lock command: ends at its completion event; push wake-ups retry a waiting acquire, or
/// (queued in the store) hand it the lock.
struct Command<'a> {
    backend: &'a dyn crate::backend::LockBackend,
    key: &'a str,
    /// The acquire keeps a place in the store's queue: it waits for its turn.
    queued: bool,
}

impl Purpose<LockMachine> for Command<'_> {
    type Output = Result<LockEvent, Error>;

    fn event(&mut self, event: LockEvent) -> Option<Self::Output> {
        match event {
            LockEvent::Failed(e) => Some(Err(e)),
            LockEvent::Lost { .. } => None,
            done => Some(Ok(done)),
        }
    }

    fn woken(&mut self, machine: &mut LockMachine, now: Timestamp) -> Option<Wakeup> {
        let token = machine.token().clone();
        match self.backend.take_grant(self.key, token.as_str()) {
            Some(fence) => machine.handle_grant(now, fence),
            None => machine.wake(now),
        }
        if self.queued { self.backend.turn(self.key, token.as_str()) } else { self.backend.wakeup(self.key) }
    }
}

/// How long a waiter's place in the store's queue lasts after each attempt: three pauses
/// between attempts at their longest (jitter included), from 100 ms to 2 s. The machine asks
/// again within a third of it, so a waiter that keeps asking keeps its place (with a long
/// `retry_interval`, it asks more often than that while queued), and one that vanished is
/// skipped within 2 s.
fn queue_wait(config: &LockConfig) -> Duration {
    let wait = config.retry_interval().mul_f64(3.0 * (1.0 + config.retry_jitter()));
    wait.clamp(Duration::from_millis(100), Duration::from_secs(2))
}

/// Gives a holder whose token served an earlier acquisition a new one: a request of that
/// acquisition (a release that timed out, a retried one) may still reach the store, and must not
/// free this one's lease (found by the simulator, tests/sim). A holder still awaiting the answer
/// of an abandoned acquire keeps its token until that answer comes.
fn fresh_token(
    machine: &mut LockMachine,
    worker: &tenure_core::WorkerId,
    kind: HolderKind,
    access: Access,
) -> Result<(), Error> {
    if !machine.token_is_fresh() && machine.is_quiescent() {
        let _ = machine.set_token(holder_token(worker, kind, &mut rand::rng()));
    }
    if machine.access() != access {
        // A writer's holder that downgraded writes again at its next acquisition, under a new
        // token (the old one may still reach the store) — not before the answer an abandoned
        // acquire awaits has come: until then it would read.
        machine.set_access(access)?;
    }
    Ok(())
}

/// The error for a drive that ended without an answer (a bug, never expected), as the error of
/// `operation` ("acquire", "enter", "extend" or "release").
pub(crate) fn stopped(name: &tenure_core::Name, operation: &'static str) -> Error {
    let cause = BackendError::new(BackendErrorKind::Other, "the driver stopped before the operation finished");
    let name = name.as_str().to_owned();
    match operation {
        "extend" => Error::Extend { name, cause },
        "release" => Error::Release { name, cause },
        _ => Error::Acquire { name, cause },
    }
}

/// Runs a one-shot yes/no question with its deadline.
pub(crate) async fn ask<R: Runtime, X: Execute>(
    runtime: &R,
    exec: &X,
    query: Query,
    request: StoreRequest,
) -> Result<bool, Error> {
    match ask_answer(runtime, exec, query, request).await? {
        tenure_core::StoreReply::Flag(answer) => Ok(answer),
        // (The query checked the shape of the answer.)
        _ => Ok(false),
    }
}

/// Runs a one-shot question with its deadline; the answer in the shape the query expects.
pub(crate) async fn ask_answer<R: Runtime, X: Execute>(
    runtime: &R,
    exec: &X,
    mut query: Query,
    request: StoreRequest,
) -> Result<tenure_core::StoreReply, Error> {
    let unanswered = || Ok(tenure_core::StoreReply::Flag(false));
    if let Some(reply) = exec.answer_now(&request.op) {
        // A query answers exactly once, to the first reply or its deadline.
        return query.handle_answer(request.id, reply).unwrap_or_else(unanswered);
    }
    let deadline = query.deadline();
    let result = match runtime.timeout_at(deadline, exec.execute(request.op)).await {
        Some(reply) => query.handle_answer(request.id, reply),
        None => query.handle_timeout_answer(runtime.now().max(deadline)),
    };
    // A query answers exactly once, to the first reply or its deadline.
    result.unwrap_or_else(unanswered)
}
