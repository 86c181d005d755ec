//! [`LockMachine`]: one holder's life with one lock (spec §3.1–3.3, DESIGN §4.1, §4.3, §4.6).

use std::time::Duration;

use rand_core::Rng;

use super::{Flight, Outbox, earliest, local_validity};
use crate::config::LockConfig;
use crate::error::{BackendError, BackendErrorKind, Error, WouldBlockReason};
use crate::ids::{FencingToken, Key, LockHandle, OpId, Token};
use crate::rng::{SplitMix64, jitter, unit_interval};
use crate::store::{StoreOp, StoreReply};
use crate::time::Timestamp;

/// What a [`LockMachine`] tells its driver.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum LockEvent {
    /// `acquire` / `acquire_nowait` succeeded.
    Acquired {
        /// The fencing token of this acquisition.
        fence: FencingToken,
        /// The holder may count on the lease until this instant (exclusive).
        valid_until: Timestamp,
    },
    /// `extend` succeeded. `fence > previous` means the lease had lapsed and the store granted a
    /// new one: others may have held the lock in between.
    Extended {
        /// The fencing token now held.
        fence: FencingToken,
        /// The fencing token before the extend.
        previous: FencingToken,
        /// The new end of validity.
        valid_until: Timestamp,
    },
    /// `release` succeeded.
    Released {
        /// The fencing token of the lease released, if this holder knew it held one.
        fence: Option<FencingToken>,
    },
    /// The current command failed.
    Failed(Error),
    /// A lease the holder believed valid is no longer: it ran out locally, or an extend found
    /// another holder.
    Lost {
        /// The fencing token that was lost.
        fence: FencingToken,
        /// Why.
        reason: LossReason,
    },
}

/// Why a held lease was lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LossReason {
    /// Its validity ran out before an extend confirmed it.
    Expired,
    /// The store answered an extend with "not yours".
    NotOwned,
}

/// What a [`LockMachine`] is doing, for drivers and tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockPhase {
    /// Holds nothing and asks nothing.
    Idle,
    /// An acquire attempt is in flight.
    Acquiring,
    /// Waiting before the next attempt of a blocking acquire.
    Waiting,
    /// Holds a lease it believes valid.
    Held,
    /// An extend is in flight (the lease stays valid until its old end).
    Extending,
    /// Had a lease and no longer counts on it (ran out, or a release failed); may extend or
    /// release it again.
    Stale,
    /// A release is in flight.
    Releasing,
    /// A cancelled acquire is in flight; a grant will be released at once.
    Cancelling,
}

/// A request of this holder, with its key and token left out until it is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LockOp {
    Acquire(Duration),
    /// An attempt that keeps a place in the store's queue for the given wait.
    Queue(Duration, Duration),
    Release,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Attempt {
    /// When a blocking acquire gives up; `None` waits forever.
    deadline: Option<Timestamp>,
    /// The timeout the caller gave, for the error.
    timeout: Option<Duration>,
    nowait: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Idle,
    Acquiring {
        flight: Flight,
        lease: Duration,
        attempt: Attempt,
    },
    Waiting {
        retry_at: Timestamp,
        lease: Duration,
        attempt: Attempt,
    },
    Held {
        fence: FencingToken,
        valid_until: Timestamp,
    },
    /// `valid_until` is `None` when the holder no longer counts on the lease while it waits.
    Extending {
        flight: Flight,
        lease: Duration,
        fence: FencingToken,
        valid_until: Option<Timestamp>,
    },
    Stale {
        fence: FencingToken,
    },
    Releasing {
        flight: Flight,
        fence: Option<FencingToken>,
        quiet: bool,
    },
    Cancelling {
        flight: Flight,
    },
}

