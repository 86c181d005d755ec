//! Reading and writing grelmicro 0.44's Redis values: `"<fence>:<token>"`, the leader hash with
//! integer-microsecond fields and JSON metadata, and Python's text of a float.

use std::time::Duration;

use tenure_core::{BackendError, FencingToken, LeaderRecord, WallTime};
pub(crate) use tenure_store::record::{fence, metadata_json};
use tenure_store::record::{malformed, metadata_from_json};

/// A lock value split at its first `:` into fence and holder token.
pub(crate) fn lock_value<'v>(name: &str, value: &'v str) -> Result<(FencingToken, &'v str), BackendError> {
    let bad = || malformed(format!("the lock {name} holds no \"<fence>:<token>\" value"));
    let (fence_text, token) = value.split_once(':').ok_or_else(bad)?;
    let fence_value = fence_text.parse::<i64>().map_err(|_| bad())?;
    Ok((fence(name, fence_value)?, token))
}

/// A leader record from the six fields `HMGET` returned and the term's fence after them (absent
/// or nil: none), each checked.
pub(crate) fn leader(name: &str, raw: &[Option<String>]) -> Result<LeaderRecord, BackendError> {
    let field = |i: usize, what: &str| {
        raw.get(i)
            .and_then(Option::as_deref)
            .ok_or_else(|| malformed(format!("the leader record of {name} has no {what}")))
    };
    let number = |i: usize, what: &str| {
        field(i, what)?
            .parse::<i64>()
            .map_err(|_| malformed(format!("the leader record of {name} has a {what} that is not a whole number")))
    };
    let unsigned = |i: usize, what: &str| {
        let n = number(i, what)?;
        u64::try_from(n).map_err(|_| malformed(format!("the leader record of {name} has a negative {what}")))
    };
    let holder = field(0, "holder")?.to_owned();
    let lease_duration = Duration::from_micros(unsigned(1, "lease_us")?);
    let acquired_at = WallTime::from_unix_micros(number(2, "acquired_at_us")?);
    let renewed_at = WallTime::from_unix_micros(number(3, "renewed_at_us")?);
    let transitions = unsigned(4, "transitions")?;
    let metadata = metadata_from_json(name, field(5, "metadata")?)?;
    let fence = match raw.get(6).and_then(Option::as_deref) {
        Some(text) => {
            let bad = || malformed(format!("the leader fence of {name} is not a whole number"));
            Some(fence(name, text.parse::<i64>().map_err(|_| bad())?)?)
        }
        None => None,
    };
    Ok(LeaderRecord { holder, lease_duration, acquired_at, renewed_at, transitions, metadata, fence })
}

/// `x` as Python's `str(float)` writes it (`1767225600.0`, `1767229200.25`), which is how
/// grelmicro stores a schedule's due time.
pub(crate) fn python_float(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e16 { format!("{x:.1}") } else { format!("{x}") }
}

#[cfg(test)]
mod tests {
    use tenure_core::BackendErrorKind;

    use super::*;

    #[test]
    fn lock_values_split_at_the_first_colon() {
        let (fence, token) = lock_value("lock:a", "7:w1:task:0.39").expect("valid");
        assert_eq!((fence.get(), token), (7, "w1:task:0.39"));
        for bad in ["", "w1", "x:w1", "0:w1", "-3:w1"] {
            let e = lock_value("lock:a", bad).expect_err(bad);
            assert_eq!(e.kind(), BackendErrorKind::MalformedRecord, "{bad}");
        }
    }

    #[test]
    fn floats_are_written_like_python() {
        assert_eq!(python_float(1_767_225_600.0), "1767225600.0");
        assert_eq!(python_float(1_767_229_200.25), "1767229200.25");
    }

    #[test]
    fn leader_records_are_checked_field_by_field() {
        let raw = |v: [&str; 6]| v.iter().map(|s| Some((*s).to_owned())).collect::<Vec<_>>();
        let r = leader(
            "leader:svc",
            &raw(["w9", "15000000", "1795937707143084", "1795937707143084", "0", r#"{"pod": "p1"}"#]),
        )
        .expect("valid");
        assert_eq!(r.lease_duration, Duration::from_secs(15));
        assert_eq!(r.renewed_at.as_unix_micros(), 1_795_937_707_143_084);
        assert_eq!(r.metadata.get("pod"), Some("p1"));
        for bad in [
            raw(["w9", "1.5", "1", "1", "0", "{}"]),
            raw(["w9", "-1", "1", "1", "0", "{}"]),
            raw(["w9", "1", "1", "1", "0", "[]"]),
            raw(["w9", "1", "1", "1", "0", r#"{"a": 1}"#]),
        ] {
            let e = leader("leader:svc", &bad).expect_err("malformed");
            assert_eq!(e.kind(), BackendErrorKind::MalformedRecord);
        }
        let e = leader("leader:svc", &[Some("w9".into()), None]).expect_err("missing");
        assert!(e.to_string().contains("lease_us"), "{e}");
        // The term's fence after the six fields: none, a count, or malformed.
        assert_eq!(r.fence, None);
        let with = |fence: Option<&str>| {
            let mut fields = raw(["w9", "1", "1", "1", "0", "{}"]);
            fields.push(fence.map(str::to_owned));
            leader("leader:svc", &fields)
        };
        assert_eq!(with(None).expect("none").fence, None);
        assert_eq!(with(Some("12")).expect("a fence").fence.map(FencingToken::get), Some(12));
        for bad in ["0", "-2", "x"] {
            let e = with(Some(bad)).expect_err(bad);
            assert_eq!(e.kind(), BackendErrorKind::MalformedRecord, "{bad}");
        }
    }
}
