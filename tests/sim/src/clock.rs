//! A worker's monotonic clock against true time: an offset, a drift rate, forward jumps and
//! (out of bounds) stalls. Piecewise linear, re-anchored at every change, so a reading never goes
//! backwards.

use tenure_core::Timestamp;

/// One worker's clock.
#[derive(Clone, Debug)]
pub(crate) struct Clock {
    anchor_true: u64,
    anchor_local: u64,
    rate: f64,
    stalled: bool,
}

impl Clock {
    /// A clock reading `offset` at true time `now`, running at `rate` (1.0 keeps true time).
    pub(crate) fn new(now: u64, offset: u64, rate: f64) -> Self {
        Self { anchor_true: now, anchor_local: offset, rate, stalled: false }
    }

    /// The reading at true time `now` (never before the last anchor).
    pub(crate) fn local(&self, now: u64) -> Timestamp {
        Timestamp::from_nanos(self.read(now))
    }

    fn read(&self, now: u64) -> u64 {
        if self.stalled {
            return self.anchor_local;
        }
        let elapsed = now.saturating_sub(self.anchor_true);
        self.anchor_local + (elapsed as f64 * self.rate) as u64
    }

    /// The first true instant at or after `now` at which the clock reads at least `local`;
    /// `None` while the clock is stalled below it.
    pub(crate) fn true_time_of(&self, now: u64, local: Timestamp) -> Option<u64> {
        let target = local.as_nanos();
        if self.read(now) >= target {
            return Some(now);
        }
        if self.stalled {
            return None;
        }
        let mut at = self.anchor_true + ((target - self.anchor_local) as f64 / self.rate).ceil() as u64;
        at = at.max(now);
        while self.read(at) < target {
            at += 1;
        }
        Some(at)
    }

    /// Jumps forward by `by`.
    pub(crate) fn jump(&mut self, now: u64, by: u64) {
        self.reanchor(now);
        self.anchor_local += by;
    }

    /// Stops (true) or restarts (false) the clock at `now`.
    pub(crate) fn stall(&mut self, now: u64, stalled: bool) {
        self.reanchor(now);
        self.stalled = stalled;
    }

    fn reanchor(&mut self, now: u64) {
        self.anchor_local = self.read(now);
        self.anchor_true = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_never_go_back_and_deadlines_map_to_the_first_true_instant() {
        let mut clock = Clock::new(0, 5_000, 0.991);
        let mut last = clock.local(0);
        for now in (0..10_000_000).step_by(997) {
            let local = clock.local(now);
            assert!(local >= last);
            last = local;
        }
        let target = Timestamp::from_nanos(5_000 + 1_000_000);
        let at = clock.true_time_of(0, target).expect("a running clock reaches it");
        assert!(clock.local(at) >= target && clock.local(at - 1) < target);
        clock.jump(at, 500);
        assert_eq!(clock.local(at), target + std::time::Duration::from_nanos(500));
        clock.stall(at + 10, true);
        assert_eq!(clock.true_time_of(at + 10, target + std::time::Duration::from_secs(1)), None);
        assert_eq!(clock.local(at + 1_000_000), clock.local(at + 10));
    }
}
