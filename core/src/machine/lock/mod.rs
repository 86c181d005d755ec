//! [`LockMachine`]: one holder's life with one lock (spec §3.1–3.3, DESIGN §4.1, §4.3, §4.6), or
//! with one side of a read-write lock (spec §1.9, §5.4): the same acquire, extend and release,
//! on the read or the write lease ([`Access`]).

mod reply;
mod steps;

use std::time::Duration;

use rand_core::Rng;
use reply::Answer;

use super::{Flight, Outbox, earliest, local_validity};
use crate::config::LockConfig;
use crate::error::{BackendError, BackendErrorKind, Error};
use crate::ids::{FencingToken, Key, LockHandle, OpId, Token};
use crate::rng::SplitMix64;
use crate::store::{HolderDetails, StoreOp, StoreReply};
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
    /// `downgrade` succeeded: the write lease is now a read lease ([`Access::Read`]) under the
    /// same token, and no writer got in between.
    Downgraded {
        /// The generation read (the fencing token of the write given up).
        generation: FencingToken,
        /// The read lease's end of validity.
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
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LossReason {
    /// Its validity ran out before an extend confirmed it.
    Expired,
    /// The store answered an extend with "not yours".
    NotOwned,
    /// The store answered an extend with "revoked" for this lease's fence
    /// ([`crate::StoreReply::Revoked`]), for this reason.
    Revoked(crate::store::RevokeReason),
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
    /// A downgrade is in flight: the write lease is not counted on meanwhile.
    Downgrading,
}

/// Which lease a [`LockMachine`] takes on its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A lock's only lease (`lock:` keys).
    Exclusive,
    /// A read lease of a read-write lock (`rwlock:` keys), shared with other readers; its
    /// fence is the generation it reads, the fencing token of the last write.
    Read,
    /// The write lease of a read-write lock: no reader and no other writer hold one at the
    /// same time. A blocking acquire keeps an intent in the store that holds new readers out
    /// while it waits, and withdraws it when it gives up.
    Write,
    /// One of a semaphore's permits (`semaphore:` keys): at most this many holders at once,
    /// each with its own fencing token. A blocking acquire keeps a place in the store's line
    /// (granted in arrival order) and gives it up when it gives up.
    Permit(std::num::NonZeroU32),
}

impl Access {
    /// Whether this lease is taken on keys of `kind`: a read-write lock's sides on `rwlock:`
    /// keys, a permit on `semaphore:` keys, a lock's lease on the others.
    pub fn fits(self, kind: crate::ids::KeyKind) -> bool {
        use crate::ids::KeyKind;
        match self {
            Self::Exclusive => !matches!(kind, KeyKind::ReadWriteLock | KeyKind::Semaphore),
            Self::Read | Self::Write => kind == KeyKind::ReadWriteLock,
            Self::Permit(_) => kind == KeyKind::Semaphore,
        }
    }
}

