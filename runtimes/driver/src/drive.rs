//! Running a core machine on a [`Runtime`]: feed it the clock, its store replies and its timers,
//! and hand back the events a caller waits for.
//!
//! A machine lives in a [`Cell`] (a mutex never held across an await, and an [`Event`] rung
//! whenever the machine may have changed). **One driver at a time** turns a machine — takes its
//! requests and events — through [`drive`]: a command's caller (foreground), or a background
//! task finishing what nobody waits for any more (an abandoned request, a release handed over by
//! a dropped guard), bounded in time. A foreground drive waits for a background one to finish;
//! a background one leaves the machine to an active foreground driver.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use event_listener::Event;
use futures_lite::future;
use tenure_core::machine::Machine;
use tenure_core::{BackendError, Error, Key, OpId, StoreOp, StoreReply, Timestamp};

use crate::backend::Wakeup;
use crate::runtime::{Runtime, sleep_until};

/// A running store call.
pub(crate) type Reply = Pin<Box<dyn Future<Output = Result<StoreReply, BackendError>> + Send>>;

/// Runs a machine's store operations.
pub(crate) trait Execute: Clone + Send + Sync + 'static {
    /// The answer, when the store can give it without waiting.
    fn answer_now(&self, op: &StoreOp) -> Option<Result<StoreReply, BackendError>>;
    fn execute(&self, op: StoreOp) -> Reply;
}

/// Reports an event to `tracing` (name and fencing token, never the ownership token).
pub(crate) trait Observe {
    fn observe(&self, key: &Key);
}

/// What a machine does when the task driving a command goes away (the future was dropped):
/// stop waiting, and release whatever a late answer grants.
pub(crate) trait Abandon: Machine {
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
    /// Who drives: [`FREE`], [`FOREGROUND`] or [`BACKGROUND`].
    driver: AtomicU8,
}

const FREE: u8 = 0;
const FOREGROUND: u8 = 1;
const BACKGROUND: u8 = 2;