/// One holder (one token) of one lock, from acquire to release.
///
/// A grant is counted valid from the instant the request was **sent** (less a 1 % drift
/// allowance, [`local_validity`]), so a holder never believes in a lease longer than the store
/// keeps it. When that validity runs out the machine emits [`LockEvent::Lost`] at once.
///
/// Commands refuse at once (with the error) what needs no store call: a nested acquire
/// ([`Error::Reentrant`]), extending a lease never held ([`Error::NotOwned`]), or a command while
/// another is in flight ([`Error::Busy`]). Everything else completes with exactly one
/// `Acquired`, `Extended`, `Released` or `Failed` event.
///
/// See the [module docs](crate::machine) for the drain contract.
#[derive(Debug)]
pub struct LockMachine {
    key: Key,
    token: Token,
    lease: Duration,
    retry_interval: Duration,
    retry_jitter: f64,
    backend_timeout: Duration,
    state: State,
    /// The highest fencing token this holder has seen; a store answering lower is refused.
    last_fence: Option<FencingToken>,
    /// An acquire abandoned at its deadline: if the store applied it after all, its late grant
    /// is released instead of blocking others for a whole lease.
    orphan: Option<OpId>,
    /// A push wake-up arrived while an attempt was in flight: if it is refused, retry at once
    /// (the release may have come just after the store refused it).
    wake_pending: bool,
    /// The token has been sent in an acquire: a new acquisition should take a new one.
    token_used: bool,
    /// Attempts keep a place in the store's queue for this long ([`LockMachine::set_queued`]).
    queue_wait: Option<Duration>,
    /// When the last attempt the store answered "queued" was sent: a lease handed over by the
    /// store ([`LockMachine::handle_grant`]) counts from there.
    queued_at: Option<Timestamp>,
    jitter: SplitMix64,
    out: Outbox<LockEvent, LockOp>,
    #[cfg(feature = "bug-injection")]
    bugs: crate::bugs::Bugs,
}

impl LockMachine {
    /// A holder of the lock `key` under `token`, timed by `config`; `rng` seeds its jitter.
    pub fn new<R: Rng + ?Sized>(key: Key, token: Token, config: &LockConfig, rng: &mut R) -> Self {
        Self {
            key,
            token,
            lease: config.lease_duration(),
            retry_interval: config.retry_interval(),
            retry_jitter: config.retry_jitter(),
            backend_timeout: config.backend_timeout(),
            state: State::Idle,
            last_fence: None,
            orphan: None,
            wake_pending: false,
            token_used: false,
            queue_wait: None,
            queued_at: None,
            jitter: SplitMix64::from_rng(rng),
            out: Outbox::new(),
            #[cfg(feature = "bug-injection")]
            bugs: crate::bugs::Bugs::NONE,
        }
    }

    /// Switches on deliberate defects, for the simulator to catch.
    #[cfg(feature = "bug-injection")]
    pub fn inject(&mut self, bugs: crate::bugs::Bugs) {
        self.bugs = bugs;
    }

    // ---- getters -------------------------------------------------------------------------

    /// The lock key (`lock:<name>`).
    pub fn key(&self) -> &Key {
        &self.key
    }

    /// The holder's ownership token.
    pub fn token(&self) -> &Token {
        &self.token
    }

    /// What the machine is doing.
    pub fn phase(&self) -> LockPhase {
        match self.state {
            State::Idle => LockPhase::Idle,
            State::Acquiring { .. } => LockPhase::Acquiring,
            State::Waiting { .. } => LockPhase::Waiting,
            State::Held { .. } => LockPhase::Held,
            State::Extending { .. } => LockPhase::Extending,
            State::Stale { .. } => LockPhase::Stale,
            State::Releasing { .. } => LockPhase::Releasing,
            State::Cancelling { .. } => LockPhase::Cancelling,
        }
    }

    /// Whether no command is under way (nothing queued or in flight, but possibly the late answer
    /// of an abandoned acquire): a new command may start.
    pub fn is_settled(&self) -> bool {
        matches!(self.state, State::Idle | State::Held { .. } | State::Stale { .. }) && self.out.is_empty()
    }

    /// Whether the machine holds nothing, asks nothing and waits for nothing (not even a late
    /// answer to an abandoned request): it may serve a new holder, under a new token
    /// ([`LockMachine::set_token`]).
    pub fn is_quiescent(&self) -> bool {
        self.state == State::Idle && self.orphan.is_none() && self.out.is_empty()
    }

