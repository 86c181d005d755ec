//! What backends share for reading and writing records: grelmicro's JSON metadata and fences.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use tenure_core::{BackendError, BackendErrorKind, FencingToken, Metadata};

/// A [`BackendErrorKind::MalformedRecord`] error.
pub fn malformed(message: String) -> BackendError {
    BackendError::new(BackendErrorKind::MalformedRecord, message)
}

/// A fence read from the store for `name`: a positive count.
pub fn fence(name: &str, fence: i64) -> Result<FencingToken, BackendError> {
    u64::try_from(fence)
        .ok()
        .filter(|f| *f >= 1)
        .map(FencingToken::new)
        .ok_or_else(|| malformed(format!("the fence of {name} is {fence}, not a positive count")))
}

/// A read-write lock's generation read from the store for `name`: 0 (never written) or more.
pub fn generation(name: &str, generation: i64) -> Result<FencingToken, BackendError> {
    u64::try_from(generation)
        .map(FencingToken::new)
        .map_err(|_| malformed(format!("the generation of {name} is {generation}, below zero")))
}

/// Metadata as grelmicro writes it: a JSON object with Python's default separators.
pub fn metadata_json(metadata: &Metadata) -> String {
    let mut out = String::from("{");
    for (i, (key, value)) in metadata.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let quoted = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
        let _ = write!(out, "{}: {}", quoted(key), quoted(value));
    }
    out.push('}');
    out
}

/// The metadata of `name`'s leader record from its JSON text: an object of strings.
pub fn metadata_from_json(name: &str, json: &str) -> Result<Metadata, BackendError> {
    let map: BTreeMap<String, String> = serde_json::from_str(json)
        .map_err(|e| malformed(format!("the metadata of {name} is not a JSON object of strings: {e}")))?;
    Metadata::try_from(map).map_err(|e| malformed(format!("the metadata of {name}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_written_like_python_and_read_back() {
        let m = Metadata::from_pairs([("pod", "p1"), ("zone", "é\"")]).expect("valid");
        assert_eq!(metadata_json(&m), r#"{"pod": "p1", "zone": "é\""}"#);
        assert_eq!(metadata_json(&Metadata::new()), "{}");
        assert_eq!(metadata_from_json("leader:a", &metadata_json(&m)).expect("valid"), m);
        for bad in ["[]", r#"{"a": 1}"#, "", "null"] {
            let e = metadata_from_json("leader:a", bad).expect_err(bad);
            assert_eq!(e.kind(), BackendErrorKind::MalformedRecord, "{bad}");
        }
    }

    #[test]
    fn fences_are_positive_counts() {
        assert_eq!(fence("lock:a", 3).expect("valid").get(), 3);
        for bad in [0, -1] {
            assert_eq!(fence("lock:a", bad).expect_err("bad").kind(), BackendErrorKind::MalformedRecord);
        }
    }
}
