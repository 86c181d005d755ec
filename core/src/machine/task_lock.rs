//! [`TaskLockMachine`]: at most one run of a scheduled task per min-hold window (spec §3.4, with
//! grelmicro 0.44's `extend` and remembered hold).

use std::time::Duration;

use super::lock::unexpected;
use super::{Flight, Outbox, local_validity};
use crate::config::TaskLockConfig;
use crate::error::{BackendError, Error, WouldBlockReason};
use crate::ids::{FencingToken, Key, OpId, Token};
use crate::machine::LossReason;
use crate::store::{HolderDetails, StoreOp, StoreReply, StoreRequest};
use crate::time::Timestamp;

/// What a [`TaskLockMachine`] tells its driver.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum TaskLockEvent {
    /// `enter` took the lock: the task may run.
    Entered {
        /// The fencing token of this run.
        fence: FencingToken,
        /// The lease may be counted on until this instant (exclusive).
        valid_until: Timestamp,
    },
    /// `extend` renewed the lease.
    Extended {
        /// The fencing token now held.
        fence: FencingToken,
        /// The one before.
        previous: FencingToken,
        /// The new end of validity.
        valid_until: Timestamp,
    },
    /// `exit` finished: released at once, or kept until `held_until` to honour the min hold.
    Exited {
        /// The fencing token of the run.
        fence: FencingToken,
        /// When the hold ends (local clock); `None` when released at once.
        held_until: Option<Timestamp>,
    },
    /// The current command failed.
    Failed(Error),
    /// The lease ran out (or was found taken) while the task was still running.
    Lost {
        /// The fencing token that was lost.
        fence: FencingToken,
        /// Why.
        reason: LossReason,
    },
}

/// What a [`TaskLockMachine`] is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskLockPhase {
    /// Not entered.
    Idle,
    /// The enter attempt is in flight.
    Entering,
    /// Entered: the task runs.
    Held,
    /// An extend is in flight.
    Extending,
    /// The exit's release or shortening is in flight.
    Exiting,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Run {
    token: Token,
    fence: FencingToken,
    /// When the grant arrived: the min hold counts from here, so the next run elsewhere starts at
    /// least `min_hold_duration` after this one started.
    acquired_at: Timestamp,
    valid_until: Timestamp,
    lost: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    Idle,
    Entering {
        flight: Flight,
        token: Token,
        lease: Duration,
    },
    Held(Run),
    Extending {
        flight: Flight,
        lease: Duration,
        run: Run,
    },
    Exiting {
        flight: Flight,
        token: Token,
        fence: FencingToken,
        held_until: Option<Timestamp>,
    },
    /// Releasing, without events, a late grant of an enter that had been abandoned.
    Abandoning {
        flight: Flight,
    },
}

/// One `TaskLock` instance: enter takes the lock without waiting, exit keeps it until
/// `min_hold_duration` after the acquisition (shortening the lease to the remainder) or releases
/// it when that much time has passed (spec §3.4: `elapsed >= min_hold` releases).
///
/// Re-entrancy is per instance: `enter` while entered is [`Error::Reentrant`]. Each `enter` gets a
/// fresh token from the driver (the holder's token plus a new nonce), so the same instance cannot
/// run the task again while its own hold lasts; once a shortened hold has ended on the local clock,
/// the next `enter` reuses that hold's token, so a store that rounded the hold up treats the enter
/// as a renewal of its own lease (grelmicro 0.44).
///
/// See the [module docs](crate::machine) for the drain contract.
#[derive(Debug)]
pub struct TaskLockMachine {
    key: Key,
    min_hold: Duration,
    lease: Duration,
    backend_timeout: Duration,
    state: State,
    /// The token of the last shortened hold and when it ends locally.
    held_over: Option<(Token, Timestamp)>,
    /// An enter abandoned at its deadline, and its token: a late grant is released at once, so
    /// the task is not blocked for a whole lease by a run that never started.
    orphan: Option<(OpId, Token)>,
    /// The last run's lease lost, and why (as its [`TaskLockEvent::Lost`] said).
    loss: Option<(FencingToken, LossReason)>,
    /// Who runs the task, sent with every enter ([`TaskLockMachine::set_details`]).
    details: Option<HolderDetails>,
    out: Outbox<TaskLockEvent>,
    #[cfg(feature = "bug-injection")]
    bugs: crate::bugs::Bugs,
}