    /// Gives a quiescent machine a new ownership token, for a new acquisition.
    ///
    /// Reuse a machine only this way. Under its old token, a request sent earlier may still
    /// reach the store — a release that timed out, a retried or duplicated one — and would
    /// free the new lease while the holder believes in it (found by the simulator, tests/sim).
    /// grelmicro reuses a task's token across its acquisitions and is exposed to this.
    pub fn set_token(&mut self, token: Token) -> Result<(), Error> {
        if !self.is_quiescent() {
            return Err(self.busy());
        }
        self.token = token;
        self.token_used = false;
        Ok(())
    }

    /// Whether the token has never been sent in an acquire: a new acquisition may use it
    /// without [`LockMachine::set_token`].
    pub fn token_is_fresh(&self) -> bool {
        !self.token_used
    }

    /// Whether the holder may act as the lock's owner at `now`.
    pub fn is_held(&self, now: Timestamp) -> bool {
        self.valid_until().is_some_and(|until| now < until)
    }

    /// The end of validity of the lease held, if one is.
    pub fn valid_until(&self) -> Option<Timestamp> {
        match self.state {
            State::Held { valid_until, .. } => Some(valid_until),
            State::Extending { valid_until, .. } => valid_until,
            _ => None,
        }
    }

    /// The fencing token of the lease held or last held (until released).
    pub fn fence(&self) -> Option<FencingToken> {
        match self.state {
            State::Held { fence, .. } | State::Extending { fence, .. } | State::Stale { fence } => Some(fence),
            _ => None,
        }
    }

    /// The handle of the lease held or last held.
    pub fn handle(&self) -> Option<LockHandle> {
        let fencing_token = self.fence()?;
        Some(LockHandle { name: self.key.name(), token: self.token.clone(), fencing_token })
    }

    // ---- inputs --------------------------------------------------------------------------

    /// The store's answer to operation `id`.
    pub fn handle_reply(&mut self, now: Timestamp, id: OpId, reply: Result<StoreReply, BackendError>) {
        let now = self.out.observe(now);
        // A lease that ran out before this reply is reported lost before the reply is read.
        self.check_expiry(now);
        if self.orphan == Some(id) {
            self.orphan = None;
            if matches!(reply, Ok(StoreReply::Fence(Some(_)))) && self.state == State::Idle {
                self.start_release(now, None, true);
            }
            return;
        }
        match self.state {
            State::Acquiring { flight, lease, attempt } if flight.op == id => {
                self.on_acquire_reply(now, flight, lease, attempt, reply);
            }
            State::Extending { flight, lease, fence, valid_until } if flight.op == id => {
                self.on_extend_reply(now, flight, lease, fence, valid_until, reply);
            }
            State::Releasing { flight, fence, quiet } if flight.op == id => {
                self.on_release_reply(fence, quiet, reply);
            }
            State::Cancelling { flight } if flight.op == id => {
                if let Ok(StoreReply::Fence(Some(fence))) = reply {
                    self.start_release(now, Some(fence), true);
                } else {
                    self.state = State::Idle;
                }
            }
            // Unknown, stale or duplicated: the operation is no longer awaited.
            _ => {}
        }
        self.check_expiry(now);
    }

    /// Timers: operation deadlines, the next attempt, the end of validity.
    pub fn handle_timeout(&mut self, now: Timestamp) {
        let now = self.out.observe(now);
        match self.state {
            State::Waiting { retry_at, lease, attempt } if now >= retry_at => self.attempt(now, lease, attempt),
            State::Acquiring { flight, .. } | State::Cancelling { flight } if now >= flight.deadline => {
                let timeout = Err(BackendError::timeout(self.backend_timeout));
                self.handle_reply(now, flight.op, timeout);
                self.orphan = Some(flight.op);
            }
            State::Extending { flight, .. } | State::Releasing { flight, .. } if now >= flight.deadline => {
                let timeout = Err(BackendError::timeout(self.backend_timeout));
                self.handle_reply(now, flight.op, timeout);
            }
            _ => {}
        }
        self.check_expiry(now);
    }

    // ---- commands ------------------------------------------------------------------------

