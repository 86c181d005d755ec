//! Bytes read back from a store as a leader record: decoding never panics, and what decodes
//! encodes back to the same record.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tenure_core::LeaderRecord;

fuzz_target!(|data: &[u8]| {
    let Ok(record) = serde_json::from_slice::<LeaderRecord>(data) else { return };
    let _ = record.expires_at();
    let json = serde_json::to_vec(&record).expect("a decoded record encodes");
    let back: LeaderRecord = serde_json::from_slice(&json).expect("an encoded record decodes");
    assert_eq!(back, record);
});
