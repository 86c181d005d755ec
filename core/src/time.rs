//! Time as the core sees it: instants handed in by the caller, never read from a clock.
//!
//! [`Timestamp`] is the monotonic instant every input carries; [`WallTime`] is a calendar instant
//! (microseconds since the Unix epoch) as stores write it into leader records. Durations are
//! [`std::time::Duration`]; the helpers here turn user numbers into durations with errors that
//! name the field, and round durations the way stores need without ever reaching zero.

use std::fmt;
use std::ops::{Add, Sub};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, SettingsError};

/// The longest duration any setting accepts: 100 years of 365.25 days (grelmicro 0.44's bound).
pub const MAX_DURATION: Duration = Duration::from_secs(3_155_760_000);

/// A monotonic instant: nanoseconds since an arbitrary epoch chosen by whoever drives the core.
///
/// The simulator starts at zero, drivers count from their start, bindings pass plain integers.
/// Arithmetic saturates instead of overflowing, so a far deadline is simply "never".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(u64);

impl Timestamp {
    /// The epoch.
    pub const ZERO: Self = Self(0);
    /// The last representable instant; used as "never".
    pub const MAX: Self = Self(u64::MAX);

    /// An instant `nanos` nanoseconds after the epoch.
    pub const fn from_nanos(nanos: u64) -> Self {
        Self(nanos)
    }

    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// `self + d`, or [`Timestamp::MAX`] when that does not fit.
    pub fn saturating_add(self, d: Duration) -> Self {
        Self(self.0.saturating_add(duration_nanos(d)))
    }

    /// `self - d`, or [`Timestamp::ZERO`] when that would precede the epoch.
    pub fn saturating_sub(self, d: Duration) -> Self {
        Self(self.0.saturating_sub(duration_nanos(d)))
    }

    /// Time elapsed from `earlier` to `self`; zero when `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Self) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl Add<Duration> for Timestamp {
    type Output = Self;

    fn add(self, d: Duration) -> Self {
        self.saturating_add(d)
    }
}

impl Sub<Duration> for Timestamp {
    type Output = Self;

    fn sub(self, d: Duration) -> Self {
        self.saturating_sub(d)
    }
}

/// A duration's nanoseconds, capped at `u64::MAX` (about 584 years, beyond [`MAX_DURATION`]).
fn duration_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A calendar instant in microseconds since 1970-01-01T00:00:00Z, as stores record it.
///
/// Serialized as the integer microseconds (the unit grelmicro 0.44 stores in Redis); shown as
/// RFC 3339 text by [`fmt::Display`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WallTime(i64);

impl WallTime {
    /// The Unix epoch.
    pub const UNIX_EPOCH: Self = Self(0);

    /// The instant `micros` microseconds after the Unix epoch (negative: before it).
    pub const fn from_unix_micros(micros: i64) -> Self {
        Self(micros)
    }

    /// Microseconds since the Unix epoch.
    pub const fn as_unix_micros(self) -> i64 {
        self.0
    }

    /// `self + d`, saturating at the representable range.
    pub fn saturating_add(self, d: Duration) -> Self {
        let micros = i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
        Self(self.0.saturating_add(micros))
    }
}

impl WallTime {
    /// The calendar fields of this instant in UTC (proleptic Gregorian).
    pub fn to_civil(self) -> CivilTime {
        let secs = self.0.div_euclid(1_000_000);
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        // Every narrowing below is of a value already reduced to its field's range.
        let field = |v: i64| u8::try_from(v).unwrap_or(u8::MAX);
        CivilTime {
            year,
            month: field(month),
            day: field(day),
            hour: field(rem / 3600),
            minute: field(rem / 60 % 60),
            second: field(rem % 60),
            micros: u32::try_from(self.0.rem_euclid(1_000_000)).unwrap_or(0),
        }
    }

