//! Durations as Node gives them: milliseconds in a `number`.

use std::time::Duration;

use tenure::binding::Unit;

use crate::fail::Fail;

/// `value` milliseconds as a duration: a finite number of at least 1 ms (up to the core's
/// bound), else a settings error naming `field` that never echoes the value.
pub(crate) fn millis(field: &str, value: f64) -> Result<Duration, Fail> {
    Ok(Unit::Millis.duration(field, value)?)
}

/// Checks `value` as [`millis`] does, for an option the JavaScript half uses later.
#[napi_derive::napi]
pub fn check_duration(field: String, value: f64) -> napi::Result<()> {
    crate::fail::sync(millis(&field, value).map(drop))
}

/// [`millis`] for an optional value.
pub(crate) fn optional(field: &str, value: Option<f64>) -> Result<Option<Duration>, Fail> {
    value.map(|v| millis(field, v)).transpose()
}