    /// Starts a blocking acquire: attempt now, then every jittered `retry_interval`, until
    /// granted, refused past `timeout` ([`Error::Timeout`]; `None` waits forever) or failed.
    ///
    /// The pause before the next attempt is cut short at the timeout, so a bounded acquire makes
    /// its last attempt at the deadline instead of sleeping past it (grelmicro overshoots by up
    /// to one retry interval). `Some(Duration::ZERO)` makes exactly one attempt.
    pub fn acquire(&mut self, now: Timestamp, timeout: Option<Duration>) -> Result<(), Error> {
        let now = self.out.observe(now);
        self.check_expiry(now);
        let deadline = timeout.map(|t| now + t);
        self.begin(now, Attempt { deadline, timeout, nowait: false })
    }

    /// Starts a single attempt; refused → [`Error::WouldBlock`].
    pub fn acquire_nowait(&mut self, now: Timestamp) -> Result<(), Error> {
        let now = self.out.observe(now);
        self.check_expiry(now);
        self.begin(now, Attempt { deadline: None, timeout: None, nowait: true })
    }

    /// Renews the lease for another `lease_duration` under the same token. A live lease keeps its
    /// fencing token; a lapsed one that nobody took is granted again with a greater one.
    pub fn extend(&mut self, now: Timestamp) -> Result<(), Error> {
        let now = self.out.observe(now);
        self.check_expiry(now);
        let lease = self.lease;
        let (fence, valid_until) = match self.state {
            // Once the store applies the extend the lease ends `lease` after that, which may be
            // sooner than the old end (a shorter lease since `set_config`): count on the earlier.
            State::Held { fence, valid_until } => (fence, Some(valid_until.min(now + local_validity(lease)))),
            // No valid lease to keep counting on while the extend is in flight.
            State::Stale { fence } => (fence, None),
            State::Idle | State::Acquiring { .. } | State::Waiting { .. } => return Err(self.not_owned()),
            _ => return Err(self.busy()),
        };
        let flight = self.out.send(now, LockOp::Acquire(lease), self.backend_timeout);
        self.state = State::Extending { flight, lease, fence, valid_until };
        Ok(())
    }

    /// Releases the lease. Asks the store even when nothing is held locally, so a lease left by
    /// a cancelled acquire under this token can be released too. The holder stops counting on the
    /// lease at once.
    pub fn release(&mut self, now: Timestamp) -> Result<(), Error> {
        let now = self.out.observe(now);
        self.check_expiry(now);
        let fence = match self.state {
            State::Idle => None,
            State::Held { fence, .. } | State::Stale { fence } => Some(fence),
            _ => return Err(self.busy()),
        };
        self.start_release(now, fence, false);
        Ok(())
    }

    /// Abandons the current command; it reports no event. A cancelled acquire whose grant may
    /// still land is followed by a release of that grant — and one that kept a place in the
    /// store's queue, by a release that gives the place up (and what the store may have handed
    /// it meanwhile); a cancelled extend keeps the old lease; a release in flight goes on (a
    /// release should complete even when its caller gives up).
    pub fn cancel(&mut self, now: Timestamp) {
        let now = self.out.observe(now);
        self.check_expiry(now);
        if matches!(self.state, State::Waiting { .. }) && self.queued_at.is_some() {
            self.start_release(now, None, true);
            return;
        }
        self.state = match self.state {
            State::Acquiring { flight, .. } => State::Cancelling { flight },
            State::Waiting { .. } => State::Idle,
            State::Extending { fence, valid_until: Some(valid_until), .. } if now < valid_until => {
                State::Held { fence, valid_until }
            }
            State::Extending { fence, .. } => State::Stale { fence },
            State::Releasing { flight, fence, .. } => State::Releasing { flight, fence, quiet: true },
            other => other,
        };
        self.check_expiry(now);
    }

    /// A push wake-up (the lock was released elsewhere): a waiting acquire attempts at once; an
    /// attempt in flight that comes back refused is retried at once. No wake-up is lost.
    pub fn wake(&mut self, now: Timestamp) {
        let now = self.out.observe(now);
        match self.state {
            State::Waiting { lease, attempt, .. } => self.attempt(now, lease, attempt),
            State::Acquiring { .. } => self.wake_pending = true,
            _ => {}
        }
    }

