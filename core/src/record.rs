//! The leader record (spec §1.7), shaped like Kubernetes' `LeaderElectionRecord`, and its metadata.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{Error, SettingsError};
use crate::ids::{FencingToken, shown};
use crate::time::WallTime;

/// The most metadata entries a leader may attach.
pub const MAX_METADATA_ENTRIES: usize = 64;
/// The longest metadata key, in bytes.
pub const MAX_METADATA_KEY_BYTES: usize = 256;
/// The longest metadata value, in bytes.
pub const MAX_METADATA_VALUE_BYTES: usize = 1024;

/// Free-form key/value pairs a leader stores on its lease (pod name, version, region), bounded
/// so that a record read back from a store has a known maximum size.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "BTreeMap<String, String>", into = "BTreeMap<String, String>")]
pub struct Metadata(BTreeMap<String, String>);

impl Metadata {
    /// No metadata.
    pub const fn new() -> Self {
        Self(BTreeMap::new())
    }

    /// Validated metadata from pairs.
    pub fn from_pairs<K, V>(pairs: impl IntoIterator<Item = (K, V)>) -> Result<Self, Error>
    where
        K: Into<String>,
        V: Into<String>,
    {
        let map: BTreeMap<String, String> = pairs.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        Self::try_from(map)
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// The pairs, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// How many pairs.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The pairs as a map.
    pub fn as_map(&self) -> &BTreeMap<String, String> {
        &self.0
    }
}

impl TryFrom<BTreeMap<String, String>> for Metadata {
    type Error = Error;

    fn try_from(map: BTreeMap<String, String>) -> Result<Self, Error> {
        if map.len() > MAX_METADATA_ENTRIES {
            return Err(metadata_error(format!("metadata has more than {MAX_METADATA_ENTRIES} entries")));
        }
        for (k, v) in &map {
            if k.is_empty() || k.len() > MAX_METADATA_KEY_BYTES {
                return Err(metadata_error(format!(
                    "metadata key {} must have 1 to {MAX_METADATA_KEY_BYTES} bytes",
                    shown(k)
                )));
            }
            if v.len() > MAX_METADATA_VALUE_BYTES {
                return Err(metadata_error(format!(
                    "metadata value of {} is longer than {MAX_METADATA_VALUE_BYTES} bytes",
                    shown(k)
                )));
            }
        }
        Ok(Self(map))
    }
}

fn metadata_error(message: String) -> Error {
    SettingsError::field("metadata", message).into()
}

impl From<Metadata> for BTreeMap<String, String> {
    fn from(m: Metadata) -> Self {
        m.0
    }
}

/// The state of a leader-election lease as the store reports it.
///
/// Serialized with the field names and units of grelmicro 0.44's Redis layout: `holder`,
/// `lease_us`, `acquired_at_us`, `renewed_at_us` (integer microseconds), `transitions`, `metadata`;
/// and Tenure's `fence` when there is one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaderRecord {
    /// The token (the resolved worker identity) of the holder.
    pub holder: String,
    /// How long the lease is valid after `renewed_at`.
    #[serde(rename = "lease_us", serialize_with = "micros_out", deserialize_with = "micros_in")]
    pub lease_duration: Duration,
    /// When the current holder took the lease.
    #[serde(rename = "acquired_at_us")]
    pub acquired_at: WallTime,
    /// When the current holder last renewed it.
    #[serde(rename = "renewed_at_us")]
    pub renewed_at: WallTime,
    /// How many times the lease changed holder since it was created (a clean release deletes it).
    pub transitions: u64,
    /// What the holder attached.
    #[serde(default)]
    pub metadata: Metadata,
    /// The fencing token of the holder's term: the same for every renewal, higher for every take
    /// (a new holder, or the same one after its lease ran out), never reset by a release. A
    /// leader's writes carry it so that a resource can refuse a deposed leader's (Tenure's stores
    /// keep it beside grelmicro's record: see `docs/guarantees.md`). `None` where there is none: a
    /// user-written store that answers none, a record only grelmicro wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fence: Option<FencingToken>,
}

impl LeaderRecord {
    /// The instant the lease expires: `renewed_at + lease_duration`. The record is expired *at*
    /// that instant on every backend.
    pub fn expires_at(&self) -> WallTime {
        self.renewed_at.saturating_add(self.lease_duration)
    }
}

fn micros_out<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

fn micros_in<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    u64::deserialize(d).map(Duration::from_micros)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_bounded() {
        assert!(Metadata::from_pairs([("pod", "p1")]).is_ok());
        assert!(Metadata::from_pairs([("", "v")]).is_err());
        assert!(Metadata::from_pairs([("k", "v".repeat(1025))]).is_err());
        let many = (0..65).map(|i| (format!("k{i}"), String::new()));
        assert!(Metadata::from_pairs(many).is_err());
    }

    #[test]
    fn record_round_trips_in_the_044_redis_units() {
        let record = LeaderRecord {
            holder: "w9".into(),
            lease_duration: Duration::from_millis(15_500),
            acquired_at: WallTime::from_unix_micros(1_795_937_707_143_084),
            renewed_at: WallTime::from_unix_micros(1_795_937_707_143_084),
            transitions: 0,
            metadata: Metadata::from_pairs([("pod", "p1")]).expect("valid"),
            fence: None,
        };
        let json = serde_json::to_string(&record).expect("serializes");
        assert_eq!(
            json,
            r#"{"holder":"w9","lease_us":15500000,"acquired_at_us":1795937707143084,"renewed_at_us":1795937707143084,"transitions":0,"metadata":{"pod":"p1"}}"#
        );
        let back: LeaderRecord = serde_json::from_str(&json).expect("parses");
        assert_eq!(back, record);
        assert_eq!(back.expires_at().as_unix_micros(), 1_795_937_722_643_084);
        let bad = json.replace(r#""pod":"p1""#, r#""":"p1""#);
        assert!(serde_json::from_str::<LeaderRecord>(&bad).is_err());
        // A term's fence, where there is one, follows grelmicro's fields.
        let fenced = LeaderRecord { fence: Some(FencingToken::new(7)), ..record };
        let json = serde_json::to_string(&fenced).expect("serializes");
        assert!(json.ends_with(r#"{"pod":"p1"},"fence":7}"#), "{json}");
        assert_eq!(serde_json::from_str::<LeaderRecord>(&json).expect("parses"), fenced);
    }
}
