//! [`Meter`]: what one holder (one machine) has told the metrics, so that every gauge it moves
//! comes back (a lease counted among the holders leaves them exactly once, however it ends).
//!
//! The driver calls it from three places: each turn of the machine (its events say why a lease
//! ended; its state says what is held, waited for or led), the holder's commands (an acquire's
//! outcome and duration, a renewal's outcome), and the keep-alive task (a renewal that failed,
//! validity running low).

use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use std::sync::atomic::Ordering;

use super::command::Metered;
use super::gauges::{Gauges, register};
use super::instruments::{HOLD_DURATION, LEADER_CHANGES, LOSSES, VALIDITY_WARNINGS};
use super::{SpanEvent, SpanRecord, Value, enabled, record, span};

/// The most events one hold span keeps (a lease renewed for days, failing now and then).
const SPAN_EVENTS: usize = 32;

/// What a holder's machine shows after a turn: the fence of the lease it counts on, the last
/// lease it lost and why (`expired` or `taken`), and whether an acquire of it waits for others.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Holding {
    pub(crate) held: Option<u64>,
    pub(crate) loss: Option<(u64, &'static str)>,
    pub(crate) waiting: bool,
}

/// One holder's part of the metrics.
#[derive(Debug, Default)]
pub(crate) struct Meter {
    labels: OnceLock<Labels>,
    state: Mutex<State>,
}

/// The attributes every measurement of the holder carries.
#[derive(Debug)]
pub(super) struct Labels {
    primitive: &'static str,
    /// The name as reported (bounded: see `names`).
    name: Arc<str>,
    /// The primitive and name's state gauges in this process.
    pub(super) gauges: Arc<Gauges>,
}

#[derive(Debug, Default)]
struct State {
    /// The lease counted among the holders.
    hold: Option<Hold>,
    /// Why the lease held ends, said by an event of the current turn.
    cause: Option<&'static str>,
    /// The last renewal failed (a loss by expiry now means the store was unreachable).
    renewal_failed: bool,
    /// A metered acquire runs (its `Metered` ends the wait it is counted in).
    acquiring: bool,
    /// Since the acquire under way was first refused (counted among the waiters).
    waiting: Option<Instant>,
    /// The fence of a lease told lost before its machine said so (see [`Meter::lost`]): not
    /// counted again while the machine still shows it.
    lost: Option<u64>,
    /// Counted as leader.
    leading: bool,
}

#[derive(Debug)]
struct Hold {
    fence: u64,
    since: Instant,
    wall: SystemTime,
    events: Vec<SpanEvent>,
}

impl Meter {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn labels(&self, primitive: &'static str, name: &str) -> &Labels {
        self.labels.get_or_init(|| {
            let (name, gauges) = register(primitive, name);
            Labels { primitive, name, gauges }
        })
    }

    /// Says why the lease held ends, before the state that shows it ending is synced.
    pub(crate) fn ending(&self, cause: &'static str) {
        if enabled() {
            let mut state = self.state();
            if state.hold.is_some() {
                // The first cause said in a turn wins (a loss, then the release after it).
                state.cause.get_or_insert(cause);
            }
        }
    }

    /// The keep-alive task saw the lease held now lost, which its machine says only when it is
    /// driven next: counted now, once, by the cause the keep-alive decided (`expired`,
    /// `unreachable`, `taken`, `fence_regression`, `revoked`: the same as the loss's error).
    pub(crate) fn lost(&self, fence: u64, cause: &'static str) {
        let Some(labels) = self.labels.get() else { return };
        let mut state = self.state();
        // Only the lease the keep-alive kept: a later one (granted again under another fence, or
        // acquired anew) is not this loss.
        let Some(hold) = state.hold.take_if(|hold| hold.fence == fence) else { return };
        state.lost = Some(hold.fence);
        drop(state);
        end_hold(labels, hold, cause, Instant::now());
    }

