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

/// `builder` with each duration option of `options` that is set: `field: "name"` calls the
/// builder's `field` with the checked value (a settings error names `name`, the foreign
/// spelling). `?` on a bad value.
macro_rules! with_seconds {
    ($builder:expr, $options:expr, $($field:ident: $name:literal),+ $(,)?) => {{
        let mut b = $builder;
        $(
            if let Some(d) = $crate::seconds::optional($name, $options.$field)? {
                b = b.$field(d);
            }
        )+
        b
    }};
}
pub(crate) use with_seconds;

/// `builder` with the options every primitive shares applied: the worker, the retry jitter (if
/// the primitive has one), the environment prefix and whether to read the environment.
macro_rules! with_common {
    ($builder:expr, $options:expr $(, $jitter:ident)?) => {{
        let o = &$options;
        let mut b = $builder;
        if let Some(worker) = &o.worker {
            b = b.worker(tenure::WorkerId::new(worker)?);
        }
        $(
            if let Some(j) = o.$jitter {
                b = b.retry_jitter(j);
            }
        )?
        if let Some(prefix) = &o.env_prefix {
            b = b.env_prefix(prefix);
        }
        if let Some(load) = o.env_load {
            b = b.env_load(load);
        }
        b
    }};
}
pub(crate) use with_common;
