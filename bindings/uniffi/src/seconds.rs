//! Durations as the foreign side gives them: seconds in an `f64` (Swift's `TimeInterval`; the
//! Kotlin package converts `kotlin.time.Duration` and `java.time.Duration`), checked by the core
//! so that NaN, infinities, zero, negatives and values past 100 years are errors naming the
//! setting.

use std::time::Duration;

use crate::TenureError;

/// `value` seconds as a duration, or a settings error naming `field` (never echoing the value).
pub(crate) fn seconds(field: &str, value: f64) -> Result<Duration, TenureError> {
    Ok(tenure::core::time::seconds(field, value)?)
}

/// [`seconds`] for an optional value.
pub(crate) fn optional(field: &str, value: Option<f64>) -> Result<Option<Duration>, TenureError> {
    value.map(|v| seconds(field, v)).transpose()
}

/// A duration as seconds.
pub(crate) fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}