impl<M> Cell<M> {
    pub(crate) fn new(machine: M) -> Self {
        Self { machine: Mutex::new(machine), changed: Event::new(), driver: AtomicU8::new(FREE) }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, M> {
        // Machines never panic mid-update, so a poisoned lock still guards a consistent machine.
        self.machine.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn claim(&self, role: u8) -> Result<(), u8> {
        self.driver.compare_exchange(FREE, role, Ordering::AcqRel, Ordering::Acquire).map(drop)
    }

    fn unclaim(&self) {
        self.driver.store(FREE, Ordering::Release);
        self.changed.notify(usize::MAX);
    }
}

/// What a caller is driving the machine for.
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

    /// The output for a starting command the machine refused at once.
    fn refused(&mut self, error: Error) -> Self::Output;

    /// A background drive: it ends with `None` once the machine has nothing in flight, or at
    /// this instant whatever is in flight, and leaves the machine to a foreground driver.
    fn give_up_at(&self) -> Option<Timestamp> {
        None
    }
}

struct Pending {
    id: OpId,
    reply: Reply,
}

enum Woke {
    Reply(OpId, Result<StoreReply, BackendError>),
    Timer,
    Wakeup,
    Changed,
    GiveUp,
}

/// Drives the machine in `cell` until `purpose` is reached (`Some`) or, for a background purpose,
/// until idle or given up (`None`). Also returns `None` if the machine has nothing left to wait
/// for, which a purpose expecting an answer treats as an internal error.
///
/// `start`, if given, is the command that begins the drive, run under the same lock as the first
/// turn; its refusal ends the drive with [`Purpose::refused`].
///
/// Dropping the returned future mid-way abandons the command ([`Abandon`]) and hands the store
/// call in flight to a background task, so a late grant is released instead of held unknown.
pub(crate) async fn drive<R, M, X, P, S>(
    runtime: &R,
    cell: &Arc<Cell<M>>,
    exec: &X,
    mut purpose: P,
    mut wakeup: Option<Wakeup>,
    start: Option<S>,
) -> Option<P::Output>
where
    R: Runtime,
    M: Abandon + Send + 'static,
    M::Event: Observe,
    X: Execute,
    P: Purpose<M>,
    S: FnOnce(&mut M, Timestamp) -> Result<(), Error>,
{
    let background = purpose.give_up_at().is_some();
    let mut start = start;
    if background {
        if cell.claim(BACKGROUND).is_err() {
            // Someone drives: it sees what changed (we were called after changing the machine).
            cell.changed.notify(usize::MAX);
            return None;
        }
    } else {
        // Commands on one machine run one after the other: wait for a drive under way (another
        // command, or a background drive finishing what an earlier one left).
        while cell.claim(FOREGROUND).is_err() {
            // Listen, then try again: a release of the claim in between is not missed.
            let listener = cell.changed.listen();
            if cell.claim(FOREGROUND).is_ok() {
                break;
            }
            listener.await;
        }
    }
    let mut slot = Slot { runtime, cell, exec, pending: None, finished: false, background };
    loop {
        let (request, timeout, output) = {
            let mut machine = cell.lock();
            loop {
                // Work an earlier command left (a release handed over by a dropped guard) is
                // driven to its end first; its events are not this command's.
                if let Some(start) = start.take_if(|_| machine.is_settled()) {
                    let now = runtime.now();
                    if let Err(refused) = start(&mut machine, now) {
                        slot.finished = true;
                        return Some(purpose.refused(refused));
                    }
                }
                if start.is_none() {
                    break turn(&mut *machine, runtime, exec, &mut purpose);
                }
                let (request, timeout, _) =
                    turn(&mut *machine, runtime, exec, &mut Quiet { give_up_at: Timestamp::MAX });
                if request.is_some() || !machine.is_settled() {
                    break (request, timeout, None);
                }
            }
        };
        // Watchers (lost futures, leadership waiters) re-check after every turn: a state can
        // change without an event (a release stops the holder counting on its lease at once).
        cell.changed.notify(usize::MAX);
        if let Some(request) = request {
            let mut next = Pending { id: request.id, reply: exec.execute(request.op) };
            if output.is_none()
                && let Some(reply) = ready_now(&mut next.reply)
            {
                let mut machine = cell.lock();
                let now = runtime.now();
                machine.handle_reply(now, next.id, reply);
                continue;
            }
            if let Some(abandoned) = slot.pending.replace(next) {
                // Only its late answer is left to deliver; whoever drives then takes it from there.
                deliver_late(runtime, cell, exec, abandoned);
            }
        }
        if output.is_some() || (slot.pending.is_none() && background) {
            slot.finished = true;
            return output;
        }
        let give_up = purpose.give_up_at();
        if slot.pending.is_none() && timeout.is_none() && wakeup.is_none() && give_up.is_none() {
            slot.finished = true;
            return None;
        }
        // Boxed: only drives that must wait pay for the timers' space.
        let changed = cell.changed.listen();
        let woke = Box::pin(wait(runtime, &mut slot.pending, timeout, &mut wakeup, give_up, changed)).await;
        let mut machine = cell.lock();
        // Read the clock while holding the machine, so that inputs from several threads reach it
        // in clock order.
        let now = runtime.now();
        match woke {
            Woke::Reply(id, reply) => {
                slot.pending = None;
                machine.handle_reply(now, id, reply);
            }
            Woke::Timer => machine.handle_timeout(now),
            Woke::Wakeup => wakeup = purpose.woken(&mut machine, now),
            Woke::Changed => {}
            Woke::GiveUp => {
                // A background drive that gives up drops its call: nothing waits for it.
                slot.pending = None;
                slot.finished = true;
                return None;
            }
        }
    }
}

/// No starting command (for drives that continue what is already under way).
pub(crate) type NoStart<M> = fn(&mut M, Timestamp) -> Result<(), Error>;

/// The claim of a drive on its machine, and its store call in flight: released and handed to the
/// background however the drive ends.
struct Slot<'a, R: Runtime, M: Abandon + Send + 'static, X: Execute>
where
    M::Event: Observe,
{
    runtime: &'a R,
    cell: &'a Arc<Cell<M>>,
    exec: &'a X,
    pending: Option<Pending>,
    /// The drive returned normally (else its future was dropped mid-way).
    finished: bool,
    /// A background drive never hands off again.
    background: bool,
}

impl<R: Runtime, M: Abandon + Send + 'static, X: Execute> Drop for Slot<'_, R, M, X>
where
    M::Event: Observe,
{
    fn drop(&mut self) {
        if !self.finished {
            self.cell.lock().abandon(self.runtime.now());
        }
        let pending = self.pending.take();
        // Abandoning may have queued a request (a release): finish it in the background too.
        let queued = !self.finished && self.cell.lock().poll_timeout().is_some();
        self.cell.unclaim();
        if self.background {
            return;
        }
        match pending {
            Some(pending) => deliver_late(self.runtime, self.cell, self.exec, pending),
            None if queued => finish_in_background(self.runtime, self.cell, self.exec),
            None => {}
        }
    }
}

/// The reply, if the store has already answered. A reply still pending has seen a no-op
/// waker; the next poll (in [`wait`]) registers the real one.
fn ready_now(reply: &mut Reply) -> Option<Result<StoreReply, BackendError>> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match reply.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(answer) => Some(answer),
        std::task::Poll::Pending => None,
    }
}

