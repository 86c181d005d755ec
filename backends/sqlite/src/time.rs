//! Instants as grelmicro 0.44 writes them into SQLite: UTC text to the millisecond,
//! `YYYY-MM-DD HH:MM:SS.SSS` (what `strftime('%Y-%m-%d %H:%M:%f', 'now')` gives).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tenure_core::{BackendError, BackendErrorKind, CivilTime, WallTime};

/// The store's clock: the host's system clock, which is the clock SQLite's `now` reads (every
/// process on the host shares it). Tests substitute their own.
pub(crate) type Clock = std::sync::Arc<dyn Fn() -> WallTime + Send + Sync>;

/// The system clock, as SQLite reads it.
pub(crate) fn system_now() -> WallTime {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    WallTime::from_unix_micros(i64::try_from(since.as_micros()).unwrap_or(i64::MAX))
}

/// `t` truncated to the millisecond, as SQLite's `now` is.
pub(crate) fn truncate_millis(t: WallTime) -> WallTime {
    let micros = t.as_unix_micros();
    WallTime::from_unix_micros(micros - micros.rem_euclid(1000))
}

/// `t` as stored text, to the millisecond (`t` is expected on a millisecond).
pub(crate) fn to_text(t: WallTime) -> String {
    let c = t.to_civil();
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:03}",
        c.year,
        c.month,
        c.day,
        c.hour,
        c.minute,
        c.second,
        c.micros / 1000
    )
}

/// Reads stored time text: `YYYY-MM-DD HH:MM:SS` with an optional fraction of up to six digits
/// (grelmicro writes three; older rows have none). `column` names what is read, for the error.
pub(crate) fn from_text(text: &str, column: &str) -> Result<WallTime, BackendError> {
    parse(text).ok_or_else(|| {
        let shown: String = text.chars().take(40).collect();
        BackendError::new(
            BackendErrorKind::MalformedRecord,
            format!("{column} holds {shown:?}, not a time like 2026-11-29 07:35:24.350"),
        )
    })
}

fn parse(text: &str) -> Option<WallTime> {
    let b = text.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || b[10] != b' ' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<u32> {
        let digits = text.get(range)?;
        if !digits.bytes().all(|d| d.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok()
    };
    let micros = match &text[19..] {
        "" => 0,
        fraction => {
            let digits = fraction.strip_prefix('.')?;
            if digits.is_empty() || digits.len() > 6 || !digits.bytes().all(|d| d.is_ascii_digit()) {
                return None;
            }
            let scale = 10_u32.pow(u32::try_from(6 - digits.len()).ok()?);
            digits.parse::<u32>().ok()? * scale
        }
    };
    let field = |v: u32| u8::try_from(v).ok();
    WallTime::from_civil(&CivilTime {
        year: i64::from(num(0..4)?),
        month: field(num(5..7)?)?,
        day: field(num(8..10)?)?,
        hour: field(num(11..13)?)?,
        minute: field(num(14..16)?)?,
        second: field(num(17..19)?)?,
        micros,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips_to_the_millisecond() {
        let t = WallTime::from_unix_micros(1_795_937_724_350_000);
        assert_eq!(to_text(t), "2026-11-29 07:35:24.350");
        assert_eq!(from_text("2026-11-29 07:35:24.350", "expire_at").ok(), Some(t));
        assert_eq!(truncate_millis(WallTime::from_unix_micros(1_795_937_724_350_999)), t);
    }

    #[test]
    fn whole_second_and_microsecond_text_is_read() {
        let whole = from_text("2026-11-29 07:35:24", "expire_at").ok();
        assert_eq!(whole, Some(WallTime::from_unix_micros(1_795_937_724_000_000)));
        let micros = from_text("2026-11-29 07:35:24.350123", "expire_at").ok();
        assert_eq!(micros, Some(WallTime::from_unix_micros(1_795_937_724_350_123)));
    }

    #[test]
    fn malformed_text_is_refused_naming_the_column() {
        for bad in [
            "",
            "yesterday",
            "2026-11-29T07:35:24",
            "2026-13-01 00:00:00",
            "2026-11-29 07:35:24.",
            "2026-11-29 07:35:24.1234567",
            "2026-11-29 07:35:24+01",
        ] {
            let err = from_text(bad, "renewed_at").expect_err(bad);
            assert_eq!(err.kind(), BackendErrorKind::MalformedRecord);
            assert!(err.message().contains("renewed_at"), "{err}");
        }
    }
}
