//! Running a core machine on a [`Runtime`]: feed it the clock, its store replies and its timers,
//! and hand back the events a caller waits for.
//!
//! A machine lives in a [`Cell`]: a mutex never held across an await, an [`Event`] rung whenever
//! the machine may have changed, and the machine's **turn** — an async mutex (`async-lock`'s,
//! which starves no waiter) — held by whoever drives it (takes its requests and events). Two
//! kinds of driver:
//!
//! - **In the foreground**, a caller runs one command to its end: [`command`] (it first finishes
//!   what an earlier command left, then starts its own) or [`follow`] (a loop already under way,
//!   the election's). If the caller's future is dropped mid-way, the command is abandoned
//!   ([`Abandon`]) and what is still in flight is handed to the background.
//! - **In the background**, nobody waits: [`settle`] finishes what a dropped guard or an abandoned
//!   command left (a release, a late grant to give back), and the late answer of a call the
//!   machine gave up on is awaited *without* the turn, then delivered (so a store that never
//!   answers does not stall the next command). Each is bounded by [`crate::HAND_OFF_BOUND`].
//!
//! A waiting driver wakes for the first of these that is ready, looked at in this order: the
//! store's **reply** (it may end the command), the machine's **timer** (a deadline or a retry),
//! a **push wake-up** (a release elsewhere: attempt now), a **change** made outside this drive
//! (re-read the machine).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use event_listener::{Event, EventListener};
use futures_lite::future;
use tenure_core::machine::Machine;
use tenure_core::{BackendError, Error, OpId, StoreOp, StoreReply, StoreRequest, Timestamp};

use crate::backend::Wakeup;
use crate::runtime::{Runtime, sleep_until};
use crate::telemetry::Meter;

/// A running store call.
pub(crate) type Reply = Pin<Box<dyn Future<Output = Result<StoreReply, BackendError>> + Send>>;

/// Runs a machine's store operations.
pub(crate) trait Execute: Clone + Send + Sync + 'static {
    /// The answer, when the store can give it without waiting.
    fn answer_now(&self, op: &StoreOp) -> Option<Result<StoreReply, BackendError>>;
    fn execute(&self, op: StoreOp) -> Reply;
}

/// Reports a machine's events to `tracing` (name and fencing token, never the ownership token)
/// and to its [`Meter`], and, after each turn, what it holds (see `observe.rs`).
pub(crate) trait Observe: Machine {
    fn observe(&self, event: &Self::Event, meter: &Meter);
    /// Tells the meter what the machine holds, waits for or leads after a turn (only called
    /// with a telemetry sink installed, or while the meter counts something).
    fn meter(&self, meter: &Meter, now: Timestamp);
}

/// What a machine does when the task driving a command goes away (the future was dropped):
/// stop waiting, and release whatever a late answer grants.
pub(crate) trait Abandon: Observe + Send + 'static {
    fn abandon(&mut self, now: Timestamp);
}

impl Abandon for tenure_core::LockMachine {
    fn abandon(&mut self, now: Timestamp) {
        self.cancel(now);
    }
}

impl Abandon for tenure_core::TaskLockMachine {
    fn abandon(&mut self, now: Timestamp) {
        self.cancel(now);
    }
}

impl Abandon for tenure_core::ElectionMachine {
    fn abandon(&mut self, now: Timestamp) {
        self.stop(now);
    }
}

/// A machine shared between the task driving it and the ones watching it.
pub(crate) struct Cell<M> {
    machine: Mutex<M>,
    /// Rung after every turn of a drive, and by whoever changes the machine outside one.
    pub(crate) changed: Event,
    /// Held by the one driver of the machine.
    turn: async_lock::Mutex<()>,
    /// What the machine has told the metrics.
    pub(crate) meter: Meter,
}