impl TaskLockMachine {
    /// A task lock on `key` (`tasklock:<name>`) timed by `config`.
    pub fn new(key: Key, config: &TaskLockConfig) -> Self {
        Self {
            key,
            min_hold: config.min_hold_duration(),
            lease: config.lease_duration(),
            backend_timeout: config.backend_timeout(),
            state: State::Idle,
            held_over: None,
            orphan: None,
            loss: None,
            details: None,
            out: Outbox::new(),
            #[cfg(feature = "bug-injection")]
            bugs: crate::bugs::Bugs::NONE,
        }
    }

    /// Sends `details` (who runs the task) with every enter, for the store to keep beside the
    /// grant ([`crate::store::HolderDetails`]).
    pub fn set_details(&mut self, details: Option<HolderDetails>) {
        self.details = details;
    }

    /// The last run's lease this machine lost and why, as its [`TaskLockEvent::Lost`] said. Read
    /// by whoever wakes on the loss before the event reaches it.
    pub fn loss(&self) -> Option<(FencingToken, LossReason)> {
        self.loss.clone()
    }

    /// Switches on deliberate defects, for the simulator to catch.
    #[cfg(feature = "bug-injection")]
    pub fn inject(&mut self, bugs: crate::bugs::Bugs) {
        self.bugs = bugs;
    }

    // ---- getters -------------------------------------------------------------------------

    /// The task lock key.
    pub fn key(&self) -> &Key {
        &self.key
    }

    /// What the machine is doing.
    pub fn phase(&self) -> TaskLockPhase {
        match self.state {
            State::Idle => TaskLockPhase::Idle,
            State::Entering { .. } => TaskLockPhase::Entering,
            State::Held(_) => TaskLockPhase::Held,
            State::Extending { .. } => TaskLockPhase::Extending,
            State::Exiting { .. } | State::Abandoning { .. } => TaskLockPhase::Exiting,
        }
    }

    /// Whether no command is under way: a new command may start.
    pub fn is_settled(&self) -> bool {
        matches!(self.state, State::Idle | State::Held(_)) && self.out.is_empty()
    }

    /// Whether the lease of the running task may be counted on at `now`.
    pub fn is_held(&self, now: Timestamp) -> bool {
        self.run().is_some_and(|run| now < run.valid_until)
    }

    /// The token of the running task.
    pub fn token(&self) -> Option<&Token> {
        self.run().map(|run| &run.token)
    }

    /// The fencing token of the running task.
    pub fn fence(&self) -> Option<FencingToken> {
        self.run().map(|run| run.fence)
    }

    /// The end of validity of the running task's lease, while it may be counted on.
    pub fn valid_until(&self) -> Option<Timestamp> {
        self.run().filter(|run| !run.lost).map(|run| run.valid_until)
    }

    /// When the running task's lease was granted.
    pub fn acquired_at(&self) -> Option<Timestamp> {
        self.run().map(|run| run.acquired_at)
    }

    fn run(&self) -> Option<&Run> {
        match &self.state {
            State::Held(run) | State::Extending { run, .. } => Some(run),
            _ => None,
        }
    }

    // ---- inputs --------------------------------------------------------------------------

