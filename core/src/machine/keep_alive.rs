//! [`KeepAlive`]: when a held lease is renewed, retried, given up or ended (DESIGN §4.8).
//!
//! The policy every front end follows to keep a lease while a long job runs, so no user writes a
//! renewal loop and every front end renews alike. It decides; the driver runs what it decides
//! (an extend, a release) on the holder's machine, whose validity it reads back.

use std::time::Duration;

use crate::time::Timestamp;

/// The longest pause before a failed renewal is tried again.
pub const MAX_RETRY_PAUSE: Duration = Duration::from_secs(1);

/// What a kept lease needs next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeepAliveStep {
    /// Renew (extend) the lease now.
    Renew,
    /// Nothing until this instant (a renewal, a retry, the end of validity or of the hold).
    Wait(Timestamp),
    /// The maximum hold is reached: release the lease and stop.
    Release,
    /// The lease is no longer valid (it ran out without a confirmed renewal, or it was lost or
    /// released): stop.
    Lost,
    /// Renewals are failing (or unanswered) and less than the warning threshold of validity is
    /// left, this much: tell the job, so it checkpoints. Given once per run of failures (a
    /// confirmed renewal starts a new one); call [`KeepAlive::warned`] then ask again.
    Warn(Duration),
}

/// The renewal schedule of one held lease.
///
/// - A renewal is due once a third of the lease has passed since the request that granted the
///   current validity was sent — when the validity left falls to two thirds of the lease.
/// - A renewal that fails without losing the lease (a timeout, an unreachable store) is retried
///   after [`KeepAlive::retry_pause`] (a tenth of the lease, at most [`MAX_RETRY_PAUSE`]) for as
///   long as the lease is still valid.
/// - At `max_hold` after the start the lease is released, renewed or not: a hung job cannot
///   keep a lock for ever.
/// - Once the validity has run out without a confirmed renewal, the lease is lost.
/// - While renewals fail (or one goes unanswered), a warning is due once the validity left falls
///   below [`KeepAlive::warn_below`] (a third of the lease unless set): the job's last chance to
///   checkpoint before the loss. [`KeepAlive::warning_at`] says when, for a renewal in flight.
///
/// ```
/// use std::time::Duration;
/// use tenure_core::{KeepAlive, KeepAliveStep, Timestamp};
///
/// let lease = Duration::from_secs(30);
/// let start = Timestamp::from_nanos(0);
/// let keep = KeepAlive::new(start, lease, Duration::from_secs(3600));
/// let valid_until = start + lease - lease / 100; // what the machine reports for the grant
/// let due = valid_until - lease * 2 / 3;
/// assert_eq!(keep.next(start, Some(valid_until)), KeepAliveStep::Wait(due));
/// assert_eq!(keep.next(due, Some(valid_until)), KeepAliveStep::Renew);
/// assert_eq!(keep.next(valid_until, Some(valid_until)), KeepAliveStep::Lost);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeepAlive {
    lease: Duration,
    hold_until: Timestamp,
    /// After a failed renewal: not before this instant.
    retry_at: Option<Timestamp>,
    warn_below: Duration,
    /// A renewal was tried and none confirmed since.
    failing: bool,
    /// The warning of this run of failures was given.
    warned: bool,
}

impl KeepAlive {
    /// Keeps a lease of `lease` from `now` for at most `max_hold` (`Duration::MAX`: no bound).
    pub fn new(now: Timestamp, lease: Duration, max_hold: Duration) -> Self {
        Self {
            lease,
            hold_until: now.saturating_add(max_hold),
            retry_at: None,
            warn_below: lease / 3,
            failing: false,
            warned: false,
        }
    }

    /// Warns once renewals fail and less than `threshold` of validity is left (instead of a third
    /// of the lease); see [`KeepAlive::check_warning`].
    pub fn set_warning(&mut self, threshold: Duration) -> Result<(), crate::Error> {
        self.warn_below = Self::check_warning(self.lease, threshold)?;
        Ok(())
    }