impl<M> Cell<M> {
    pub(crate) fn new(machine: M) -> Self {
        let (changed, turn) = (Event::new(), async_lock::Mutex::new(()));
        Self { machine: Mutex::new(machine), changed, turn, meter: Meter::default() }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, M> {
        // Machines never panic mid-update, so a poisoned lock still guards a consistent machine.
        self.machine.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for the machine's turn. The free case is the same compare-and-swap `lock()` tries
    /// first (a starving waiter keeps the state non-zero, so neither barges past it), without
    /// the lock future around it.
    async fn turn(&self) -> async_lock::MutexGuard<'_, ()> {
        match self.turn.try_lock() {
            Some(turn) => turn,
            None => self.turn.lock().await,
        }
    }
}

/// What a foreground driver drives the machine for.
pub(crate) trait Purpose<M: Machine> {
    type Output;

    /// Sees every event in order; `Some` ends the drive with that output.
    fn event(&mut self, event: M::Event) -> Option<Self::Output>;

    /// Whether the purpose is reached whatever the events said (checked after every turn).
    fn reached(&mut self, machine: &M) -> Option<Self::Output> {
        let _ = machine;
        None
    }

    /// Called when the wake-up being awaited fired: subscribe again (before any new attempt),
    /// then tell the machine. Returns the new wake-up.
    fn woken(&mut self, machine: &mut M, now: Timestamp) -> Option<Wakeup> {
        let _ = (machine, now);
        None
    }
}

/// Runs a command on the machine in `cell`: waits for its turn, finishes what an earlier command
/// left (its events are not this command's), starts the command with `start` — whose refusal is
/// returned at once — and drives until `purpose` is reached (`Some`). `None`: the machine had
/// nothing left to wait for, which a purpose expecting an answer treats as an internal error.
///
/// Dropping the returned future mid-way abandons the command ([`Abandon`]) and hands the store
/// call in flight to the background, so a late grant is released instead of held unknown.
pub(crate) async fn command<R, M, X, P>(
    runtime: &R,
    cell: &Arc<Cell<M>>,
    exec: &X,
    mut purpose: P,
    mut wakeup: Option<Wakeup>,
    start: impl FnOnce(&mut M, Timestamp) -> Result<(), Error>,
) -> Result<Option<P::Output>, Error>
where
    R: Runtime,
    M: Abandon,
    X: Execute,
    P: Purpose<M>,
{
    drive(runtime, cell, exec, Role::Foreground, &mut purpose, &mut wakeup, Some(start)).await
}

/// Drives, in the foreground, what the machine has under way (the election's loop) until
/// `purpose` is reached; see [`command`].
pub(crate) async fn follow<R, M, X, P>(
    runtime: &R,
    cell: &Arc<Cell<M>>,
    exec: &X,
    mut purpose: P,
    mut wakeup: Option<Wakeup>,
) -> Option<P::Output>
where
    R: Runtime,
    M: Abandon,
    X: Execute,
    P: Purpose<M>,
{
    let output = drive(runtime, cell, exec, Role::Foreground, &mut purpose, &mut wakeup, NoStart::<M>::None).await;
    output.unwrap_or(None)
}

/// Finishes, in the background and at the machine's next turn, what it has queued (a release
/// handed over by a dropped guard or an abandoned command); see [`settle`].
pub(crate) fn finish_in_background<R, M, X>(runtime: &R, cell: &Arc<Cell<M>>, exec: &X)
where
    R: Runtime,
    M: Abandon,
    X: Execute,
{
    let (rt, cell, exec) = (runtime.clone(), cell.clone(), exec.clone());
    runtime.spawn(async move { settle(&rt, &cell, &exec).await });
}

/// Drives what the machine has queued, with nobody waiting, until it is settled (a late answer
/// still to come is awaited without the turn), or [`crate::HAND_OFF_BOUND`] has passed.
pub(crate) async fn settle<R, M, X>(runtime: &R, cell: &Arc<Cell<M>>, exec: &X)
where
    R: Runtime,
    M: Abandon,
    X: Execute,
{
    let give_up_at = runtime.now() + crate::HAND_OFF_BOUND;
    let _ = runtime.timeout_at(give_up_at, settle_now(runtime, cell, exec)).await;
}

async fn settle_now<R, M, X>(runtime: &R, cell: &Arc<Cell<M>>, exec: &X)
where
    R: Runtime,
    M: Abandon,
    X: Execute,
{
    let _ = drive(runtime, cell, exec, Role::Background, &mut Settle, &mut None, NoStart::<M>::None).await;
}

/// Takes the machine's turn and drives it as `role` (see [`Driver::run`]).
async fn drive<R, M, X, P, S>(
    runtime: &R,
    cell: &Arc<Cell<M>>,
    exec: &X,
    role: Role,
    purpose: &mut P,
    wakeup: &mut Option<Wakeup>,
    start: Option<S>,
) -> Result<Option<P::Output>, Error>
where
    R: Runtime,
    M: Abandon,
    X: Execute,
    P: Purpose<M>,
    S: FnOnce(&mut M, Timestamp) -> Result<(), Error>,
{
    let _turn = cell.turn().await;
    let mut driver = Driver { runtime, cell, exec, pending: None, role, finished: false };
    let output = driver.run(purpose, wakeup, start).await;
    driver.finished = true;
    output
}

/// Delivers, in the background, the late answer of a store call nobody waits for any more (the
/// machine then releases a grant it no longer wants), and settles what that started. Gives up
/// after [`crate::HAND_OFF_BOUND`].
fn deliver_late<R, M, X>(runtime: &R, cell: &Arc<Cell<M>>, exec: &X, pending: Pending)
where
    R: Runtime,
    M: Abandon,
    X: Execute,
{
    let (rt, cell, exec) = (runtime.clone(), cell.clone(), exec.clone());
    runtime.spawn(async move {
        let give_up_at = rt.now() + crate::HAND_OFF_BOUND;
        let Pending { id, reply } = pending;
        let Some(answer) = rt.timeout_at(give_up_at, reply).await else { return };
        {
            let mut machine = cell.lock();
            let now = rt.now();
            machine.handle_reply(now, id, answer);
        }
        // A foreground driver, if one runs, takes it from here.
        cell.changed.notify(usize::MAX);
        let _ = rt.timeout_at(give_up_at, settle_now(&rt, &cell, &exec)).await;
    });
}

/// Completes once `until` says the machine no longer holds (returns `None`): re-checks after
/// every turn of the machine, and at the instant `until` returned (when a lease or leadership
/// runs out without anyone telling the machine).
pub(crate) async fn watch<R: Runtime, M>(
    cell: &Cell<M>,
    runtime: &R,
    until: impl Fn(&M, Timestamp) -> Option<Timestamp>,
) {
    loop {
        let listener = cell.changed.listen();
        let Some(at) = until(&cell.lock(), runtime.now()) else { return };
        future::or(listener, sleep_until(runtime, Some(at))).await;
    }
}

/// No command to start: [`Driver::run`] drives what is under way.
type NoStart<M> = Option<fn(&mut M, Timestamp) -> Result<(), Error>>;

/// Who drives: a caller, or nobody (a bounded background drive, which hands on only the late
/// answer of a call it gave up on, never what it was finishing).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Foreground,
    Background,
}