    /// Makes blocking acquires keep a place in the store's queue, lasting `wait` from each
    /// attempt ([`StoreOp::LockAcquireQueued`]), so the store hands the lock over in turn
    /// ([`LockMachine::handle_grant`]); `None` (the default) polls as grelmicro does. A queued
    /// waiter pauses at most a third of `wait` between attempts, so its place never lapses
    /// while it waits.
    pub fn set_queued(&mut self, wait: Option<Duration>) {
        self.queue_wait = wait;
    }

    /// The store pushed that it handed the lock to this holder's token, with `fence`.
    ///
    /// A waiting acquire holds at once, counting the lease from when it sent its last attempt
    /// the store answered "queued" (the store granted after that attempt, so the holder never
    /// counts on the lease longer than the store keeps it); too late to count on, it asks again
    /// (which renews the lease, same fence). An acquire that gave up releases what it was
    /// handed. While an attempt is in flight the push is not needed: the attempt's own answer
    /// (a renewal of what was handed over) brings the lease.
    pub fn handle_grant(&mut self, now: Timestamp, fence: FencingToken) {
        let now = self.out.observe(now);
        self.check_expiry(now);
        match (self.state, self.queued_at) {
            (State::Waiting { lease, attempt, .. }, Some(queued_at)) => {
                if let Some(cause) = self.regression(fence) {
                    self.start_release(now, None, true);
                    self.out.emit(LockEvent::Failed(Error::Acquire { name: self.name(), cause }));
                    return;
                }
                self.note_fence(fence);
                let since = if bug!(self, GRANT_VALIDITY_FROM_PUSH) { now } else { queued_at };
                let valid_until = since + local_validity(lease);
                if now < valid_until {
                    self.state = State::Held { fence, valid_until };
                    self.out.emit(LockEvent::Acquired { fence, valid_until });
                } else {
                    self.attempt(now, lease, attempt);
                }
            }
            (State::Idle, _) if self.orphan.is_none() && self.token_used => self.start_release(now, None, true),
            _ => {}
        }
    }

    /// Uses `config`'s durations for the commands that start from now on; a command in flight
    /// keeps the lease it started with.
    pub fn set_config(&mut self, config: &LockConfig) {
        self.lease = config.lease_duration();
        self.retry_interval = config.retry_interval();
        self.retry_jitter = config.retry_jitter();
        self.backend_timeout = config.backend_timeout();
    }

    // ---- outputs -------------------------------------------------------------------------

    /// The next store request to run.
    #[must_use]
    pub fn poll_effect(&mut self) -> Option<crate::store::StoreRequest> {
        let (key, token) = (&self.key, &self.token);
        self.out.poll_effect_with(|op| match op {
            LockOp::Acquire(lease) => StoreOp::LockAcquire { key: key.clone(), token: token.clone(), lease },
            LockOp::Queue(lease, wait) => {
                StoreOp::LockAcquireQueued { key: key.clone(), token: token.clone(), lease, wait }
            }
            LockOp::Release => StoreOp::LockRelease { key: key.clone(), token: token.clone() },
        })
    }