    /// A warning threshold for a lease of `lease`: greater than 0 and less than half the lease,
    /// else refused naming `warn_below`. A renewal is due when two thirds of the lease are left,
    /// and a healthy one must have time to be answered before the warning: a sixth of the lease
    /// at least (a threshold near two thirds would warn at every routine renewal).
    pub fn check_warning(lease: Duration, threshold: Duration) -> Result<Duration, crate::Error> {
        let threshold = crate::time::positive("warn_below", threshold)?;
        if threshold >= lease / 2 {
            let message = format!(
                "warn_below must be less than half the lease_duration ({lease:?}): renewals are due when two thirds of \
                 the lease are left, and the warning comes when they fail and less than warn_below of the lease's \
                 validity is left (default a third of the lease)"
            );
            return Err(crate::error::SettingsError::field("warn_below", message).into());
        }
        Ok(threshold)
    }

    /// The validity left below which failing renewals warn.
    pub fn warn_below(&self) -> Duration {
        self.warn_below
    }

    /// Whether a renewal was tried and none confirmed since.
    pub fn failing(&self) -> bool {
        self.failing
    }

    /// When the warning is due for a lease valid until `valid_until`, while renewals fail or one is
    /// in flight: `None` once given for this run of failures.
    pub fn warning_at(&self, valid_until: Timestamp) -> Option<Timestamp> {
        (!self.warned).then(|| valid_until.saturating_sub(self.warn_below))
    }

    /// A renewal is being sent: until it is confirmed, the lease counts as failing to renew.
    pub fn renewing(&mut self) {
        self.failing = true;
    }

    /// The warning was given: no other until a renewal is confirmed.
    pub fn warned(&mut self) {
        self.warned = true;
    }

    /// When the maximum hold is reached.
    pub fn hold_until(&self) -> Timestamp {
        self.hold_until
    }

    /// The pause before a failed renewal is tried again.
    pub fn retry_pause(&self) -> Duration {
        (self.lease / 10).clamp(Duration::from_millis(1), MAX_RETRY_PAUSE)
    }

    /// What to do at `now`, for a lease the holder may count on until `valid_until` (`None`:
    /// it holds nothing any more).
    pub fn next(&self, now: Timestamp, valid_until: Option<Timestamp>) -> KeepAliveStep {
        if now >= self.hold_until {
            return KeepAliveStep::Release;
        }
        let Some(valid_until) = valid_until.filter(|&until| now < until) else {
            return KeepAliveStep::Lost;
        };
        let warn_at = self.warning_at(valid_until).filter(|_| self.failing);
        if warn_at.is_some_and(|at| now >= at) {
            return KeepAliveStep::Warn(valid_until.saturating_duration_since(now));
        }
        let due = valid_until.saturating_sub(self.lease * 2 / 3);
        let due = self.retry_at.map_or(due, |retry| due.max(retry));
        if now >= due {
            return KeepAliveStep::Renew;
        }
        let wake = due.min(valid_until).min(self.hold_until);
        KeepAliveStep::Wait(warn_at.map_or(wake, |at| wake.min(at)))
    }

    /// A renewal was confirmed: the next is due a third of the lease after its send, and a new
    /// run of failures will warn again.
    pub fn renewed(&mut self) {
        self.retry_at = None;
        self.failing = false;
        self.warned = false;
    }

