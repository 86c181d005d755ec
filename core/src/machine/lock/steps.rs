//! A [`LockMachine`]'s steps: starting attempts and releases, expiry, fences and errors.

use std::time::Duration;

use super::{Access, Attempt, LockEvent, LockMachine, LockOp, LossReason, State};
use crate::error::{BackendError, BackendErrorKind, Error, WouldBlockReason};
use crate::ids::FencingToken;
use crate::machine::Flight;
use crate::time::Timestamp;

impl LockMachine {
    pub(super) fn begin(&mut self, now: Timestamp, attempt: Attempt) -> Result<(), Error> {
        match self.state {
            State::Idle => {
                self.wake_pending = false;
                self.poisoned = false;
                self.attempt(now, self.lease, attempt);
                Ok(())
            }
            // Like grelmicro's held marker: a holder that has not released (even one whose lease
            // ran out or whose release failed) must release or extend, not acquire again.
            State::Held { .. }
            | State::Extending { .. }
            | State::Stale { .. }
            | State::Acquiring { .. }
            | State::Waiting { .. } => Err(Error::Reentrant { name: self.name() }),
            State::Releasing { .. } | State::Cancelling { .. } | State::Downgrading { .. } => Err(self.busy()),
        }
    }

    pub(super) fn attempt(&mut self, now: Timestamp, lease: Duration, attempt: Attempt) {
        self.token_used = true;
        let op = match self.queue_wait {
            Some(wait) if !attempt.nowait => LockOp::Queue(lease, wait),
            _ if attempt.nowait => LockOp::Acquire(lease),
            _ => LockOp::Attempt(lease),
        };
        let flight = self.out.send(now, op, self.backend_timeout);
        self.state = State::Acquiring { flight, lease, attempt };
    }

    pub(super) fn start_release(&mut self, now: Timestamp, fence: Option<FencingToken>, quiet: bool) {
        let flight = self.out.send(now, LockOp::Release, self.backend_timeout);
        self.state = State::Releasing { flight, fence, quiet };
    }

    /// Sends `op` (a release, a withdrawal, or a writer's read-side release), quietly.
    pub(super) fn send_quiet(&mut self, now: Timestamp, op: LockOp) {
        let flight = self.out.send(now, op, self.backend_timeout);
        self.state = State::Releasing { flight, fence: None, quiet: true };
    }

    /// Withdraws a writer's intent, quietly.
    pub(super) fn start_withdraw(&mut self, now: Timestamp) {
        self.send_quiet(now, LockOp::Withdraw);
    }

    /// Whether `attempt` keeps a place in the store's queue (a queued lock's waiter) or line (a
    /// permit's) when the store refuses it.
    pub(super) fn places(&self, attempt: Attempt) -> bool {
        self.queue_wait.is_some() && !attempt.nowait && matches!(self.access, Access::Exclusive | Access::Permit(_))
    }

    /// Gives up on an acquire whose answer did not come by its deadline: the caller hears a
    /// timeout, and the answer, if it comes, is read as an orphan's.
    pub(super) fn orphan_at_deadline(&mut self, now: Timestamp, flight: Flight, placed: bool) {
        let timeout = Err(BackendError::timeout(self.backend_timeout));
        self.handle_reply(now, flight.op, timeout);
        self.orphan = Some((flight.op, self.access, placed));
    }

    /// A blocking acquire that ends without the lock gives up its place in the store's queue
    /// or line (and whatever the store handed it meanwhile) or its write intent; false if it
    /// kept none.
    pub(super) fn give_up_place(&mut self, now: Timestamp) -> bool {
        if self.queue_wait.is_some() || matches!(self.access, Access::Permit(_)) {
            self.start_release(now, None, true);
        } else if self.access == Access::Write {
            self.start_withdraw(now);
        } else {
            return false;
        }
        true
    }

    /// Reports the loss of a lease the holder counted on (`previous` is what it counted on).
    pub(super) fn lose(&mut self, fence: FencingToken, previous: &State) {
        if matches!(previous, State::Held { .. }) {
            self.lost(fence, LossReason::NotOwned);
        }
    }

    /// Tells of the loss of the lease `fence`, and keeps its first cause.
    pub(super) fn lost(&mut self, fence: FencingToken, reason: LossReason) {
        if self.loss.as_ref().is_none_or(|(lost, _)| *lost != fence) {
            self.loss = Some((fence, reason.clone()));
        }
        self.out.emit(LockEvent::Lost { fence, reason });
    }

    /// Why a single attempt was refused.
    pub(super) fn refusal(&self) -> WouldBlockReason {
        match self.access {
            Access::Exclusive => WouldBlockReason::LockHeld,
            Access::Read => WouldBlockReason::ReadRefused,
            Access::Write => WouldBlockReason::WriteRefused,
            Access::Permit(_) => WouldBlockReason::PermitsTaken,
        }
    }

    /// Reports a lease whose validity has run out.
    pub(super) fn check_expiry(&mut self, now: Timestamp) {
        if let State::Held { fence, valid_until } = self.state
            && now >= valid_until
        {
            self.state = State::Stale { fence };
            self.lost(fence, LossReason::Expired);
        }
        if let State::Extending { fence, valid_until: Some(valid_until), flight, lease } = self.state
            && now >= valid_until
        {
            // Stop counting on it now; the extend may still bring it back.
            self.state = State::Extending { fence, valid_until: None, flight, lease };
            self.lost(fence, LossReason::Expired);
        }
    }

    /// A fencing token lower than one this holder has already seen, or not above one another
    /// holder of the lock saw ([`LockMachine::remember_fence`]): the store lost its counter (a
    /// failover, a restore) and exclusion can no longer be proven.
    pub(super) fn regression(&self, fence: FencingToken) -> Option<BackendError> {
        let shared = self.access == Access::Read;
        let below_own = self.last_fence.filter(|&last| fence < last);
        let not_above = self.floor.filter(|&floor| fence < floor || (fence == floor && !shared));
        let seen = below_own.or(not_above)?;
        let message = if fence == seen {
            format!("the store answered fencing token {fence} again for the same lock (it was granted before)")
        } else {
            format!("the store answered fencing token {fence} after {seen} for the same lock")
        };
        Some(BackendError::new(BackendErrorKind::FenceRegression, message))
    }

    /// Where the validity of a grant starts: when its request was sent.
    pub(super) fn validity_start(&self, now: Timestamp, flight: Flight) -> Timestamp {
        if bug!(self, VALIDITY_FROM_REPLY) { now } else { flight.sent_at }
    }

    pub(super) fn note_fence(&mut self, fence: FencingToken) {
        self.last_fence = Some(self.last_fence.map_or(fence, |last| last.max(fence)));
    }

    pub(super) fn name(&self) -> String {
        self.key.name_str().to_owned()
    }

    pub(super) fn not_owned(&self) -> Error {
        Error::NotOwned { name: self.name() }
    }

    pub(super) fn busy(&self) -> Error {
        let operation = match self.state {
            State::Acquiring { .. } | State::Waiting { .. } | State::Cancelling { .. } => "acquire",
            State::Idle if self.orphan.is_some() => "acquire",
            State::Extending { .. } => "extend",
            State::Downgrading { .. } => "downgrade",
            _ => "release",
        };
        Error::Busy { name: self.name(), operation }
    }
}