/// A store call in flight.
struct Pending {
    id: OpId,
    reply: Reply,
}

/// The driver of a machine, holding its turn: its store call in flight goes to the background
/// however the drive ends.
struct Driver<'a, R: Runtime, M: Abandon, X: Execute> {
    runtime: &'a R,
    cell: &'a Arc<Cell<M>>,
    exec: &'a X,
    pending: Option<Pending>,
    role: Role,
    /// The drive ended normally (else its future was dropped mid-way).
    finished: bool,
}

/// What woke a waiting driver (see the module docs for the order they are looked at in).
enum Woke {
    Reply(OpId, Result<StoreReply, BackendError>),
    Timer,
    Wakeup,
    Changed,
}

impl<R: Runtime, M: Abandon, X: Execute> Driver<'_, R, M, X> {
    /// Drives until `purpose` is reached, or the machine has nothing left to wait for
    /// (`Ok(None)`). With `start`, what an earlier command left is finished first (its events
    /// reach no purpose), then `start` begins this command under the lock of the turn that finds
    /// the machine settled; its refusal is returned at once.
    async fn run<P, S>(
        &mut self,
        purpose: &mut P,
        wakeup: &mut Option<Wakeup>,
        mut start: Option<S>,
    ) -> Result<Option<P::Output>, Error>
    where
        P: Purpose<M>,
        S: FnOnce(&mut M, Timestamp) -> Result<(), Error>,
    {
        loop {
            let (request, timeout, output, changed) = {
                let mut machine = self.cell.lock();
                if let Some(begin) = start.take_if(|_| machine.is_settled()) {
                    let now = self.runtime.now();
                    begin(&mut machine, now)?;
                }
                let (request, timeout, output) = match start {
                    Some(_) => match turn(&mut *machine, &self.cell.meter, self.runtime, self.exec, &mut Settle) {
                        // What was left is finished: start this command at once.
                        (None, _, Some(())) => continue,
                        (request, timeout, _) => (request, timeout, None),
                    },
                    None => turn(&mut *machine, &self.cell.meter, self.runtime, self.exec, purpose),
                };
                // Watchers (lost futures, leadership waiters) re-check after every turn: a state
                // can change without an event (a release stops the holder counting on its lease).
                self.cell.changed.notify(usize::MAX);
                // Listening before the machine is let go: a change made by anyone after this turn
                // (a late answer delivered in the background) wakes this driver.
                let changed = output.is_none().then(|| self.cell.changed.listen());
                (request, timeout, output, changed)
            };
            if let Some(request) = request
                && self.send(request, output.is_none())
            {
                continue;
            }
            // A call still in flight once the purpose is reached is one the machine gave up on:
            // its late answer is delivered without holding the turn (see `Drop`).
            if output.is_some() || (self.pending.is_none() && timeout.is_none() && wakeup.is_none()) {
                return Ok(output);
            }
            let changed = changed.unwrap_or_else(|| self.cell.changed.listen());
            // Boxed: only drives that must wait pay for the timers' space.
            let woke = Box::pin(wait(self.runtime, &mut self.pending, timeout, wakeup.as_mut(), changed)).await;
            let mut machine = self.cell.lock();
            // Read the clock while holding the machine, so that inputs from several threads
            // reach it in clock order.
            let now = self.runtime.now();
            match woke {
                Woke::Reply(id, reply) => {
                    self.pending = None;
                    machine.handle_reply(now, id, reply);
                }
                Woke::Timer => machine.handle_timeout(now),
                Woke::Wakeup => *wakeup = purpose.woken(&mut machine, now),
                Woke::Changed => {}
            }
        }
    }

    /// Runs `request` on the store. True if the store answered at once and the answer was fed
    /// to the machine (`answer_now`: nothing is awaited); else the call is in flight.
    ///
    /// The call is polled once here either way, so its request goes out now: one the machine
    /// queued as the purpose was reached (a timed-out waiter giving up its place in the store's
    /// queue) reaches the store before anything the caller does next on the same connection.
    fn send(&mut self, request: StoreRequest, may_answer: bool) -> bool {
        let mut reply = self.exec.execute(request.op);
        if let Some(answer) = ready_now(&mut reply) {
            if !may_answer {
                // Delivered late, as an answer still in flight would be.
                reply = Box::pin(std::future::ready(answer));
            } else {
                let mut machine = self.cell.lock();
                let now = self.runtime.now();
                machine.handle_reply(now, request.id, answer);
                return true;
            }
        }
        if let Some(abandoned) = self.pending.replace(Pending { id: request.id, reply }) {
            // Only its late answer is left to deliver; whoever drives then takes it from there.
            deliver_late(self.runtime, self.cell, self.exec, abandoned);
        }
        false
    }
}