    /// Whether this meter counts something (its gauges must then come back even if the sink is
    /// removed meanwhile): the driver syncs it after every turn while it does.
    #[inline]
    pub(crate) fn counting(&self) -> bool {
        self.labels.get().is_some()
    }

    /// Syncs what the holder's machine shows after a turn (see [`Holding`]).
    pub(crate) fn sync(&self, primitive: &'static str, name: &str, now_holding: Holding) {
        if !enabled() && !self.counting() {
            return;
        }
        let Holding { held, loss, waiting } = now_holding;
        let labels = self.labels(primitive, name);
        let mut state = self.state();
        let now = Instant::now();
        if held.is_none() || held != state.lost {
            state.lost = None;
        }
        match (&state.hold, held) {
            (Some(hold), Some(fence)) if hold.fence == fence => {}
            (None, None) => {}
            (None, Some(fence)) if state.lost == Some(fence) => {}
            (_, held) => {
                if let Some(hold) = state.hold.take() {
                    // Why it ended: this turn's event, else the loss the machine keeps for that
                    // fence, else a release (or, replaced by another lease, a lapse).
                    let kept = loss.filter(|(fence, _)| *fence == hold.fence).map(|(_, cause)| cause);
                    let fallback = if held.is_some() { "expired" } else { "released" };
                    let cause = state.cause.take().or(kept).unwrap_or(fallback);
                    let cause = if cause == "expired" && state.renewal_failed { "unreachable" } else { cause };
                    end_hold(labels, hold, cause, now);
                }
                if let Some(fence) = held {
                    state.hold = Some(start_hold(labels, fence, now));
                    state.renewal_failed = false;
                }
            }
        }
        state.cause = None;
        if waiting && state.acquiring && state.waiting.is_none() {
            state.waiting = Some(now);
            labels.gauges.waiters.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Syncs whether this process leads, after a turn of an election.
    pub(crate) fn sync_leading(&self, name: &str, leading: bool, fence: Option<u64>) {
        if !enabled() && !self.counting() {
            return;
        }
        let labels = self.labels("election", name);
        let mut state = self.state();
        let cause = state.cause.take();
        if state.leading == leading {
            return;
        }
        state.leading = leading;
        labels.gauges.leaders.fetch_add(if leading { 1 } else { -1 }, Ordering::Relaxed);
        if let Some(fence) = fence.filter(|_| leading) {
            labels.gauges.fence.fetch_max(fence, Ordering::Relaxed);
        }
        let outcome = if leading { "elected" } else { cause.unwrap_or("expired") };
        record(&LEADER_CHANGES, 1.0, &labels.attributes(&[("outcome", outcome)]));
    }

    /// Says why leadership ends (`stopped`, `taken` or `expired`), before the state shows it.
    pub(crate) fn leadership_ending(&self, outcome: &'static str) {
        if enabled() {
            self.state().cause.get_or_insert(outcome);
        }
    }

    /// Starts metering the command `operation` (`acquire`, `enter`, `extend`, `release` or
    /// `exit`) of the holder whose lease now has `fence()` (read only with a sink installed):
    /// `None` without one.
    #[inline]
    pub(crate) fn command(
        &self,
        primitive: &'static str,
        name: &str,
        operation: &'static str,
        fence: impl FnOnce() -> Option<u64>,
    ) -> Option<Metered<'_>> {
        enabled().then(|| Metered::new(self, self.labels(primitive, name), operation, fence()))
    }

    /// A renewal ended with `outcome` (see [`super::RENEWALS`]); `error` is what failed.
    pub(super) fn renewal_ended(&self, outcome: &'static str, error: Option<String>) {
        let mut state = self.state();
        let failed = outcome == "error";
        state.renewal_failed = failed;
        if let Some(hold) = state.hold.as_mut().filter(|_| failed) {
            let error = error.unwrap_or_default();
            hold.event("tenure.renewal_failed", vec![("error", Value::Str(error.into()))]);
        }
    }

    /// A metered acquire begins: a refusal from now on counts it among the waiters.
    pub(super) fn acquire_began(&self) {
        self.state().acquiring = true;
    }

    /// Ends the metered acquire, and its wait if it was counted among the waiters: since when it
    /// waited.
    pub(super) fn wait_ended(&self) -> Option<Instant> {
        let mut state = self.state();
        state.acquiring = false;
        state.waiting.take()
    }

    /// A kept lease's renewals failed until only `left` of its validity remains (the keep-alive
    /// task says it once per run of failures): counted, and an event on the hold's span.
    pub(crate) fn validity_low(&self, fence: u64, left: Duration) {
        if !enabled() {
            return;
        }
        let mut state = self.state();
        let Some(hold) = state.hold.as_mut().filter(|hold| hold.fence == fence) else { return };
        let left_ms = i64::try_from(left.as_millis()).unwrap_or(i64::MAX);
        hold.event("tenure.validity_low", vec![("validity_left_ms", Value::Int(left_ms))]);
        drop(state);
        if let Some(labels) = self.labels.get() {
            record(&VALIDITY_WARNINGS, 1.0, &labels.attributes(&[]));
        }
    }
}

impl Drop for Meter {
    /// A holder dropped while its lease was counted (nobody released it: it will run out on the
    /// store), while it waited, or while it led leaves the gauges as if it had ended (whether or
    /// not a sink is installed now: the gauges must come back).
    fn drop(&mut self) {
        let Some(labels) = self.labels.get() else { return };
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Some(hold) = state.hold.take() {
            end_hold(labels, hold, "dropped", Instant::now());
        }
        if state.waiting.take().is_some() {
            labels.gauges.waiters.fetch_sub(1, Ordering::Relaxed);
        }
        if state.leading {
            labels.gauges.leaders.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Labels {
    /// `primitive`, `name`, then `extra`.
    pub(super) fn attributes(&self, extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, Value)> {
        let mut attributes = Vec::with_capacity(2 + extra.len());
        attributes.push(("primitive", Value::Static(self.primitive)));
        attributes.push(("name", Value::Str(self.name.clone())));
        attributes.extend(extra.iter().map(|(key, value)| (*key, Value::Static(value))));
        attributes
    }
}

impl Hold {
    fn event(&mut self, name: &'static str, attributes: Vec<(&'static str, Value)>) {
        if self.events.len() < SPAN_EVENTS {
            self.events.push(SpanEvent { name, at: SystemTime::now(), attributes });
        }
    }
}

fn start_hold(labels: &Labels, fence: u64, now: Instant) -> Hold {
    labels.gauges.holders.fetch_add(1, Ordering::Relaxed);
    labels.gauges.fence.fetch_max(fence, Ordering::Relaxed);
    Hold { fence, since: now, wall: SystemTime::now(), events: Vec::new() }
}

fn end_hold(labels: &Labels, mut hold: Hold, cause: &'static str, now: Instant) {
    labels.gauges.holders.fetch_sub(1, Ordering::Relaxed);
    let held = now.saturating_duration_since(hold.since).as_secs_f64();
    record(&HOLD_DURATION, held, &labels.attributes(&[("cause", cause)]));
    let lost = !matches!(cause, "released" | "dropped");
    if lost {
        record(&LOSSES, 1.0, &labels.attributes(&[("cause", cause)]));
        hold.event("tenure.lost", vec![("cause", Value::Static(cause))]);
    }
    let mut attributes = labels.attributes(&[("cause", cause)]);
    attributes.push(("fence", Value::Int(i64::try_from(hold.fence).unwrap_or(i64::MAX))));
    let error = lost.then(|| format!("the lease was lost: {cause}"));
    span(&SpanRecord {
        name: "tenure.hold",
        start: hold.wall,
        end: SystemTime::now(),
        attributes,
        events: hold.events,
        error,
    });
}