    /// The store's answer to operation `id`.
    pub fn handle_reply(&mut self, now: Timestamp, id: OpId, reply: Result<StoreReply, BackendError>) {
        let now = self.out.observe(now);
        // A lease that ran out before this reply is reported lost before the reply is read.
        self.check_expiry(now);
        if self.orphan.as_ref().is_some_and(|(op, _)| *op == id) {
            let granted = matches!(reply, Ok(StoreReply::Fence(Some(_))));
            if let Some((_, token)) = self.orphan.take().filter(|_| granted && self.state == State::Idle) {
                let op = StoreOp::LockRelease { key: self.key.clone(), token };
                self.state = State::Abandoning { flight: self.out.send(now, op, self.backend_timeout) };
            }
            return;
        }
        match std::mem::replace(&mut self.state, State::Idle) {
            State::Entering { flight, token, lease } if flight.op == id => {
                self.on_enter_reply(now, flight, token, lease, reply);
            }
            State::Extending { flight, lease, run } if flight.op == id => {
                self.on_extend_reply(now, flight, lease, run, reply);
            }
            State::Exiting { flight, token, fence, held_until } if flight.op == id => {
                self.on_exit_reply(token, fence, held_until, reply);
            }
            State::Abandoning { flight } if flight.op == id => {}
            // Unknown, stale or duplicated: the operation is no longer awaited.
            other => self.state = other,
        }
        self.check_expiry(now);
    }

    /// Timers: operation deadlines and the end of validity.
    pub fn handle_timeout(&mut self, now: Timestamp) {
        let now = self.out.observe(now);
        let abandoned = match &self.state {
            State::Entering { token, .. } => Some(token.clone()),
            _ => None,
        };
        if let Some(flight) = self.flight().filter(|f| now >= f.deadline) {
            self.handle_reply(now, flight.op, Err(BackendError::timeout(self.backend_timeout)));
            self.orphan = abandoned.map(|token| (flight.op, token));
        }
        self.check_expiry(now);
    }

    // ---- commands ------------------------------------------------------------------------

    /// Tries once to take the lock for `lease_duration` under `fresh` (a new token from the
    /// driver); refused → [`Error::WouldBlock`].
    pub fn enter(&mut self, now: Timestamp, fresh: Token) -> Result<(), Error> {
        let now = self.out.observe(now);
        match self.state {
            State::Idle => {}
            State::Exiting { .. } | State::Abandoning { .. } => return Err(self.busy("exit")),
            _ => return Err(Error::Reentrant { name: self.name() }),
        }
        let token = match self.held_over.take() {
            Some((token, until)) if now >= until => token,
            kept => {
                self.held_over = kept;
                fresh
            }
        };
        let lease = self.lease;
        let op =
            StoreOp::LockAcquire { key: self.key.clone(), token: token.clone(), lease, details: self.details.clone() };
        let flight = self.out.send(now, op, self.backend_timeout);
        self.state = State::Entering { flight, token, lease };
        Ok(())
    }

    /// Renews the running task's lease for another `lease_duration` (the reference's `refresh`);
    /// the min hold still counts from the original acquisition.
    pub fn extend(&mut self, now: Timestamp) -> Result<(), Error> {
        let now = self.out.observe(now);
        self.check_expiry(now);
        let run = match &self.state {
            State::Held(run) => run.clone(),
            State::Idle | State::Entering { .. } => return Err(Error::NotOwned { name: self.name() }),
            State::Extending { .. } => return Err(self.busy("extend")),
            State::Exiting { .. } | State::Abandoning { .. } => return Err(self.busy("exit")),
        };
        let lease = self.lease;
        let op = StoreOp::LockAcquire { key: self.key.clone(), token: run.token.clone(), lease, details: None };
        let flight = self.out.send(now, op, self.backend_timeout);
        // Once applied, the lease ends `lease` after that: maybe sooner than before (set_config).
        let mut run = run;
        run.valid_until = run.valid_until.min(now + local_validity(lease));
        self.state = State::Extending { flight, lease, run };
        Ok(())
    }