    /// A renewal at `now` failed without losing the lease: try again after the retry pause.
    pub fn failed(&mut self, now: Timestamp) {
        self.retry_at = Some(now + self.retry_pause());
        self.failing = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEASE: Duration = Duration::from_secs(3);

    fn at(ms: u64) -> Timestamp {
        Timestamp::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn renewals_come_every_third_of_the_lease_and_retries_while_valid() {
        let mut keep = KeepAlive::new(at(0), LEASE, Duration::from_secs(60));
        let valid = at(2_970); // sent at 0, lease less 1 %
        assert_eq!(keep.next(at(0), Some(valid)), KeepAliveStep::Wait(at(970)));
        assert_eq!(keep.next(at(970), Some(valid)), KeepAliveStep::Renew);
        keep.failed(at(1_000));
        assert_eq!(keep.retry_pause(), Duration::from_millis(300));
        assert_eq!(keep.next(at(1_000), Some(valid)), KeepAliveStep::Wait(at(1_300)));
        assert_eq!(keep.next(at(1_300), Some(valid)), KeepAliveStep::Renew);
        keep.failed(at(2_800));
        assert_eq!(keep.next(at(2_800), Some(valid)), KeepAliveStep::Warn(Duration::from_millis(170)));
        keep.warned();
        // The retry would come after the validity: wake at its end, to report the loss.
        assert_eq!(keep.next(at(2_800), Some(valid)), KeepAliveStep::Wait(valid));
        assert_eq!(keep.next(valid, Some(valid)), KeepAliveStep::Lost);
        keep.renewed();
        let renewed = at(2_900 + 2_970); // a renewal sent at 2.9 s
        assert_eq!(keep.next(at(3_000), Some(renewed)), KeepAliveStep::Wait(at(3_870)));
        assert_eq!(keep.next(at(3_000), None), KeepAliveStep::Lost);
    }

    #[test]
    fn the_maximum_hold_ends_the_lease_whatever_its_validity() {
        let keep = KeepAlive::new(at(100), LEASE, Duration::from_millis(500));
        assert_eq!(keep.hold_until(), at(600));
        assert_eq!(keep.next(at(100), Some(at(3_070))), KeepAliveStep::Wait(at(600)));
        assert_eq!(keep.next(at(600), Some(at(3_070))), KeepAliveStep::Release);
        assert_eq!(keep.next(at(600), None), KeepAliveStep::Release);
        let unbounded = KeepAlive::new(at(100), LEASE, Duration::MAX);
        assert_eq!(unbounded.hold_until(), Timestamp::MAX);
    }

    #[test]
    fn failing_renewals_warn_once_below_a_third_of_the_lease() {
        let mut keep = KeepAlive::new(at(0), LEASE, Duration::from_secs(60));
        assert_eq!(keep.warn_below(), Duration::from_secs(1));
        let valid = at(2_970);
        // Renewals that go through never warn, however late in the validity they are looked at.
        assert_eq!(keep.next(at(2_500), Some(valid)), KeepAliveStep::Renew);
        assert!(!keep.failing());
        keep.renewing();
        keep.failed(at(1_000));
        assert!(keep.failing());
        assert_eq!(keep.warning_at(valid), Some(at(1_970)));
        // Waits for the retry, then for the warning, then warns with the validity left.
        assert_eq!(keep.next(at(1_000), Some(valid)), KeepAliveStep::Wait(at(1_300)));
        keep.failed(at(1_900));
        assert_eq!(keep.next(at(1_900), Some(valid)), KeepAliveStep::Wait(at(1_970)));
        assert_eq!(keep.next(at(1_970), Some(valid)), KeepAliveStep::Warn(Duration::from_secs(1)));
        keep.warned();
        assert_eq!(keep.warning_at(valid), None);
        assert_eq!(keep.next(at(1_970), Some(valid)), KeepAliveStep::Wait(at(2_200)));
        // A confirmed renewal ends the run: the next run of failures warns again.
        keep.renewed();
        let renewed = at(2_200 + 2_970);
        assert_eq!(keep.warning_at(renewed), Some(at(4_170)));
        assert_eq!(keep.next(at(4_200), Some(renewed)), KeepAliveStep::Renew);
    }

    #[test]
    fn the_warning_threshold_is_checked_against_the_lease() {
        let mut keep = KeepAlive::new(at(0), LEASE, Duration::MAX);
        assert_eq!(keep.set_warning(Duration::from_millis(500)), Ok(()));
        assert_eq!(keep.warn_below(), Duration::from_millis(500));
        for bad in [Duration::ZERO, Duration::from_millis(1500), Duration::from_secs(2), LEASE, LEASE * 2] {
            let error = keep.set_warning(bad).unwrap_err().to_string();
            assert!(error.contains("warn_below"), "{error}");
        }
        assert_eq!(keep.warn_below(), Duration::from_millis(500));
        let error = keep.set_warning(LEASE).unwrap_err().to_string();
        assert!(
            error.contains("less than half the lease_duration (3s)") && error.contains("default a third"),
            "{error}"
        );
        assert_eq!(keep.set_warning(Duration::from_millis(1499)), Ok(()));
    }

    #[test]
    fn a_tiny_lease_still_pauses_between_retries() {
        let keep = KeepAlive::new(at(0), Duration::from_millis(5), Duration::MAX);
        assert_eq!(keep.retry_pause(), Duration::from_millis(1));
        let long = KeepAlive::new(at(0), Duration::from_secs(600), Duration::MAX);
        assert_eq!(long.retry_pause(), MAX_RETRY_PAUSE);
    }
}