/// Drains the machine: observes and hands over its events, and takes its request and its
/// deadline. A request the store answers at once is answered here, under the same lock.
fn turn<R, M, X, P>(
    machine: &mut M,
    runtime: &R,
    exec: &X,
    purpose: &mut P,
) -> (Option<tenure_core::StoreRequest>, Option<Timestamp>, Option<P::Output>)
where
    R: Runtime,
    M: Machine,
    M::Event: Observe,
    X: Execute,
    P: Purpose<M>,
{
    loop {
        let mut output = None;
        while let Some(event) = machine.poll_event() {
            event.observe(machine.key());
            if let Some(out) = purpose.event(event) {
                output.get_or_insert(out);
            }
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

async fn wait<R: Runtime>(
    runtime: &R,
    pending: &mut Option<Pending>,
    timeout: Option<Timestamp>,
    wakeup: &mut Option<Wakeup>,
    give_up: Option<Timestamp>,
    changed: event_listener::EventListener,
) -> Woke {
    let reply = async {
        match pending {
            Some(p) => Woke::Reply(p.id, (&mut p.reply).await),
            None => future::pending().await,
        }
    };
    let timer = async {
        sleep_until(runtime, timeout).await;
        Woke::Timer
    };
    let woken = async {
        match wakeup {
            Some(w) => {
                w.await;
                Woke::Wakeup
            }
            None => future::pending().await,
        }
    };
    let give_up = async {
        sleep_until(runtime, give_up).await;
        Woke::GiveUp
    };
    let changed = async {
        changed.await;
        Woke::Changed
    };
    future::or(reply, future::or(timer, future::or(woken, future::or(give_up, changed)))).await
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

/// Delivers, in the background, the late answer of a store call nobody waits for any more (the
/// machine releases a grant it no longer wants), then finishes whatever that started — unless a
/// foreground drive is active, which takes it from there. Gives up after [`crate::HAND_OFF_BOUND`].
fn deliver_late<R, M, X>(runtime: &R, cell: &Arc<Cell<M>>, exec: &X, pending: Pending)
where
    R: Runtime,
    M: Abandon + Send + 'static,
    M::Event: Observe,
    X: Execute,
{
    let (rt, cell, exec) = (runtime.clone(), cell.clone(), exec.clone());
    let give_up_at = rt.now() + crate::HAND_OFF_BOUND;
    runtime.spawn(async move {
        let Pending { id, reply } = pending;
        let answer = future::or(async { Some(reply.await) }, async {
            sleep_until(&rt, Some(give_up_at)).await;
            None
        })
        .await;
        let Some(answer) = answer else { return };
        {
            let mut machine = cell.lock();
            let now = rt.now();
            machine.handle_reply(now, id, answer);
        }
        drive_quietly(&rt, &cell, &exec, give_up_at).await;
    });
}

/// Drives in the background what the machine has queued (a release handed over by a dropped
/// guard or an abandoned command), unless a foreground drive is active.
pub(crate) fn finish_in_background<R, M, X>(runtime: &R, cell: &Arc<Cell<M>>, exec: &X)
where
    R: Runtime,
    M: Abandon + Send + 'static,
    M::Event: Observe,
    X: Execute,
{
    let (rt, cell, exec) = (runtime.clone(), cell.clone(), exec.clone());
    let give_up_at = rt.now() + crate::HAND_OFF_BOUND;
    runtime.spawn(async move { drive_quietly(&rt, &cell, &exec, give_up_at).await });
}

/// Drives, with nobody waiting, what the machine has queued until it is idle or `give_up_at`.
async fn drive_quietly<R, M, X>(rt: &R, cell: &Arc<Cell<M>>, exec: &X, give_up_at: Timestamp)
where
    R: Runtime,
    M: Abandon + Send + 'static,
    M::Event: Observe,
    X: Execute,
{
    let _ = drive(rt, cell, exec, Quiet { give_up_at }, None, None::<NoStart<M>>).await;
}

/// Drives a machine nobody waits on until it is idle, or gives up.
pub(crate) struct Quiet {
    pub(crate) give_up_at: Timestamp,
}

impl<M: Machine> Purpose<M> for Quiet {
    type Output = ();

    fn event(&mut self, _: M::Event) -> Option<()> {
        None
    }

    fn refused(&mut self, _: Error) {}

    fn give_up_at(&self) -> Option<Timestamp> {
        Some(self.give_up_at)
    }
}