impl<R: Runtime, M: Abandon, X: Execute> Drop for Driver<'_, R, M, X> {
    fn drop(&mut self) {
        // Abandoning may queue a request (a release): it is finished in the background.
        let queued = !self.finished && {
            let mut machine = self.cell.lock();
            machine.abandon(self.runtime.now());
            machine.poll_timeout().is_some()
        };
        self.cell.changed.notify(usize::MAX);
        // The spawned drives wait for the turn this driver gives up when its fields drop. A
        // background drive hands on only a late answer (bounded, and only as long as the machine
        // keeps asking the store), never what it gave up on.
        match self.pending.take() {
            Some(pending) => deliver_late(self.runtime, self.cell, self.exec, pending),
            None if queued && self.role == Role::Foreground => {
                finish_in_background(self.runtime, self.cell, self.exec);
            }
            None => {}
        }
    }
}

/// Finishing what is under way: reached once the machine has no command under way.
struct Settle;

impl<M: Machine> Purpose<M> for Settle {
    type Output = ();

    fn event(&mut self, _: M::Event) -> Option<()> {
        None
    }

    fn reached(&mut self, machine: &M) -> Option<()> {
        machine.is_settled().then_some(())
    }
}

/// The reply, if the store has already answered. A reply still pending has seen a no-op
/// waker; the next poll (in [`wait`]) registers the real one.
fn ready_now(reply: &mut Reply) -> Option<Result<StoreReply, BackendError>> {
    let mut cx = Context::from_waker(Waker::noop());
    match reply.as_mut().poll(&mut cx) {
        Poll::Ready(answer) => Some(answer),
        Poll::Pending => None,
    }
}

