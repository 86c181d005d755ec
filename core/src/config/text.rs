//! Setting values written as text (environment variables): durations and numbers.
//!
//! A duration is whole seconds (`60`), fractional seconds (`0.5`, beyond grelmicro 0.44) or an
//! ISO 8601 duration in weeks, days, hours, minutes and seconds (`PT0.5S`, `P1DT2H`, `PT1M30S`),
//! with at most 9 fractional digits on the seconds.

use std::time::Duration;

use crate::error::{Error, SettingsError};
use crate::time::{MAX_DURATION, positive};

const DURATION_RULE: &str = "must be whole or fractional seconds (60, 0.5) or an ISO 8601 duration such as PT0.5S";

/// Parses a duration setting named `var`; the error names `var` and never echoes the value.
pub fn parse_duration(var: &str, text: &str) -> Result<Duration, Error> {
    let text = text.trim();
    let parsed = if text.starts_with(['P', 'p']) { iso8601(&text[1..]) } else { decimal_seconds(text) };
    let d = parsed.ok_or_else(|| Error::from(SettingsError::field(var, format!("{var} {DURATION_RULE}"))))?;
    positive(var, d)
}

/// Parses a plain number setting named `var` (retry_jitter), refusing NaN and infinities.
pub fn parse_float(var: &str, text: &str) -> Result<f64, Error> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(SettingsError::field(var, format!("{var} must be a finite number")).into()),
    }
}

/// `digits[.digits]` as seconds; `None` for anything else (signs, exponents, words).
fn decimal_seconds(text: &str) -> Option<Duration> {
    let (whole, frac) = match text.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (text, None),
    };
    if whole.is_empty() && frac.is_none_or(str::is_empty) {
        return None;
    }
    let secs = if whole.is_empty() { 0 } else { digits(whole)? };
    let nanos = match frac {
        None | Some("") => 0,
        Some(f) => fraction_nanos(f)?,
    };
    checked(secs, nanos)
}

fn digits(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Up to nine fractional digits as nanoseconds.
fn fraction_nanos(frac: &str) -> Option<u32> {
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let padded = format!("{frac:0<9}");
    padded.parse().ok()
}

fn checked(secs: u64, nanos: u32) -> Option<Duration> {
    // Anything past the bound is refused by `positive` with the right message; cap here so the
    // arithmetic cannot overflow.
    let d = Duration::new(secs.min(MAX_DURATION.as_secs() + 1), nanos);
    Some(d)
}

/// The part after `P`: `[nW][nD][T[nH][nM][n[.f]S]]`, each unit at most once, in order.
fn iso8601(rest: &str) -> Option<Duration> {
    let upper = rest.to_ascii_uppercase();
    let (date, time) = match upper.split_once('T') {
        Some((d, t)) if !t.is_empty() => (d, Some(t)),
        Some(_) => return None,
        None => (upper.as_str(), None),
    };
    if date.is_empty() && time.is_none() {
        return None;
    }
    let mut secs: u64 = 0;
    let mut nanos: u32 = 0;
    let date_units: &[(char, u64)] = &[('W', 604_800), ('D', 86_400)];
    let time_units: &[(char, u64)] = &[('H', 3600), ('M', 60), ('S', 1)];
    for (part, units) in [(date, date_units), (time.unwrap_or(""), time_units)] {
        let mut rest = part;
        let mut next_unit = 0;
        while !rest.is_empty() {
            let end = rest.find(|c: char| c.is_ascii_alphabetic())?;
            let (number, tail) = rest.split_at(end);
            let unit = tail.chars().next()?;
            let index = units.iter().skip(next_unit).position(|&(u, _)| u == unit)? + next_unit;
            next_unit = index + 1;
            let scale = units[index].1;
            let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
            if !frac.is_empty() || number.contains('.') {
                // Only the seconds may carry a fraction.
                if unit != 'S' {
                    return None;
                }
                nanos = fraction_nanos(frac)?;
            }
            secs = secs.checked_add(digits(whole)?.checked_mul(scale)?)?;
            rest = &tail[1..];
        }
    }
    checked(secs, nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Duration {
        parse_duration("V", text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn whole_fractional_and_iso_durations_parse() {
        assert_eq!(ok("60"), Duration::from_secs(60));
        assert_eq!(ok(" 7 "), Duration::from_secs(7));
        assert_eq!(ok("0.5"), Duration::from_millis(500));
        assert_eq!(ok(".25"), Duration::from_millis(250));
        assert_eq!(ok("1."), Duration::from_secs(1));
        assert_eq!(ok("PT0.5S"), Duration::from_millis(500));
        assert_eq!(ok("pt1.5s"), Duration::from_millis(1500));
        assert_eq!(ok("PT1M30S"), Duration::from_secs(90));
        assert_eq!(ok("P1DT2H"), Duration::from_secs(93_600));
        assert_eq!(ok("P1W"), Duration::from_secs(604_800));
        assert_eq!(ok("PT0.000001S"), Duration::from_micros(1));
        assert_eq!(ok("PT0.123456789S"), Duration::from_nanos(123_456_789));
    }

    #[test]
    fn malformed_durations_are_refused_naming_the_variable() {
        for bad in [
            "",
            "-1",
            "0",
            "0.0",
            "PT0S",
            "1e3",
            "abc",
            "inf",
            "NaN",
            "P",
            "PT",
            "P1Y",
            "P1M",
            "PT1.5M",
            "PT1S1M",
            "PT1H1H",
            "P1DT",
            "1.2.3",
            ".",
            "PT0.1234567890S",
            "P101Y",
            "P5300W",
        ] {
            let err = parse_duration("GREL_LOCK_CART_LEASE_DURATION", bad).expect_err(bad);
            assert!(err.to_string().starts_with("GREL_LOCK_CART_LEASE_DURATION"), "{bad}: {err}");
        }
    }

    #[test]
    fn floats_must_be_finite() {
        assert_eq!(parse_float("J", "0.25").ok(), Some(0.25));
        for bad in ["nan", "inf", "x", ""] {
            assert!(parse_float("J", bad).is_err(), "{bad}");
        }
    }
}