    /// The instant the calendar fields name in UTC, or `None` when a field is out of its range
    /// (month 1–12, a day the month has, hour < 24, minute < 60, second < 60, micros < 10⁶) or
    /// the instant is beyond the representable range.
    pub fn from_civil(c: &CivilTime) -> Option<Self> {
        let days_in_month = match c.month {
            1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
            4 | 6 | 9 | 11 => 30,
            2 if c.year % 4 == 0 && (c.year % 100 != 0 || c.year % 400 == 0) => 29,
            2 => 28,
            _ => return None,
        };
        if c.day == 0 || c.day > days_in_month || c.hour > 23 || c.minute > 59 || c.second > 59 || c.micros > 999_999 {
            return None;
        }
        let days = days_from_civil(c.year, i64::from(c.month), i64::from(c.day))?;
        let secs =
            i128::from(days) * 86_400 + i128::from(c.hour) * 3600 + i128::from(c.minute) * 60 + i128::from(c.second);
        i64::try_from(secs * 1_000_000 + i128::from(c.micros)).ok().map(Self)
    }
}

/// An instant's calendar fields in UTC: what SQL stores keep as text or timestamps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CivilTime {
    /// The year (proleptic Gregorian; may be negative).
    pub year: i64,
    /// 1–12.
    pub month: u8,
    /// 1–31.
    pub day: u8,
    /// 0–23.
    pub hour: u8,
    /// 0–59.
    pub minute: u8,
    /// 0–59.
    pub second: u8,
    /// 0–999,999.
    pub micros: u32,
}

impl fmt::Display for WallTime {
    /// RFC 3339 in UTC with microseconds, e.g. `2026-11-29T07:35:24.350000Z`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self.to_civil();
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
            c.year, c.month, c.day, c.hour, c.minute, c.second, c.micros
        )
    }
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day).
/// Howard Hinnant's `civil_from_days`, exact over the whole `i64` microsecond range.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The inverse of [`civil_from_days`] (Hinnant's `days_from_civil`); `None` on overflow.
fn days_from_civil(year: i64, month: i64, day: i64) -> Option<i64> {
    let y = if month <= 2 { year.checked_sub(1)? } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era.checked_mul(146_097)?.checked_add(doe - 719_468)
}

/// Turns a number of seconds from a user (a Python float, a JS number) into a duration.
///
/// Rejects NaN, infinities, zero, negatives, values that would round to zero nanoseconds and
/// values above [`MAX_DURATION`], with an error that names `field` and never echoes the value.
pub fn seconds(field: &str, secs: f64) -> Result<Duration, Error> {
    if secs.is_nan() {
        return Err(invalid(field, "must be a number of seconds, not NaN"));
    }
    if secs.is_infinite() {
        return Err(invalid(field, "must be a finite number of seconds"));
    }
    if secs <= 0.0 {
        return Err(invalid(field, "must be greater than 0"));
    }
    let d = Duration::try_from_secs_f64(secs).map_err(|_| invalid(field, "must be at most 100 years"))?;
    positive(field, d)
}

/// Checks that a duration is non-zero and at most [`MAX_DURATION`].
pub fn positive(field: &str, d: Duration) -> Result<Duration, Error> {
    if d.is_zero() {
        return Err(invalid(field, "must be greater than 0"));
    }
    if d > MAX_DURATION {
        return Err(invalid(field, "must be at most 100 years"));
    }
    Ok(d)
}

fn invalid(field: &str, reason: &str) -> Error {
    SettingsError::field(field, format!("{field} {reason}")).into()
}

/// Whole milliseconds, rounded up and at least 1: a store never receives a zero TTL.
pub fn ceil_millis(d: Duration) -> u64 {
    let millis = d.as_nanos().div_ceil(1_000_000).max(1);
    u64::try_from(millis).unwrap_or(u64::MAX)
}

