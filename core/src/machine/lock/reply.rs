//! How a [`LockMachine`] reads the store's answers.

use std::time::Duration;

use rand_core::Rng;

use super::{Access, Attempt, LockEvent, LockMachine, LossReason, State, unexpected};
use crate::error::{BackendError, Error, LossCause, SettingsError};
use crate::ids::FencingToken;
use crate::machine::{Flight, earliest, local_validity};
use crate::rng::{jitter, unit_interval};
use crate::store::{PermitAnswer, StoreReply, WriteGrant};
use crate::time::Timestamp;

/// A store's answer to an acquire or extend, in the shape of this holder's access.
pub(super) enum Answer {
    Granted {
        fence: FencingToken,
        poisoned: bool,
    },
    Refused,
    /// A revocation's placeholder holds the lock: the revoked lease's fence and why.
    Revoked {
        fence: FencingToken,
        reason: crate::store::RevokeReason,
    },
    /// A semaphore's permit count in the store is not the one this holder asks for.
    Mismatch {
        stored: u32,
    },
    Unexpected(StoreReply),
    Failed(BackendError),
}

impl LockMachine {
    pub(super) fn on_acquire_reply(
        &mut self,
        now: Timestamp,
        flight: Flight,
        lease: Duration,
        attempt: Attempt,
        reply: Result<StoreReply, BackendError>,
    ) {
        self.state = State::Idle;
        let answer = self.answer(reply);
        // (a revocation's placeholder refuses a new holder as any holder does)
        if matches!(answer, Answer::Refused | Answer::Revoked { .. }) && self.queue_wait.is_some() && !attempt.nowait {
            // The place this token keeps in the store's queue was made by its first such
            // attempt: a hand-off comes after it.
            self.queued_at.get_or_insert(flight.sent_at);
        }
        let error = match answer {
            Answer::Granted { fence, poisoned } => match self.regression(fence) {
                Some(cause) => {
                    // Not trusted, but held on the store: given back.
                    self.start_release(now, None, true);
                    self.out.emit(LockEvent::Failed(Error::Acquire { name: self.name(), cause }));
                    return;
                }
                None => {
                    self.note_fence(fence);
                    // (A grant asked again — too late to count on — renews: the first one told.)
                    self.poisoned |= poisoned;
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
            Answer::Refused | Answer::Revoked { .. } => match attempt {
                Attempt { nowait: true, .. } => Error::WouldBlock { name: self.name(), reason: self.refusal() },
                Attempt { deadline: Some(deadline), timeout, .. } if now >= deadline => {
                    // Give up the place in the store's queue (and whatever it hands over), or
                    // the write intent.
                    self.give_up_place(now);
                    let error = Error::Timeout { name: self.name(), timeout: timeout.unwrap_or_default() };
                    self.out.emit(LockEvent::Failed(error));
                    return;
                }
                _ if std::mem::take(&mut self.wake_pending) => {
                    self.attempt(now, lease, attempt);
                    return;
                }
                Attempt { deadline, .. } => {
                    let pause = jitter(self.retry_interval, self.retry_jitter, unit_interval(self.jitter.next_u64()));
                    // A waiter asks again well within its place (a queued lock's or a permit's) or
                    // its intent (a writer's, which lasts a lease), so neither lapses while it
                    // waits.
                    let kept = match self.access {
                        Access::Write | Access::Permit(_) => Some(self.queue_wait.unwrap_or(lease)),
                        _ => self.queue_wait,
                    };
                    let pause = kept.map_or(pause, |wait| pause.min(wait / 3));
                    let retry_at = earliest([Some(now + pause), deadline]).unwrap_or(now);
                    self.state = State::Waiting { retry_at, lease, attempt };
                    return;
                }
            },
            Answer::Mismatch { stored } => self.mismatch(stored),
            Answer::Unexpected(other) => Error::Acquire { name: self.name(), cause: unexpected("acquire", &other) },
            Answer::Failed(cause) => Error::Acquire { name: self.name(), cause },
        };
        // A writer that waited leaves no intent holding readers out for a whole lease, nor a
        // permit's waiter a place in line, nor a queued waiter a place the store would hand the
        // lock to (an attempt abandoned at its deadline is withdrawn again, or its late grant
        // given back, when its answer comes).
        if !attempt.nowait {
            self.give_up_place(now);
        }
        self.out.emit(LockEvent::Failed(error));
    }

    pub(super) fn on_extend_reply(
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
        let error = match self.answer(reply) {
            // A reader granted another generation lost its lease, and a writer wrote meanwhile:
            // what it read is stale. It holds the new read lease only until it gives it back.
            Answer::Granted { fence: granted, .. } if self.access == Access::Read && granted != fence => {
                self.note_fence(granted);
                self.lose(fence, &previous);
                self.start_release(now, None, true);
                self.out.emit(LockEvent::Failed(self.not_owned()));
                return;
            }
            Answer::Granted { fence: granted, poisoned } => match self.regression(granted) {
                Some(cause) => Error::Extend { name: self.name(), cause },
                None => {
                    self.note_fence(granted);
                    // A write lease lost and granted again: writes under the old fence are
                    // fenced out, and what they protected may be half written.
                    self.poisoned |= poisoned || (self.access == Access::Write && granted != fence);
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
            // An operator revoked this very lease: lost, and told why. (A lease whose validity
            // had run out was reported lost then, once; the failed extend still says why.)
            Answer::Revoked { fence: revoked, reason } if revoked == fence => {
                if matches!(previous, State::Held { .. }) {
                    self.lost(fence, LossReason::Revoked(reason.clone()));
                }
                self.state = State::Idle;
                let cause = LossCause::Revoked(reason);
                self.out.emit(LockEvent::Failed(Error::Lost { name: self.name(), cause }));
                return;
            }
            Answer::Refused | Answer::Revoked { .. } => {
                self.lose(fence, &previous);
                self.state = State::Idle;
                self.out.emit(LockEvent::Failed(self.not_owned()));
                return;
            }
            // The store keeps no permit under this holder's count: the permit is gone.
            Answer::Mismatch { stored } => {
                self.lose(fence, &previous);
                self.state = State::Idle;
                self.out.emit(LockEvent::Failed(self.mismatch(stored)));
                return;
            }
            Answer::Unexpected(other) => Error::Extend { name: self.name(), cause: unexpected("extend", &other) },
            Answer::Failed(cause) => Error::Extend { name: self.name(), cause },
        };
        self.state = previous;
        self.out.emit(LockEvent::Failed(error));
    }

    pub(super) fn on_downgrade_reply(
        &mut self,
        now: Timestamp,
        flight: Flight,
        lease: Duration,
        fence: FencingToken,
        quiet: bool,
        reply: Result<StoreReply, BackendError>,
    ) {
        let failed = |this: &Self, cause| LockEvent::Failed(Error::Acquire { name: this.name(), cause });
        let (state, event) = match reply {
            Ok(StoreReply::Fence(Some(generation))) => {
                // The write is over, cleanly, and the token reads (`poisoned` still tells how the
                // write began).
                self.access = Access::Read;
                match self.regression(generation) {
                    Some(cause) => (State::Stale { fence: generation }, failed(self, cause)),
                    None => {
                        self.note_fence(generation);
                        let valid_until = self.validity_start(now, flight) + local_validity(lease);
                        if now < valid_until {
                            (
                                State::Held { fence: generation, valid_until },
                                LockEvent::Downgraded { generation, valid_until },
                            )
                        } else {
                            (State::Stale { fence: generation }, failed(self, BackendError::late_grant()))
                        }
                    }
                }
            }
            Ok(StoreReply::Fence(None)) => (State::Idle, LockEvent::Failed(self.not_owned())),
            other => {
                // Whether it applied is unknown: the write lease is not counted on, and a release
                // gives back both sides.
                self.maybe_reading = true;
                let cause = match other {
                    Ok(other) => unexpected("downgrade", &other),
                    Err(cause) => cause,
                };
                (State::Stale { fence }, failed(self, cause))
            }
        };
        self.state = state;
        if !quiet {
            self.out.emit(event);
        }
    }

    pub(super) fn on_release_reply(
        &mut self,
        fence: Option<FencingToken>,
        quiet: bool,
        reply: Result<StoreReply, BackendError>,
    ) {
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

    /// The error for a semaphore whose stored permit count is `stored`, not the one asked.
    fn mismatch(&self, stored: u32) -> Error {
        let asked = match self.access {
            Access::Permit(asked) => asked.get(),
            _ => 0,
        };
        Error::Settings(SettingsError::field(
            "permits",
            format!(
                "semaphore '{}' is in use with {stored} permits in the store, and this holder asks for {asked}: \
                 every process must use the same count (it can change once nobody holds or waits)",
                self.name()
            ),
        ))
    }

    /// `reply` to an acquire or extend, in the shape of this holder's access.
    pub(super) fn answer(&self, reply: Result<StoreReply, BackendError>) -> Answer {
        Self::answer_as(self.access, reply)
    }

    /// `reply` to an acquire or extend sent for `access`.
    pub(super) fn answer_as(access: Access, reply: Result<StoreReply, BackendError>) -> Answer {
        match (access, reply) {
            (_, Err(cause)) => Answer::Failed(cause),
            (Access::Write, Ok(StoreReply::Write(Some(WriteGrant { fence, poisoned })))) => {
                Answer::Granted { fence, poisoned }
            }
            (Access::Write, Ok(StoreReply::Write(None)))
            | (Access::Exclusive | Access::Read, Ok(StoreReply::Fence(None))) => Answer::Refused,
            (Access::Exclusive | Access::Read, Ok(StoreReply::Fence(Some(fence)))) => {
                Answer::Granted { fence, poisoned: false }
            }
            (Access::Exclusive, Ok(StoreReply::Revoked { fence, reason })) => Answer::Revoked { fence, reason },
            (Access::Permit(asked), Ok(StoreReply::Permit(PermitAnswer { permits, .. }))) if permits != asked.get() => {
                Answer::Mismatch { stored: permits }
            }
            (Access::Permit(_), Ok(StoreReply::Permit(PermitAnswer { fence: Some(fence), .. }))) => {
                Answer::Granted { fence, poisoned: false }
            }
            (Access::Permit(_), Ok(StoreReply::Permit(PermitAnswer { fence: None, .. }))) => Answer::Refused,
            (_, Ok(other)) => Answer::Unexpected(other),
        }
    }
}