    /// Ends the run: releases if `min_hold_duration` has passed since the acquisition, else
    /// shortens the lease to what remains of it. The instance is free for another `enter` as soon
    /// as this is called, whatever the store answers.
    pub fn exit(&mut self, now: Timestamp) -> Result<(), Error> {
        let now = self.out.observe(now);
        self.check_expiry(now);
        let run = match &self.state {
            State::Held(run) => run.clone(),
            State::Idle | State::Entering { .. } => return Err(Error::NotOwned { name: self.name() }),
            State::Extending { .. } => return Err(self.busy("extend")),
            State::Exiting { .. } | State::Abandoning { .. } => return Err(self.busy("exit")),
        };
        let elapsed = now.saturating_duration_since(run.acquired_at);
        let (op, held_until) = if elapsed >= self.min_hold {
            (StoreOp::LockRelease { key: self.key.clone(), token: run.token.clone() }, None)
        } else {
            let remaining = self.min_hold - elapsed;
            let op = StoreOp::LockAcquire {
                key: self.key.clone(),
                token: run.token.clone(),
                lease: remaining,
                details: None,
            };
            (op, Some(run.acquired_at + self.min_hold))
        };
        let flight = self.out.send(now, op, self.backend_timeout);
        self.state = State::Exiting { flight, token: run.token, fence: run.fence, held_until };
        Ok(())
    }

    /// Abandons the current command without an event. An enter in flight is forgotten, and its
    /// grant, should it land, released at once; an extend in flight is forgotten (the lease held
    /// stands); an exit goes on.
    pub fn cancel(&mut self, now: Timestamp) {
        let now = self.out.observe(now);
        self.check_expiry(now);
        match std::mem::replace(&mut self.state, State::Idle) {
            State::Entering { flight, token, .. } => self.orphan = Some((flight.op, token)),
            State::Extending { run, .. } => self.state = State::Held(run),
            other => self.state = other,
        }
    }

    /// Uses `config`'s durations from the next command on.
    pub fn set_config(&mut self, config: &TaskLockConfig) {
        self.min_hold = config.min_hold_duration();
        self.lease = config.lease_duration();
        self.backend_timeout = config.backend_timeout();
    }

    // ---- outputs -------------------------------------------------------------------------

    /// The next store request to run.
    #[must_use]
    pub fn poll_effect(&mut self) -> Option<StoreRequest> {
        self.out.poll_effect_with(|op| op)
    }