/// Whole microseconds, rounded up and at least 1.
pub fn ceil_micros(d: Duration) -> u64 {
    let micros = d.as_nanos().div_ceil(1_000).max(1);
    u64::try_from(micros).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_saturate_instead_of_overflowing() {
        let near_end = Timestamp::from_nanos(u64::MAX - 5);
        assert_eq!(near_end + Duration::from_secs(1), Timestamp::MAX);
        assert_eq!(Timestamp::ZERO.saturating_sub(Duration::from_nanos(1)), Timestamp::ZERO);
        let a = Timestamp::from_nanos(10);
        let b = Timestamp::from_nanos(25);
        assert_eq!(b.saturating_duration_since(a), Duration::from_nanos(15));
        assert_eq!(a.saturating_duration_since(b), Duration::ZERO);
    }

    #[test]
    fn wall_time_renders_rfc3339() {
        assert_eq!(WallTime::UNIX_EPOCH.to_string(), "1970-01-01T00:00:00.000000Z");
        // 2026-11-29T07:35:24.350000Z
        let t = WallTime::from_unix_micros(1_795_937_724_350_000);
        assert_eq!(t.to_string(), "2026-11-29T07:35:24.350000Z");
        // Leap day and a negative instant.
        assert_eq!(WallTime::from_unix_micros(951_782_400_000_000).to_string(), "2000-02-29T00:00:00.000000Z");
        assert_eq!(WallTime::from_unix_micros(-1).to_string(), "1969-12-31T23:59:59.999999Z");
    }

    #[test]
    fn civil_fields_round_trip_and_refuse_impossible_dates() {
        for micros in [0, -1, 951_782_400_000_000, 1_795_937_724_350_123, -62_135_596_800_000_000, i64::MAX, i64::MIN] {
            let t = WallTime::from_unix_micros(micros);
            assert_eq!(WallTime::from_civil(&t.to_civil()), Some(t), "{micros}");
        }
        let c = WallTime::from_unix_micros(1_795_937_724_350_000).to_civil();
        assert_eq!((c.year, c.month, c.day, c.hour, c.minute, c.second, c.micros), (2026, 11, 29, 7, 35, 24, 350_000));
        let bad = |f: fn(&mut CivilTime)| {
            let mut c = c;
            f(&mut c);
            WallTime::from_civil(&c)
        };
        assert_eq!(bad(|c| c.month = 13), None);
        assert_eq!(bad(|c| c.day = 31), None); // November has 30 days
        assert_eq!(bad(|c| (c.year, c.month, c.day) = (2025, 2, 29)), None);
        assert!(bad(|c| (c.year, c.month, c.day) = (2024, 2, 29)).is_some());
        assert_eq!(bad(|c| c.hour = 24), None);
        assert_eq!(bad(|c| c.second = 60), None);
        assert_eq!(bad(|c| c.micros = 1_000_000), None);
        assert_eq!(bad(|c| c.year = i64::MAX), None);
    }

    #[test]
    fn seconds_rejects_every_bad_number_and_names_the_field() {
        for bad in [0.0, -0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e-12, 1e300] {
            let err = seconds("lease_duration", bad).expect_err("bad duration accepted");
            assert!(err.is_settings(), "{err}");
            assert!(err.to_string().contains("lease_duration"), "{err}");
        }
        assert_eq!(seconds("x", 0.5).ok(), Some(Duration::from_millis(500)));
        assert_eq!(seconds("x", 1e-9).ok(), Some(Duration::from_nanos(1)));
    }

    #[test]
    fn rounding_up_never_reaches_zero() {
        assert_eq!(ceil_millis(Duration::from_micros(300)), 1);
        assert_eq!(ceil_millis(Duration::from_nanos(1_500_001_000)), 1501);
        assert_eq!(ceil_millis(Duration::from_secs(2)), 2000);
        assert_eq!(ceil_micros(Duration::from_nanos(1)), 1);
        assert_eq!(ceil_micros(Duration::from_millis(15_500)), 15_500_000);
    }
}
