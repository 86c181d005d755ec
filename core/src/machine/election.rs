//! [`ElectionMachine`]: the leader-election loop (spec §3.5, DESIGN §4.1–4.2).

use std::sync::Arc;
use std::time::Duration;

use rand_core::Rng;

use super::lock::unexpected;
use super::{Flight, Outbox, earliest, local_validity};
use crate::config::{LeaderElectionConfig, ensure_same_worker};
use crate::error::{BackendError, Error};
use crate::ids::{FencingToken, Key, OpId, Token};
use crate::record::{LeaderRecord, Metadata};
use crate::rng::{SplitMix64, jitter, unit_interval};
use crate::store::{HolderDetails, StoreOp, StoreReply, StoreRequest};
use crate::time::Timestamp;

/// What an [`ElectionMachine`] tells its driver.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ElectionEvent {
    /// This worker became the leader.
    Elected,
    /// This worker stopped being the leader.
    Deposed {
        /// Why.
        reason: LeadershipLoss,
    },
    /// An attempt failed. `log` is false while the error-log throttle holds (no error logged
    /// within the last `error_interval` before this one).
    AttemptFailed {
        /// What the store did.
        error: BackendError,
        /// Whether to log it.
        log: bool,
    },
    /// The release on stop answered: `released` is whether this worker still held the lease.
    Released {
        /// Whether a lease was released.
        released: bool,
    },
    /// The release on stop failed (the lease will expire on its own).
    ReleaseFailed {
        /// What the store did.
        error: BackendError,
    },
    /// The loop has stopped; `start` may run it again.
    Stopped,
}

/// Why leadership ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeadershipLoss {
    /// The store reports another holder.
    NotHolder,
    /// No renewal succeeded within `renew_deadline`.
    RenewDeadline,
    /// The election was stopped.
    Stopped,
}

/// A request of this worker, with its key, token and metadata left out until it is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ElectionOp {
    AcquireOrRenew(Duration),
    Release,
}

/// An attempt in flight, with the instant until which its success would confirm leadership:
/// `renew_deadline` after the send, under the configuration the attempt was made with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Attempt {
    flight: Flight,
    confirms_until: Timestamp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Run {
    Stopped,
    Attempting(Attempt),
    Sleeping(Timestamp),
    /// Stopping: the attempt in flight is awaited before the release, so the release cannot
    /// reach the store before it.
    Finishing(Attempt),
    Releasing(Flight),
}

/// One worker's participation in one election.
///
/// While running, it asks `acquire_or_renew` every jittered `retry_interval` (the same cadence
/// for leader and followers), each call bounded by `backend_timeout`. A successful answer naming
/// this worker confirms leadership **as of the instant the request was sent**; leadership is
/// believed until `renew_deadline` after the last confirmation (under the configuration of that
/// attempt, and never past the lease less its drift allowance, nor past the lease of a renewal
/// sent since with a shorter lease), and a timer ends it at that
/// instant with an event, so [`ElectionMachine::is_leader`] never turns false without
/// [`ElectionEvent::Deposed`] (no missed wake-ups, unlike spec §9.5). `stop` clears leadership at
/// once, awaits the attempt in flight, releases, then reports [`ElectionEvent::Stopped`].
///
/// See the [module docs](crate::machine) for the drain contract.
#[derive(Debug)]
pub struct ElectionMachine {
    key: Key,
    token: Token,
    metadata: Arc<Metadata>,
    /// Who leads, sent with each attempt to take the lead ([`ElectionMachine::set_details`]).
    details: Option<HolderDetails>,
    config: LeaderElectionConfig,
    run: Run,
    leader: bool,
    /// While leading: the instant this worker stops believing it leads, fixed when leadership is
    /// confirmed (a `reconfigure` never stretches it) and pulled in when a renewal with a shorter
    /// lease is sent.
    leader_until: Timestamp,
    last_confirmed_at: Option<Timestamp>,
    /// How many times this worker became the leader.
    terms: u64,
    /// The fence of the current (or last) term, from the record that began it.
    fence: Option<FencingToken>,
    error_logged_at: Option<Timestamp>,
    record: Option<LeaderRecord>,
    /// A push wake-up arrived while an attempt was in flight: attempt again at once after it.
    wake_pending: bool,
    jitter: SplitMix64,
    out: Outbox<ElectionEvent, ElectionOp>,
    #[cfg(feature = "bug-injection")]
    bugs: crate::bugs::Bugs,
}