    /// The next event.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<TaskLockEvent> {
        self.out.poll_event()
    }

    /// When `handle_timeout` should next be called.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        let validity = self.run().filter(|run| !run.lost).map(|run| run.valid_until);
        super::earliest([validity, self.flight().map(|f| f.deadline)])
    }

    fn flight(&self) -> Option<Flight> {
        match &self.state {
            State::Entering { flight, .. }
            | State::Extending { flight, .. }
            | State::Exiting { flight, .. }
            | State::Abandoning { flight } => Some(*flight),
            State::Idle | State::Held(_) => None,
        }
    }

    // ---- internals -----------------------------------------------------------------------

    fn on_enter_reply(
        &mut self,
        now: Timestamp,
        flight: Flight,
        token: Token,
        lease: Duration,
        reply: Result<StoreReply, BackendError>,
    ) {
        let error = match reply {
            Ok(StoreReply::Fence(Some(fence))) => {
                self.held_over = None;
                let valid_until = self.validity_start(now, flight) + local_validity(lease);
                if now < valid_until {
                    self.state = State::Held(Run { token, fence, acquired_at: now, valid_until, lost: false });
                    self.out.emit(TaskLockEvent::Entered { fence, valid_until });
                    return;
                }
                // Too late to run the task under it: release the grant, the enter fails.
                let op = StoreOp::LockRelease { key: self.key.clone(), token };
                self.state = State::Abandoning { flight: self.out.send(now, op, self.backend_timeout) };
                Error::Acquire { name: self.name(), cause: BackendError::late_grant() }
            }
            // (a revocation's placeholder holds it as any holder does)
            Ok(StoreReply::Fence(None) | StoreReply::Revoked { .. }) => {
                Error::WouldBlock { name: self.name(), reason: WouldBlockReason::TaskLockHeld }
            }
            Ok(other) => Error::Acquire { name: self.name(), cause: unexpected("enter", &other) },
            Err(cause) => Error::Acquire { name: self.name(), cause },
        };
        self.out.emit(TaskLockEvent::Failed(error));
    }

    fn on_extend_reply(
        &mut self,
        now: Timestamp,
        flight: Flight,
        lease: Duration,
        mut run: Run,
        reply: Result<StoreReply, BackendError>,
    ) {
        let event = match reply {
            Ok(StoreReply::Fence(Some(fence))) => {
                let previous = run.fence;
                let valid_until = self.validity_start(now, flight) + local_validity(lease);
                run.fence = fence;
                if now < valid_until {
                    run.valid_until = valid_until;
                    run.lost = false;
                    TaskLockEvent::Extended { fence, previous, valid_until }
                } else {
                    // Too late to count on; the old lease, which ended no later, was reported lost.
                    TaskLockEvent::Failed(Error::Extend { name: self.name(), cause: BackendError::late_grant() })
                }
            }
            // An operator revoked this very run's lease: lost, told why (even past its validity).
            Ok(StoreReply::Revoked { fence, reason }) if fence == run.fence => {
                let reason = LossReason::Revoked(reason);
                self.loss = Some((run.fence, reason.clone()));
                self.out.emit(TaskLockEvent::Lost { fence: run.fence, reason });
                run.valid_until = run.valid_until.min(now);
                run.lost = true;
                TaskLockEvent::Failed(Error::NotOwned { name: self.name() })
            }
            Ok(StoreReply::Fence(None) | StoreReply::Revoked { .. }) => {
                // Still entered (exit must run), but the lease is gone.
                if !run.lost && now < run.valid_until {
                    self.loss = Some((run.fence, LossReason::NotOwned));
                    self.out.emit(TaskLockEvent::Lost { fence: run.fence, reason: LossReason::NotOwned });
                }
                run.valid_until = run.valid_until.min(now);
                run.lost = true;
                TaskLockEvent::Failed(Error::NotOwned { name: self.name() })
            }
            Ok(other) => {
                TaskLockEvent::Failed(Error::Extend { name: self.name(), cause: unexpected("extend", &other) })
            }
            Err(cause) => TaskLockEvent::Failed(Error::Extend { name: self.name(), cause }),
        };
        self.state = State::Held(run);
        self.out.emit(event);
    }

    fn on_exit_reply(
        &mut self,
        token: Token,
        fence: FencingToken,
        held_until: Option<Timestamp>,
        reply: Result<StoreReply, BackendError>,
    ) {
        let event = match (reply, held_until) {
            (Ok(StoreReply::Flag(true)), None) => TaskLockEvent::Exited { fence, held_until: None },
            (Ok(StoreReply::Fence(Some(_))), Some(until)) => {
                self.held_over = Some((token, until));
                TaskLockEvent::Exited { fence, held_until: Some(until) }
            }
            (Ok(StoreReply::Flag(false) | StoreReply::Fence(None) | StoreReply::Revoked { .. }), _) => {
                TaskLockEvent::Failed(Error::NotOwned { name: self.name() })
            }
            // grelmicro 0.44: a failed release or shortening on exit is a release error.
            (Ok(other), _) => {
                TaskLockEvent::Failed(Error::Release { name: self.name(), cause: unexpected("exit", &other) })
            }
            (Err(cause), _) => TaskLockEvent::Failed(Error::Release { name: self.name(), cause }),
        };
        self.out.emit(event);
    }

    /// Where the validity of a grant starts: when its request was sent.
    fn validity_start(&self, now: Timestamp, flight: Flight) -> Timestamp {
        if bug!(self, VALIDITY_FROM_REPLY) { now } else { flight.sent_at }
    }

    fn check_expiry(&mut self, now: Timestamp) {
        let run = match &mut self.state {
            State::Held(run) | State::Extending { run, .. } => run,
            _ => return,
        };
        if !run.lost && now >= run.valid_until {
            run.lost = true;
            let fence = run.fence;
            self.loss = Some((fence, LossReason::Expired));
            self.out.emit(TaskLockEvent::Lost { fence, reason: LossReason::Expired });
        }
    }

    fn name(&self) -> String {
        self.key.name_str().to_owned()
    }

    fn busy(&self, operation: &'static str) -> Error {
        Error::Busy { name: self.name(), operation }
    }
}