/// A request of this holder, with its key and token left out until it is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LockOp {
    /// A single attempt, or an extend: a writer keeps no intent.
    Acquire(Duration),
    /// An attempt of a blocking acquire: a writer keeps an intent if refused.
    Attempt(Duration),
    /// An attempt that keeps a place in the store's queue for the given wait.
    Queue(Duration, Duration),
    Release,
    /// Withdraws a writer's intent.
    Withdraw,
    /// Turns the write lease into a read lease of the given length.
    Downgrade(Duration),
    /// Releases the read side of a writer whose downgrade's outcome is unknown.
    ReleaseRead,
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
        /// The attempt keeps a place in the store's queue or line if it is refused.
        placed: bool,
    },
    Downgrading {
        flight: Flight,
        lease: Duration,
        fence: FencingToken,
        /// Its caller gave up: the outcome changes the state but reports no event.
        quiet: bool,
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
    access: Access,
    /// The write lease held (or last held) was granted after a writer expired without
    /// releasing, or was lost and granted again by an extend.
    poisoned: bool,
    lease: Duration,
    retry_interval: Duration,
    retry_jitter: f64,
    backend_timeout: Duration,
    state: State,
    /// The highest fencing token this holder has seen; a store answering lower is refused.
    last_fence: Option<FencingToken>,
    /// The highest fencing token other holders of the same lock in this process were granted
    /// ([`LockMachine::remember_fence`]): a grant must be above it (a read lease at or above it:
    /// readers share theirs).
    floor: Option<FencingToken>,
    /// An acquire abandoned at its deadline (its access, and whether it keeps a place in the
    /// store's queue or line when refused): if the store applied it after all, its late grant
    /// or its place is given up instead of blocking others for a whole lease.
    orphan: Option<(OpId, Access, bool)>,
    /// A push wake-up arrived while an attempt was in flight: if it is refused, retry at once
    /// (the release may have come just after the store refused it).
    wake_pending: bool,
    /// The token has been sent in an acquire: a new acquisition should take a new one.
    token_used: bool,
    /// Attempts keep a place in the store's queue for this long ([`LockMachine::set_queued`]).
    queue_wait: Option<Duration>,
    /// When the first attempt under this token that the store answered "queued" was sent: a
    /// lease handed over by the store ([`LockMachine::handle_grant`]) counts from there (kept
    /// across acquisitions that reuse the token: a place of an earlier one may be handed over).
    queued_at: Option<Timestamp>,
    /// A quiet request to send once the quiet release or withdrawal in flight is answered (a
    /// late grant to give back, an intent to withdraw again).
    then: Option<LockOp>,
    /// A downgrade's outcome is unknown: a release gives back both sides.
    maybe_reading: bool,
    /// The last lease lost, and why: the first cause told for its fence ([`LockEvent::Lost`]).
    loss: Option<(FencingToken, LossReason)>,
    /// Who holds, sent with every acquire ([`LockMachine::set_details`]).
    details: Option<HolderDetails>,

    jitter: SplitMix64,
    out: Outbox<LockEvent, LockOp>,
    #[cfg(feature = "bug-injection")]
    bugs: crate::bugs::Bugs,
}

impl LockMachine {
    /// A holder of the lock `key` under `token`, timed by `config`; `rng` seeds its jitter.
    pub fn new<R: Rng + ?Sized>(key: Key, token: Token, config: &LockConfig, rng: &mut R) -> Self {
        Self::with_access(key, token, Access::Exclusive, config, rng)
    }

    /// A holder of `access` on the read-write lock `key` (or, with [`Access::Exclusive`], of
    /// the lock `key`) under `token`.
    pub fn with_access<R: Rng + ?Sized>(
        key: Key,
        token: Token,
        access: Access,
        config: &LockConfig,
        rng: &mut R,
    ) -> Self {
        debug_assert!(access.fits(key.kind()), "a lease is taken on a key of its primitive, and only there");
        Self {
            key,
            token,
            access,
            poisoned: false,
            lease: config.lease_duration(),
            retry_interval: config.retry_interval(),
            retry_jitter: config.retry_jitter(),
            backend_timeout: config.backend_timeout(),
            state: State::Idle,
            last_fence: None,
            floor: None,
            orphan: None,
            wake_pending: false,
            token_used: false,
            queue_wait: None,
            queued_at: None,
            then: None,
            maybe_reading: false,
            loss: None,
            details: None,
            jitter: SplitMix64::from_rng(rng),
            out: Outbox::new(),
            #[cfg(feature = "bug-injection")]
            bugs: crate::bugs::Bugs::NONE,
        }
    }