    /// The next event.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<LockEvent> {
        self.out.poll_event()
    }

    /// When `handle_timeout` should next be called.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        match self.state {
            State::Waiting { retry_at, .. } => Some(retry_at),
            State::Held { valid_until, .. } => Some(valid_until),
            State::Extending { flight, valid_until, .. } => earliest([Some(flight.deadline), valid_until]),
            State::Acquiring { flight, .. } | State::Releasing { flight, .. } | State::Cancelling { flight } => {
                Some(flight.deadline)
            }
            State::Idle | State::Stale { .. } => None,
        }
    }

    // ---- internals -----------------------------------------------------------------------

    fn begin(&mut self, now: Timestamp, attempt: Attempt) -> Result<(), Error> {
        match self.state {
            State::Idle => {
                self.wake_pending = false;
                self.queued_at = None;
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
            State::Releasing { .. } | State::Cancelling { .. } => Err(self.busy()),
        }
    }

    fn attempt(&mut self, now: Timestamp, lease: Duration, attempt: Attempt) {
        self.token_used = true;
        let op = match self.queue_wait {
            Some(wait) if !attempt.nowait => LockOp::Queue(lease, wait),
            _ => LockOp::Acquire(lease),
        };
        let flight = self.out.send(now, op, self.backend_timeout);
        self.state = State::Acquiring { flight, lease, attempt };
    }

    fn on_acquire_reply(
        &mut self,
        now: Timestamp,
        flight: Flight,
        lease: Duration,
        attempt: Attempt,
        reply: Result<StoreReply, BackendError>,
    ) {
        self.state = State::Idle;
        let error = match reply {
            Ok(StoreReply::Fence(Some(fence))) => match self.regression(fence) {
                Some(cause) => Error::Acquire { name: self.name(), cause },
                None => {
                    self.note_fence(fence);
                    let valid_until = self.validity_start(now, flight) + local_validity(lease);
                    if now < valid_until {
                        self.state = State::Held { fence, valid_until };
                        self.out.emit(LockEvent::Acquired { fence, valid_until });
                        return;
                    }
                    // The grant came back too late to count on (a reply slower than the lease):
                    // a blocking acquire asks again at once (renewing the lease if it is still
                    // ours); otherwise the grant is released and the acquire fails.
                    if !attempt.nowait && attempt.deadline.is_none_or(|deadline| now < deadline) {
                        self.attempt(now, lease, attempt);
                        return;
                    }
                    self.start_release(now, None, true);
                    let error = match attempt {
                        Attempt { nowait: false, timeout: Some(timeout), .. } => {
                            Error::Timeout { name: self.name(), timeout }
                        }
                        _ => Error::Acquire { name: self.name(), cause: BackendError::late_grant() },
                    };
                    self.out.emit(LockEvent::Failed(error));
                    return;
                }
            },
            Ok(StoreReply::Fence(None)) => match attempt {
                Attempt { nowait: true, .. } => {
                    Error::WouldBlock { name: self.name(), reason: WouldBlockReason::LockHeld }
                }
                Attempt { deadline: Some(deadline), timeout, .. } if now >= deadline => {
                    if self.queue_wait.is_some() {
                        // Give up the place in the store's queue (and whatever it hands over).
                        self.start_release(now, None, true);
                    }
                    let error = Error::Timeout { name: self.name(), timeout: timeout.unwrap_or_default() };
                    self.out.emit(LockEvent::Failed(error));
                    return;
                }
                _ if std::mem::take(&mut self.wake_pending) => {
                    self.attempt(now, lease, attempt);
                    return;
                }
                Attempt { deadline, .. } => {
                    if self.queue_wait.is_some() {
                        self.queued_at = Some(flight.sent_at);
                    }
                    let pause = jitter(self.retry_interval, self.retry_jitter, unit_interval(self.jitter.next_u64()));
                    // A queued waiter asks again well within its place, so the place never lapses
                    // while it waits.
                    let pause = self.queue_wait.map_or(pause, |wait| pause.min(wait / 3));
                    let retry_at = earliest([Some(now + pause), deadline]).unwrap_or(now);
                    self.state = State::Waiting { retry_at, lease, attempt };
                    return;
                }
            },
            Ok(other) => Error::Acquire { name: self.name(), cause: unexpected("acquire", &other) },
            Err(cause) => Error::Acquire { name: self.name(), cause },
        };
        self.out.emit(LockEvent::Failed(error));
    }

    fn on_extend_reply(
        &mut self,
        now: Timestamp,
        flight: Flight,
        lease: Duration,
        fence: FencingToken,
        valid_until: Option<Timestamp>,
        reply: Result<StoreReply, BackendError>,
    ) {
        // Whatever happens, the old lease is still worth what it was worth.
        let previous = match valid_until {
            Some(valid_until) if now < valid_until => State::Held { fence, valid_until },
            _ => State::Stale { fence },
        };
        let error = match reply {
            Ok(StoreReply::Fence(Some(granted))) => match self.regression(granted) {
                Some(cause) => Error::Extend { name: self.name(), cause },
                None => {
                    self.note_fence(granted);
                    let until = self.validity_start(now, flight) + local_validity(lease);
                    if now < until {
                        self.state = State::Held { fence: granted, valid_until: until };
                        self.out.emit(LockEvent::Extended { fence: granted, previous: fence, valid_until: until });
                        return;
                    }
                    // Too late to count on: the old lease has run out too (it ends no later).
                    self.state = State::Stale { fence: granted };
                    self.out.emit(LockEvent::Failed(Error::Extend {
                        name: self.name(),
                        cause: BackendError::late_grant(),
                    }));
                    return;
                }
            },
            Ok(StoreReply::Fence(None)) => {
                if matches!(previous, State::Held { .. }) {
                    self.out.emit(LockEvent::Lost { fence, reason: LossReason::NotOwned });
                }
                self.state = State::Idle;
                self.out.emit(LockEvent::Failed(self.not_owned()));
                return;
            }
            Ok(other) => Error::Extend { name: self.name(), cause: unexpected("extend", &other) },
            Err(cause) => Error::Extend { name: self.name(), cause },
        };
        self.state = previous;
        self.out.emit(LockEvent::Failed(error));
    }

    fn on_release_reply(&mut self, fence: Option<FencingToken>, quiet: bool, reply: Result<StoreReply, BackendError>) {
        let (state, event) = match reply {
            Ok(StoreReply::Flag(true)) => (State::Idle, LockEvent::Released { fence }),
            Ok(StoreReply::Flag(false)) => (State::Idle, LockEvent::Failed(self.not_owned())),
            Ok(other) => (
                State::Idle,
                LockEvent::Failed(Error::Release { name: self.name(), cause: unexpected("release", &other) }),
            ),
            // The outcome is unknown: keep the token's fence so the caller may retry the release.
            Err(cause) => {
                let state = fence.map_or(State::Idle, |fence| State::Stale { fence });
                (state, LockEvent::Failed(Error::Release { name: self.name(), cause }))
            }
        };
        self.state = state;
        if !quiet {
            self.out.emit(event);
        }
    }

    fn start_release(&mut self, now: Timestamp, fence: Option<FencingToken>, quiet: bool) {
        let flight = self.out.send(now, LockOp::Release, self.backend_timeout);
        self.state = State::Releasing { flight, fence, quiet };
    }

    /// Reports a lease whose validity has run out.
    fn check_expiry(&mut self, now: Timestamp) {
        if let State::Held { fence, valid_until } = self.state
            && now >= valid_until
        {
            self.state = State::Stale { fence };
            self.out.emit(LockEvent::Lost { fence, reason: LossReason::Expired });
        }
        if let State::Extending { fence, valid_until: Some(valid_until), flight, lease } = self.state
            && now >= valid_until
        {
            // Stop counting on it now; the extend may still bring it back.
            self.state = State::Extending { fence, valid_until: None, flight, lease };
            self.out.emit(LockEvent::Lost { fence, reason: LossReason::Expired });
        }
    }

    /// A fencing token lower than one this holder has already seen: the store lost its counter
    /// (a failover, a restore) and exclusion can no longer be proven.
    fn regression(&self, fence: FencingToken) -> Option<BackendError> {
        let last = self.last_fence.filter(|&last| fence < last)?;
        Some(BackendError::new(
            BackendErrorKind::FenceRegression,
            format!("the store answered fencing token {fence} after {last} for the same lock"),
        ))
    }

    /// Where the validity of a grant starts: when its request was sent.
    fn validity_start(&self, now: Timestamp, flight: Flight) -> Timestamp {
        if bug!(self, VALIDITY_FROM_REPLY) { now } else { flight.sent_at }
    }

    fn note_fence(&mut self, fence: FencingToken) {
        self.last_fence = Some(self.last_fence.map_or(fence, |last| last.max(fence)));
    }

    fn name(&self) -> String {
        self.key.name_str().to_owned()
    }

    fn not_owned(&self) -> Error {
        Error::NotOwned { name: self.name() }
    }

    fn busy(&self) -> Error {
        let operation = match self.state {
            State::Acquiring { .. } | State::Waiting { .. } | State::Cancelling { .. } => "acquire",
            State::Idle if self.orphan.is_some() => "acquire",
            State::Extending { .. } => "extend",
            _ => "release",
        };
        Error::Busy { name: self.name(), operation }
    }
}

/// A store answered with a reply of the wrong shape.
pub(crate) fn unexpected(operation: &str, reply: &StoreReply) -> BackendError {
    BackendError::new(BackendErrorKind::Protocol, format!("unexpected answer to {operation}: {}", reply.shape()))
}
