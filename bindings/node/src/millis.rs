//! Durations as Node gives them: milliseconds in a `number`.

use std::time::Duration;

use crate::fail::Fail;

/// `value` milliseconds as a duration: a finite number of at least 1 ms (up to the core's
/// bound), else a settings error naming `field` that never echoes the value.
pub(crate) fn millis(field: &str, value: f64) -> Result<Duration, Fail> {
    let invalid = |reason: &str| Fail::Core(tenure::Error::settings(field, format!("{field} {reason}")));
    if value.is_nan() {
        return Err(invalid("must be a number of milliseconds, not NaN"));
    }
    if value.is_infinite() {
        return Err(invalid("must be a finite number of milliseconds"));
    }
    if value <= 0.0 {
        return Err(invalid("must be greater than 0"));
    }
    if value < 1.0 {
        return Err(invalid("must be at least 1 millisecond"));
    }
    let d = Duration::try_from_secs_f64(value / 1000.0).map_err(|_| invalid("must be at most 100 years"))?;
    tenure::core::time::positive(field, d).map_err(Fail::Core)
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

/// `builder` with each duration option of `options` that is set: `field: "jsName"` calls the
/// builder's `field` with the checked value (a settings error names `jsName`).
macro_rules! with_millis {
    ($builder:expr, $options:expr, $($field:ident: $js:literal),+ $(,)?) => {{
        let mut b = $builder;
        $(
            if let Some(d) = $crate::millis::optional($js, $options.$field)? {
                b = b.$field(d);
            }
        )+
        b
    }};
}
pub(crate) use with_millis;