    /// The last lease this holder lost and why, as its [`LockEvent::Lost`] said (the first cause
    /// told for that fence: a lease that ran out and was then found taken ran out). Read by
    /// whoever wakes on the loss before the event reaches it.
    pub fn loss(&self) -> Option<(FencingToken, LossReason)> {
        self.loss.clone()
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

    /// Which lease the holder takes (a write holder that downgraded reads).
    pub fn access(&self) -> Access {
        self.access
    }

    /// Whether the write lease held or last held is poisoned: granted after the previous
    /// writer's lease ran out without a release, or lost and granted again by an extend.
    /// Always false for other access.
    pub fn poisoned(&self) -> bool {
        self.poisoned
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
            State::Downgrading { .. } => LockPhase::Downgrading,
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
        self.queued_at = None;
        self.maybe_reading = false;
        Ok(())
    }

    /// Makes a quiescent machine take `access` from its next acquisition on (a writer's
    /// machine that downgraded reads until given back its access). Only between the two sides
    /// of a read-write lock: a lock's machine stays [`Access::Exclusive`].
    pub fn set_access(&mut self, access: Access) -> Result<(), Error> {
        if !self.is_quiescent() || self.token_used {
            // A request under the token may still reach the store (a release of the old side):
            // a new side takes a new token first ([`LockMachine::set_token`]).
            return Err(self.busy());
        }
        let sides = |access| matches!(access, Access::Read | Access::Write);
        if access != self.access && !(sides(access) && sides(self.access)) {
            return Err(Error::Settings(crate::error::SettingsError::general(
                "a holder changes access only between the two sides of a read-write lock",
            )));
        }
        self.access = access;
        self.poisoned = false;
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

    /// The highest fencing token this holder was granted: a store answering lower is refused
    /// as `FenceRegression`.
    pub fn last_fence(&self) -> Option<FencingToken> {
        self.last_fence
    }

    /// A fencing token another holder of the same lock in this process was granted (or this
    /// one, for an earlier lease), told before an acquisition: the store must grant above it
    /// (a read lease at or above it, since readers share theirs), or the grant is refused as
    /// `FenceRegression` and given back. The driver shares what the holders of one lock saw, so
    /// a lock acquired after a failover that lost the store's last grants says so whichever
    /// holder it uses. (Not before a renewal: the holders of a semaphore hold different tokens
    /// at once, and a renewal keeps its own.) Ignored unless the holder is idle: an acquire on a
    /// holder that holds is refused as nested, and its lease keeps the token it has.
    pub fn remember_fence(&mut self, fence: FencingToken) {
        if matches!(self.state, State::Idle) {
            self.floor = self.floor.max(Some(fence));
        }
    }

    /// The fencing token of the lease held or last held (until released).
    pub fn fence(&self) -> Option<FencingToken> {
        match self.state {
            State::Held { fence, .. }
            | State::Extending { fence, .. }
            | State::Stale { fence }
            | State::Downgrading { fence, .. } => Some(fence),
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
        if let Some((_, sent_as, placed)) = self.orphan.filter(|(orphan, ..)| *orphan == id) {
            self.orphan = None;
            // Read as the side it was sent for (the holder may have downgraded since).
            let follow = match (Self::answer_as(sent_as, reply), sent_as) {
                (Answer::Granted { .. }, Access::Write) if self.access != Access::Write => None,
                // A grant, a permit or a place kept: each goes with a release.
                (Answer::Granted { .. }, _) | (_, Access::Permit(_)) => Some(LockOp::Release),
                _ if placed => Some(LockOp::Release),
                // The abandoned attempt may have left an intent that holds readers out.
                (_, Access::Write) if self.access == Access::Write => Some(LockOp::Withdraw),
                _ => None,
            };
            match (follow, self.state) {
                (Some(op), State::Idle) => self.send_quiet(now, op),
                (Some(op), State::Releasing { quiet: true, .. }) => self.then = Some(op),
                _ => {}
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
                if let (Some(op), State::Idle) = (self.then, self.state) {
                    self.then = None;
                    self.send_quiet(now, op);
                }
            }
            State::Cancelling { flight, placed } if flight.op == id => match self.answer(reply) {
                Answer::Granted { fence, .. } => self.start_release(now, Some(fence), true),
                // Refused, failed or unreadable: a writer's intent, a permit's place or a queued
                // waiter's place may be there (a release would hand the lock to nobody).
                _ if self.access == Access::Write => self.start_withdraw(now),
                _ if placed || matches!(self.access, Access::Permit(_)) => self.start_release(now, None, true),
                _ => self.state = State::Idle,
            },
            State::Downgrading { flight, lease, fence, quiet } if flight.op == id => {
                self.on_downgrade_reply(now, flight, lease, fence, quiet, reply);
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
            State::Acquiring { flight, attempt, .. } if now >= flight.deadline => {
                self.orphan_at_deadline(now, flight, self.places(attempt));
            }
            State::Cancelling { flight, placed } if now >= flight.deadline => {
                self.orphan_at_deadline(now, flight, placed);
            }
            State::Extending { flight, .. } | State::Releasing { flight, .. } | State::Downgrading { flight, .. }
                if now >= flight.deadline =>
            {
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
        if std::mem::take(&mut self.maybe_reading) {
            // The downgrade may have applied: the read side goes too.
            self.then = Some(LockOp::ReleaseRead);
        }
        self.start_release(now, fence, false);
        Ok(())
    }

    /// Turns the write lease held into a read lease in one step: no other writer takes the lock
    /// in between ([`LockEvent::Downgraded`]; the machine then reads, [`Access::Read`]). Only a
    /// writer may; the write lease is not counted on while the downgrade is in flight. Refused
    /// by the store ([`Error::NotOwned`]): the lease is gone; failed: its outcome is unknown, and
    /// the holder may release.
    pub fn downgrade(&mut self, now: Timestamp) -> Result<(), Error> {
        let now = self.out.observe(now);
        self.check_expiry(now);
        if self.access != Access::Write {
            return Err(self.not_owned());
        }
        let fence = match self.state {
            State::Held { fence, .. } | State::Stale { fence } => fence,
            State::Idle | State::Acquiring { .. } | State::Waiting { .. } => return Err(self.not_owned()),
            _ => return Err(self.busy()),
        };
        let lease = self.lease;
        let flight = self.out.send(now, LockOp::Downgrade(lease), self.backend_timeout);
        self.state = State::Downgrading { flight, lease, fence, quiet: false };
        Ok(())
    }

    /// Abandons the current command; it reports no event. A cancelled acquire whose grant may
    /// still land is followed by a release of that grant — and one that kept a place in the
    /// store's queue, by a release that gives the place up (and what the store may have handed
    /// it meanwhile), and a writer's, by the withdrawal of its intent; a cancelled extend keeps
    /// the old lease; a release or a downgrade in flight goes on (a release should complete
    /// even when its caller gives up).
    pub fn cancel(&mut self, now: Timestamp) {
        let now = self.out.observe(now);
        self.check_expiry(now);
        if matches!(self.state, State::Waiting { .. }) && self.give_up_place(now) {
            return;
        }
        self.state = match self.state {
            State::Acquiring { flight, attempt, .. } => State::Cancelling { flight, placed: self.places(attempt) },
            State::Waiting { .. } => State::Idle,
            State::Extending { fence, valid_until: Some(valid_until), .. } if now < valid_until => {
                State::Held { fence, valid_until }
            }
            State::Extending { fence, .. } => State::Stale { fence },
            State::Releasing { flight, fence, .. } => State::Releasing { flight, fence, quiet: true },
            State::Downgrading { flight, lease, fence, .. } => State::Downgrading { flight, lease, fence, quiet: true },
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
    /// A semaphore's holder ([`Access::Permit`]) keeps its place in line for `wait` instead of a
    /// lease (so a waiter that vanished holds the line back no longer than that), granted in turn
    /// at its own attempts (the store pushes nothing). The sides of a read-write lock keep their
    /// own waiting rule (a writer's intent), and the call is ignored for them.
    pub fn set_queued(&mut self, wait: Option<Duration>) {
        if matches!(self.access, Access::Exclusive | Access::Permit(_)) {
            self.queue_wait = wait;
        }
    }

    /// The store pushed that it handed the lock to this holder's token, with `fence`.
    ///
    /// A waiting acquire holds at once, counting the lease from when it sent its first attempt
    /// the store answered "queued" (the store can only hand the lock over after that attempt
    /// made the place, so the holder never counts on the lease longer than the store keeps it);
    /// too late to count on, it asks again (which renews the lease, same fence). Not from the
    /// last such attempt: a push can be read after the answer to a later attempt (a paused
    /// process, a notification on another connection), and a hand-off made before that attempt
    /// had already lapsed when the store answered it (found by the simulator). An acquire that gave up releases what it was
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

    /// Sends `details` (who holds: host, pid, program, purpose) with every acquire (of a lock, a read-write lock's side or a permit; not
    /// with an extend), for the store to keep beside a new grant ([`crate::store::HolderDetails`]).
    pub fn set_details(&mut self, details: Option<HolderDetails>) {
        self.details = details;
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
        let (key, token, access) = (self.key.clone(), self.token.clone(), self.access);
        // (an extend renews: the store keeps the details given with the grant)
        let details = if matches!(self.state, State::Extending { .. }) { None } else { self.details.clone() };
        self.out.poll_effect_with(|op| {
            // (A read-write lock's sides never queue: `set_queued` is ignored for them.)
            let op = match (access, op) {
                (Access::Read | Access::Write, LockOp::Queue(lease, _)) => LockOp::Attempt(lease),
                (_, op) => op,
            };
            match (access, op) {
                (Access::Exclusive, LockOp::Acquire(lease) | LockOp::Attempt(lease)) => {
                    StoreOp::LockAcquire { key, token, lease, details }
                }
                (Access::Exclusive, LockOp::Queue(lease, wait)) => {
                    StoreOp::LockAcquireQueued { key, token, lease, wait, details }
                }
                (Access::Exclusive, _) => StoreOp::LockRelease { key, token },
                (Access::Read, LockOp::Acquire(lease) | LockOp::Attempt(lease)) => {
                    StoreOp::RwAcquireRead { key, token, lease, details }
                }
                (Access::Read, _) | (Access::Write, LockOp::ReleaseRead) => StoreOp::RwReleaseRead { key, token },
                (Access::Write, LockOp::Acquire(lease)) => {
                    StoreOp::RwAcquireWrite { key, token, lease, intent: false, details }
                }
                (Access::Write, LockOp::Attempt(lease)) => {
                    StoreOp::RwAcquireWrite { key, token, lease, intent: true, details }
                }
                (Access::Write, LockOp::Withdraw) => StoreOp::RwCancelIntent { key, token },
                (Access::Write, LockOp::Downgrade(lease)) => StoreOp::RwDowngrade { key, token, lease },
                (Access::Write, _) => StoreOp::RwReleaseWrite { key, token },
                (
                    Access::Permit(permits),
                    LockOp::Acquire(lease) | LockOp::Attempt(lease) | LockOp::Queue(lease, _),
                ) => {
                    // A blocking attempt keeps its place in line: for the wait `set_queued` gave,
                    // else for a lease.
                    let wait = match op {
                        LockOp::Queue(_, wait) => Some(wait),
                        LockOp::Attempt(lease) => Some(lease),
                        _ => None,
                    };
                    StoreOp::SemAcquire { key, token, lease, permits: permits.get(), wait, details }
                }
                (Access::Permit(_), _) => StoreOp::SemRelease { key, token },
            }
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
            State::Acquiring { flight, .. }
            | State::Releasing { flight, .. }
            | State::Cancelling { flight, .. }
            | State::Downgrading { flight, .. } => Some(flight.deadline),
            State::Idle | State::Stale { .. } => None,
        }
    }
}

/// A store answered with a reply of the wrong shape.
pub(crate) fn unexpected(operation: &str, reply: &StoreReply) -> BackendError {
    BackendError::new(BackendErrorKind::Protocol, format!("unexpected answer to {operation}: {}", reply.shape()))
}