impl ElectionMachine {
    /// A worker in the election `key` (`leader:<name>`) under `token` (its resolved worker
    /// identity), created at `now`.
    pub fn new<R: Rng + ?Sized>(
        key: Key,
        token: Token,
        config: LeaderElectionConfig,
        metadata: Metadata,
        now: Timestamp,
        rng: &mut R,
    ) -> Self {
        let mut out = Outbox::new();
        let now = out.observe(now);
        Self {
            key,
            token,
            metadata: Arc::new(metadata),
            details: None,
            config,
            run: Run::Stopped,
            leader: false,
            leader_until: now,
            last_confirmed_at: None,
            terms: 0,
            fence: None,
            error_logged_at: None,
            record: None,
            wake_pending: false,
            jitter: SplitMix64::from_rng(rng),
            out,
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

    /// The election key.
    pub fn key(&self) -> &Key {
        &self.key
    }

    /// The token this worker writes as holder.
    pub fn token(&self) -> &Token {
        &self.token
    }

    /// The configuration in use.
    pub fn config(&self) -> &LeaderElectionConfig {
        &self.config
    }

    /// The metadata sent with every attempt.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// Whether a stop is under way (the release has not answered yet).
    pub fn is_stopping(&self) -> bool {
        matches!(self.run, Run::Finishing(_) | Run::Releasing(_))
    }

    /// Whether the loop is stopped and its events taken (nothing left to drive).
    pub fn is_settled(&self) -> bool {
        self.run == Run::Stopped && self.out.is_empty()
    }

    /// Whether the loop runs (until [`ElectionEvent::Stopped`]).
    pub fn is_running(&self) -> bool {
        self.run != Run::Stopped
    }

    /// Whether this worker leads at `now`: the last answer said so and was sent less than
    /// `renew_deadline` ago. Advisory; fence writes or use [`Self::is_leader_confirmed_within`]
    /// for work that must not overlap a successor.
    pub fn is_leader(&self, now: Timestamp) -> bool {
        self.leader && (now < self.leader_until || bug!(self, LEADER_IGNORES_DEADLINE))
    }

    /// How many times this worker has become the leader (each [`ElectionEvent::Elected`]): a
    /// term that began and ended between two looks still counts.
    pub fn terms(&self) -> u64 {
        self.terms
    }

    /// While leading: the fencing token of this term ([`LeaderRecord::fence`], from the answer
    /// that began it); `None` when not leading or when the store keeps no fences. A term the
    /// store began anew under this worker (its lease ran out and it took it again) is reported as
    /// a loss and a new election, with the new fence.
    pub fn fence(&self) -> Option<FencingToken> {
        self.fence.filter(|_| self.leader)
    }

    /// While leading: the instant this worker stops believing it leads unless renewed.
    pub fn leading_until(&self) -> Option<Timestamp> {
        self.leader.then_some(self.leader_until)
    }

    /// Whether this worker leads and the store confirmed it at most `max_age` before `now`.
    pub fn is_leader_confirmed_within(&self, now: Timestamp, max_age: Duration) -> bool {
        self.is_leader(now) && self.last_confirmation_age(now).is_some_and(|age| age <= max_age)
    }

    /// Time since the store last confirmed this worker's leadership; `None` when not leading
    /// at `now` (also when the renew deadline has passed but no timer reported it yet).
    pub fn last_confirmation_age(&self, now: Timestamp) -> Option<Duration> {
        let at = self.last_confirmed_at.filter(|_| self.is_leader(now))?;
        Some(now.saturating_duration_since(at))
    }

    /// client-go's leader health check: while this worker still believes it leads (no timer has
    /// ended its term yet), how long ago the store last confirmed it, if that is longer than
    /// the leadership it confirms (`leading_until`, at most `renew_deadline` after the send) plus
    /// `tolerance`. A loop whose timers stopped (a blocked or starved runtime) keeps believing;
    /// this says so, and a health route answers unhealthy.
    pub fn stale_leadership(&self, now: Timestamp, tolerance: Duration) -> Option<Duration> {
        let (true, Some(at)) = (self.leader, self.last_confirmed_at) else { return None };
        let allowed = self.leader_until.saturating_duration_since(at).saturating_add(tolerance);
        let age = now.saturating_duration_since(at);
        (age > allowed).then_some(age)
    }

    /// The last record a successful attempt returned; kept after errors and stops.
    pub fn record(&self) -> Option<&LeaderRecord> {
        self.record.as_ref()
    }

    // ---- inputs --------------------------------------------------------------------------

    /// The store's answer to operation `id`.
    pub fn handle_reply(&mut self, now: Timestamp, id: OpId, reply: Result<StoreReply, BackendError>) {
        let now = self.out.observe(now);
        match self.run {
            Run::Attempting(attempt) if attempt.flight.op == id => {
                self.on_attempt_reply(now, attempt, reply, true);
                if std::mem::take(&mut self.wake_pending) {
                    self.attempt(now);
                } else {
                    self.sleep(now);
                }
            }
            Run::Finishing(attempt) if attempt.flight.op == id => {
                self.on_attempt_reply(now, attempt, reply, false);
                self.release(now);
            }
            Run::Releasing(flight) if flight.op == id => self.on_release_reply(reply),
            // Unknown, stale or duplicated: the operation is no longer awaited.
            _ => {}
        }
        self.check_deadline(now);
    }

    /// Timers: the next attempt, operation deadlines, the renew deadline.
    pub fn handle_timeout(&mut self, now: Timestamp) {
        let now = self.out.observe(now);
        match self.run {
            Run::Sleeping(at) if now >= at => self.attempt(now),
            Run::Attempting(Attempt { flight, .. })
            | Run::Finishing(Attempt { flight, .. })
            | Run::Releasing(flight)
                if now >= flight.deadline =>
            {
                let timeout = Err(BackendError::timeout(self.config.backend_timeout()));
                self.handle_reply(now, flight.op, timeout);
            }
            _ => {}
        }
        self.check_deadline(now);
    }

    // ---- commands ------------------------------------------------------------------------

    /// Starts the loop with an attempt at once. Returns false (and does nothing) when it
    /// already runs: a second start is a no-op, as in grelmicro.
    pub fn start(&mut self, now: Timestamp) -> bool {
        let now = self.out.observe(now);
        if self.is_running() {
            return false;
        }
        self.wake_pending = false;
        self.attempt(now);
        true
    }

    /// Stops the loop: leadership ends now; the attempt in flight (if any) is awaited, then the
    /// lease is released (bounded by `backend_timeout`), then [`ElectionEvent::Stopped`].
    pub fn stop(&mut self, now: Timestamp) {
        let now = self.out.observe(now);
        match self.run {
            Run::Stopped | Run::Finishing(_) | Run::Releasing(_) => return,
            Run::Attempting(attempt) => self.run = Run::Finishing(attempt),
            Run::Sleeping(_) => self.release(now),
        }
        self.set_leader(false, LeadershipLoss::Stopped);
    }

    /// A push wake-up (the leader released): a sleeping loop attempts at once; an attempt in
    /// flight is followed at once by another. No wake-up is lost.
    pub fn wake(&mut self, now: Timestamp) {
        let now = self.out.observe(now);
        match self.run {
            Run::Sleeping(_) => self.attempt(now),
            Run::Attempting(_) => self.wake_pending = true,
            _ => {}
        }
    }

    /// Swaps the configuration: the next attempt uses it, and the error-log throttle at once.
    /// The worker identity cannot change.
    pub fn reconfigure(&mut self, config: LeaderElectionConfig) -> Result<(), Error> {
        ensure_same_worker(self.config.worker(), config.worker())?;
        self.config = config;
        Ok(())
    }

    // ---- outputs -------------------------------------------------------------------------

    /// Sends `details` (who leads: host, pid, program, purpose) with each call, for the store to
    /// keep beside a term the call begins ([`crate::store::HolderDetails`]; a renewal writes
    /// nothing).
    pub fn set_details(&mut self, details: Option<HolderDetails>) {
        self.details = details;
    }

    /// The next store request to run.
    #[must_use]
    pub fn poll_effect(&mut self) -> Option<StoreRequest> {
        let (key, token, metadata) = (&self.key, &self.token, &self.metadata);
        // (with every call: one that the worker takes for a renewal may begin a term at the
        // store, its lease having lapsed there; a store keeps them only for a new term)
        let details = self.details.clone();
        self.out.poll_effect_with(|op| match op {
            ElectionOp::AcquireOrRenew(lease) => StoreOp::LeaderAcquireOrRenew {
                key: key.clone(),
                token: token.clone(),
                lease,
                metadata: metadata.clone(),
                details,
            },
            ElectionOp::Release => StoreOp::LeaderRelease { key: key.clone(), token: token.clone() },
        })
    }

    /// The next event.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<ElectionEvent> {
        self.out.poll_event()
    }

    /// When `handle_timeout` should next be called.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        let run = match self.run {
            Run::Stopped => None,
            Run::Sleeping(at) => Some(at),
            Run::Attempting(Attempt { flight, .. })
            | Run::Finishing(Attempt { flight, .. })
            | Run::Releasing(flight) => Some(flight.deadline),
        };
        let deadline = self.leader && !bug!(self, LEADER_IGNORES_DEADLINE);
        earliest([run, deadline.then_some(self.leader_until)])
    }

    // ---- internals -----------------------------------------------------------------------

    fn attempt(&mut self, now: Timestamp) {
        let lease = self.config.lease_duration();
        let flight = self.out.send(now, ElectionOp::AcquireOrRenew(lease), self.config.backend_timeout());
        // Once applied, our lease ends `lease` after that: maybe sooner than the current belief
        // when the lease was shortened by `reconfigure`.
        self.leader_until = self.leader_until.min(now + local_validity(lease));
        let confirms_for = self.config.renew_deadline().min(local_validity(lease));
        self.run = Run::Attempting(Attempt { flight, confirms_until: now + confirms_for });
    }

    fn sleep(&mut self, now: Timestamp) {
        let r = unit_interval(self.jitter.next_u64());
        let pause = jitter(self.config.retry_interval(), self.config.retry_jitter(), r);
        self.run = Run::Sleeping(now + pause);
    }

    fn release(&mut self, now: Timestamp) {
        self.run = Run::Releasing(self.out.send(now, ElectionOp::Release, self.config.backend_timeout()));
    }

    /// Handles an attempt's answer; `count` is false while stopping (the record is kept, the
    /// verdict not).
    fn on_attempt_reply(
        &mut self,
        now: Timestamp,
        attempt: Attempt,
        reply: Result<StoreReply, BackendError>,
        count: bool,
    ) {
        let error = match reply {
            Ok(StoreReply::Leader(record)) => {
                let leads = record.holder == self.token.as_str();
                let fence = record.fence;
                self.record = Some(record);
                if count {
                    self.update_state(now, leads.then_some(fence), attempt, LeadershipLoss::NotHolder);
                }
                return;
            }
            Ok(other) => unexpected("acquire_or_renew", &other),
            Err(error) => error,
        };
        // Quiet-period throttle (spec §3.5.4): log only after a gap longer than error_interval.
        let log =
            self.error_logged_at.is_none_or(|at| now.saturating_duration_since(at) > self.config.error_interval());
        self.error_logged_at = Some(now);
        self.out.emit(ElectionEvent::AttemptFailed { error, log });
        // Leadership ends at its deadline (spec §3.5.3: reached at exactly renew_deadline).
        self.check_deadline(now);
    }

    fn on_release_reply(&mut self, reply: Result<StoreReply, BackendError>) {
        let event = match reply {
            Ok(StoreReply::Flag(released)) => ElectionEvent::Released { released },
            Ok(other) => ElectionEvent::ReleaseFailed { error: unexpected("release", &other) },
            Err(error) => ElectionEvent::ReleaseFailed { error },
        };
        self.out.emit(event);
        self.run = Run::Stopped;
        self.out.emit(ElectionEvent::Stopped);
    }

    /// Records the verdict of an answered attempt (`term`: this worker leads, under that fence):
    /// leading is confirmed as of its send. A confirmation that comes back after the instant it
    /// would confirm until says nothing.
    fn update_state(
        &mut self,
        now: Timestamp,
        term: Option<Option<FencingToken>>,
        attempt: Attempt,
        reason: LeadershipLoss,
    ) {
        let Some(fence) = term else {
            self.set_leader(false, reason);
            return;
        };
        if now >= attempt.confirms_until {
            return;
        }
        if self.leader && fence != self.fence {
            // The store began another term under this worker: the last one ended.
            self.set_leader(false, reason);
        }
        self.last_confirmed_at = Some(attempt.flight.sent_at);
        self.leader_until = attempt.confirms_until;
        self.fence = fence;
        self.set_leader(true, reason);
    }

    /// Reports a change of verdict.
    fn set_leader(&mut self, leads: bool, reason: LeadershipLoss) {
        if !leads {
            self.last_confirmed_at = None;
        }
        if leads == self.leader {
            return;
        }
        self.leader = leads;
        if leads {
            self.terms += 1;
        }
        self.out.emit(if leads { ElectionEvent::Elected } else { ElectionEvent::Deposed { reason } });
    }

    fn check_deadline(&mut self, now: Timestamp) {
        if self.leader && now >= self.leader_until && !bug!(self, LEADER_IGNORES_DEADLINE) {
            self.set_leader(false, LeadershipLoss::RenewDeadline);
        }
    }
}