/// Drains the machine: observes and hands over its events, and takes its request and its
/// deadline. A request the store answers at once is answered here, under the same lock.
fn turn<R, M, X, P>(
    machine: &mut M,
    meter: &Meter,
    runtime: &R,
    exec: &X,
    purpose: &mut P,
) -> (Option<StoreRequest>, Option<Timestamp>, Option<P::Output>)
where
    R: Runtime,
    M: Observe,
    X: Execute,
    P: Purpose<M>,
{
    loop {
        let mut output = None;
        while let Some(event) = machine.poll_event() {
            machine.observe(&event, meter);
            if let Some(out) = purpose.event(event) {
                output.get_or_insert(out);
            }
        }
        if crate::telemetry::enabled() || meter.counting() {
            machine.meter(meter, runtime.now());
        }
        if output.is_none() {
            output = purpose.reached(machine);
        }
        let request = machine.poll_effect();
        if let Some(request) = &request
            && output.is_none()
            && let Some(reply) = exec.answer_now(&request.op)
        {
            // A store that answers at once (the memory backend) needs no future or timer.
            let now = runtime.now();
            machine.handle_reply(now, request.id, reply);
            continue;
        }
        return (request, machine.poll_timeout(), output);
    }
}

/// Waits for the first of: the reply in flight, the machine's timer, the push wake-up, a change
/// made outside this drive — looked at in that order when several are ready.
async fn wait<R: Runtime>(
    runtime: &R,
    pending: &mut Option<Pending>,
    timeout: Option<Timestamp>,
    mut wakeup: Option<&mut Wakeup>,
    mut changed: EventListener,
) -> Woke {
    let mut timer = std::pin::pin!(sleep_until(runtime, timeout));
    future::poll_fn(move |cx| {
        if let Some(Pending { id, reply }) = pending
            && let Poll::Ready(answer) = reply.as_mut().poll(cx)
        {
            return Poll::Ready(Woke::Reply(*id, answer));
        }
        if timer.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Woke::Timer);
        }
        if let Some(wakeup) = wakeup.as_deref_mut()
            && Pin::new(wakeup).poll(cx).is_ready()
        {
            return Poll::Ready(Woke::Wakeup);
        }
        if Pin::new(&mut changed).poll(cx).is_ready() {
            return Poll::Ready(Woke::Changed);
        }
        Poll::Pending
    })
    .await
}
