//! The state machines: [`LockMachine`], [`TaskLockMachine`], [`ElectionMachine`] and the one-shot
//! [`Query`].
//!
//! # Driving a machine
//!
//! Every input carries `now`, a monotonic [`Timestamp`] that never goes backwards for one machine
//! (asserted in debug builds; in release builds an earlier `now` is treated as the latest seen).
//! A driver shared by threads reads the clock while it holds the machine, so that inputs arrive
//! in clock order. After **any** input
//! (a command, `handle_reply`, `handle_timeout`):
//!
//! 1. drain `poll_effect` until `None`, run each [`StoreRequest`] against the store and feed the
//!    answer back with `handle_reply(now, request.id, answer)` — abandon it at `request.deadline`;
//! 2. drain `poll_event` until `None`;
//! 3. ask `poll_timeout` and call `handle_timeout(now)` once that instant has passed.
//!
//! Replies for unknown, stale or already answered operation ids are ignored, as are early
//! timeouts: nothing a driver, a store or a network does in any order makes a machine panic.

mod election;
mod keep_alive;
mod lock;
mod query;
mod task_lock;

use std::time::Duration;

pub use election::{ElectionEvent, ElectionMachine, LeadershipLoss};
pub use keep_alive::{KeepAlive, KeepAliveStep, MAX_RETRY_PAUSE};
pub use lock::{Access, LockEvent, LockMachine, LockPhase, LossReason};
pub use query::{Query, QueryKind};
pub use task_lock::{TaskLockEvent, TaskLockMachine, TaskLockPhase};

use crate::error::BackendError;
use crate::ids::OpId;
use crate::store::{StoreOp, StoreReply, StoreRequest};
use crate::time::Timestamp;

/// What every machine shares, so one driving loop (a driver's, the simulator's) serves them all.
/// Each method is the machine's inherent method of the same name.
pub trait Machine {
    /// The machine's application events.
    type Event;

    /// The key the machine works on.
    fn key(&self) -> &crate::ids::Key;

    /// Whether no command is under way: nothing queued, nothing in flight but possibly the late
    /// answer of an abandoned request. A new command may start.
    fn is_settled(&self) -> bool;

    /// The store's answer to operation `id`.
    fn handle_reply(&mut self, now: Timestamp, id: OpId, reply: Result<StoreReply, BackendError>);
    /// Timers.
    fn handle_timeout(&mut self, now: Timestamp);
    /// The next store request to run.
    fn poll_effect(&mut self) -> Option<StoreRequest>;
    /// The next event.
    fn poll_event(&mut self) -> Option<Self::Event>;
    /// When `handle_timeout` should next be called.
    fn poll_timeout(&self) -> Option<Timestamp>;
}

macro_rules! impl_machine {
    ($machine:ty, $event:ty) => {
        impl Machine for $machine {
            type Event = $event;

            fn key(&self) -> &crate::ids::Key {
                <$machine>::key(self)
            }

            fn is_settled(&self) -> bool {
                <$machine>::is_settled(self)
            }

            fn handle_reply(&mut self, now: Timestamp, id: OpId, reply: Result<StoreReply, BackendError>) {
                <$machine>::handle_reply(self, now, id, reply)
            }
            fn handle_timeout(&mut self, now: Timestamp) {
                <$machine>::handle_timeout(self, now)
            }
            fn poll_effect(&mut self) -> Option<StoreRequest> {
                <$machine>::poll_effect(self)
            }
            fn poll_event(&mut self) -> Option<$event> {
                <$machine>::poll_event(self)
            }
            fn poll_timeout(&self) -> Option<Timestamp> {
                <$machine>::poll_timeout(self)
            }
        }
    };
}

impl_machine!(LockMachine, LockEvent);
impl_machine!(TaskLockMachine, TaskLockEvent);
impl_machine!(ElectionMachine, ElectionEvent);

/// How much of a lease a holder may count on: the lease less 1 %, an allowance for the holder's
/// clock running slower than the store's (Redlock's drift factor). Validity is counted from when
/// the request was sent, which is never later than when the store started the lease.
pub fn local_validity(lease: Duration) -> Duration {
    lease - lease / 100
}

/// An operation in flight: its id, when it was sent, and when the machine stops waiting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Flight {
    pub(crate) op: OpId,
    pub(crate) sent_at: Timestamp,
    pub(crate) deadline: Timestamp,
}

/// The outputs of a machine: at most one store request waiting to be taken (a machine has at
/// most one operation in flight), events, and the clock check.
///
/// One event per input is the rule and lives inline; the rare second one (a loss reported with
/// a failure) goes to a queue that is freed once drained, so an idle machine keeps no heap.
///
/// The request waiting to be taken is kept as `P`, by default the whole [`StoreOp`]; a machine
/// whose operations all carry its own key and token keeps a compact `P` and builds the
/// [`StoreOp`] when the request is taken.
#[derive(Debug)]
pub(crate) struct Outbox<E, P = StoreOp> {
    next_op: u64,
    effect: Option<(OpId, Timestamp, P)>,
    event: Option<E>,
    more_events: Vec<E>,
    last_now: Timestamp,
}

impl<E, P> Outbox<E, P> {
    pub(crate) fn new() -> Self {
        Self { next_op: 0, effect: None, event: None, more_events: Vec::new(), last_now: Timestamp::ZERO }
    }

    /// The `now` to use for an input: never earlier than one already seen.
    pub(crate) fn observe(&mut self, now: Timestamp) -> Timestamp {
        debug_assert!(now >= self.last_now, "time went backwards: {now:?} after {:?}", self.last_now);
        self.last_now = self.last_now.max(now);
        self.last_now
    }

    /// Queues `op`, bounded by `timeout`, and returns its flight.
    pub(crate) fn send(&mut self, now: Timestamp, op: P, timeout: Duration) -> Flight {
        self.next_op += 1;
        let flight = Flight { op: OpId::new(self.next_op), sent_at: now, deadline: now + timeout };
        // A request not taken before the next one is abandoned anyway: its flight is over.
        self.effect = Some((flight.op, flight.deadline, op));
        flight
    }

    pub(crate) fn emit(&mut self, event: E) {
        if self.event.is_none() {
            self.event = Some(event);
        } else {
            self.more_events.push(event);
        }
    }

    /// Takes the request, building its operation with `build`.
    pub(crate) fn poll_effect_with(&mut self, build: impl FnOnce(P) -> StoreOp) -> Option<StoreRequest> {
        let (id, deadline, op) = self.effect.take()?;
        Some(StoreRequest { id, op: build(op), deadline })
    }

    /// Nothing waits to be taken.
    pub(crate) fn is_empty(&self) -> bool {
        self.effect.is_none() && self.event.is_none()
    }

    pub(crate) fn poll_event(&mut self) -> Option<E> {
        let event = self.event.take()?;
        if !self.more_events.is_empty() {
            self.event = Some(self.more_events.remove(0));
            if self.more_events.is_empty() {
                self.more_events = Vec::new();
            }
        }
        Some(event)
    }
}

/// The earliest of some optional instants.
pub(crate) fn earliest(instants: impl IntoIterator<Item = Option<Timestamp>>) -> Option<Timestamp> {
    instants.into_iter().flatten().min()
}
