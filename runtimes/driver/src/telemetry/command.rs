//! [`Metered`]: one command of a holder (acquire, renewal, release) being metered, from its call
//! to its outcome; the outcome recorded the same way for locks, read-write locks, semaphores and
//! task locks.

use std::time::{Instant, SystemTime};

use tenure_core::{BackendErrorKind, Error};

use std::sync::atomic::Ordering;

use super::instruments::{ACQUIRE_DURATION, RENEWALS, WAIT_DURATION};
use super::meter::{Labels, Meter};
use super::{SpanRecord, Value, record, span};

/// A command's completion event, as the metrics read it.
pub(crate) trait Completion {
    /// The fencing token the command left the holder with.
    fn fence(&self) -> Option<u64>;
    /// An extend that granted a lapsed lease again, under a greater fence.
    fn regranted(&self) -> bool;
}

/// A command being metered: [`Metered::finish`] records its outcome. An acquire dropped
/// unfinished (the caller stopped waiting) is recorded as `cancelled`.
#[derive(Debug)]
pub(crate) struct Metered<'a> {
    meter: &'a Meter,
    labels: &'a Labels,
    operation: &'static str,
    /// The fence held when the command began (a release's).
    fence: Option<u64>,
    since: Instant,
    wall: SystemTime,
    done: bool,
}

impl<'a> Metered<'a> {
    pub(super) fn new(meter: &'a Meter, labels: &'a Labels, operation: &'static str, fence: Option<u64>) -> Self {
        if matches!(operation, "acquire" | "enter") {
            meter.acquire_began();
        }
        Self { meter, labels, operation, fence, since: Instant::now(), wall: SystemTime::now(), done: false }
    }

    /// Records the command's outcome.
    pub(crate) fn finish<E: Completion>(mut self, ended: Result<&E, &Error>) {
        self.done = true;
        match self.operation {
            "acquire" | "enter" => {
                let (outcome, error) = match ended {
                    Ok(_) => ("acquired", None),
                    Err(e) if e.is_timeout() => ("timed_out", Some(e.to_string())),
                    Err(e) if e.is_would_block() => ("would_block", None),
                    Err(e) => ("error", Some(e.to_string())),
                };
                self.acquired(outcome, ended.ok().and_then(Completion::fence), error);
            }
            "extend" => {
                let (outcome, error) = renewal(ended);
                record(&RENEWALS, 1.0, &self.labels.attributes(&[("outcome", outcome)]));
                self.meter.renewal_ended(outcome, error);
            }
            "release" | "exit" => {
                let outcome = match ended {
                    Ok(_) => "released",
                    Err(e) if e.is_not_owned() => "not_owned",
                    Err(_) => "error",
                };
                let error = ended.err().map(ToString::to_string);
                self.span("tenure.release", outcome, self.fence, error);
            }
            // A downgrade keeps the lease (its fence is the generation read): no span of its own.
            _ => {}
        }
    }

    fn acquired(&self, outcome: &'static str, fence: Option<u64>, error: Option<String>) {
        let now = Instant::now();
        let outcome_attributes = self.labels.attributes(&[("outcome", outcome)]);
        record(&ACQUIRE_DURATION, now.saturating_duration_since(self.since).as_secs_f64(), &outcome_attributes);
        if let Some(since) = self.meter.wait_ended() {
            self.labels.gauges.waiters.fetch_sub(1, Ordering::Relaxed);
            record(&WAIT_DURATION, now.saturating_duration_since(since).as_secs_f64(), &outcome_attributes);
        }
        self.span("tenure.acquire", outcome, fence, error);
    }

    fn span(&self, name: &'static str, outcome: &'static str, fence: Option<u64>, error: Option<String>) {
        let mut attributes = self.labels.attributes(&[("outcome", outcome)]);
        if let Some(fence) = fence {
            attributes.push(("fence", Value::Int(i64::try_from(fence).unwrap_or(i64::MAX))));
        }
        let (start, end) = (self.wall, SystemTime::now());
        span(&SpanRecord { name, start, end, attributes, events: Vec::new(), error });
    }
}

impl Drop for Metered<'_> {
    fn drop(&mut self) {
        if !self.done && matches!(self.operation, "acquire" | "enter") {
            self.acquired("cancelled", None, None);
        }
    }
}

/// A renewal's outcome (see [`super::RENEWALS`]), and what failed.
fn renewal<E: Completion>(ended: Result<&E, &Error>) -> (&'static str, Option<String>) {
    match ended {
        Ok(event) if event.regranted() => ("regranted", None),
        Ok(_) => ("ok", None),
        Err(e) if e.is_not_owned() => ("taken", None),
        Err(e) if e.backend_error().is_some_and(|cause| cause.kind() == BackendErrorKind::FenceRegression) => {
            ("fence_regression", Some(e.to_string()))
        }
        Err(e) => ("error", Some(e.to_string())),
    }
}
