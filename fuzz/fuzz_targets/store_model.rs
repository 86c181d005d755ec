//! Arbitrary operations, with arbitrary leases and fire times, into the store model; the
//! answers must be consistent with each other and fencing tokens only grow.
#![no_main]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use tenure_core::{FencingToken, Metadata, StoreModel, Timestamp, Token, WallTime};

#[derive(Arbitrary, Debug)]
enum Op {
    Acquire { key: u8, token: u8, lease: u64 },
    Release { key: u8, token: u8 },
    LeaderAcquire { key: u8, token: u8, lease: u64 },
    LeaderRelease { key: u8, token: u8 },
    Claim { key: u8, due: f64 },
    Advance(u64),
    Vacate,
}

fuzz_target!(|ops: Vec<Op>| {
    let mut store = StoreModel::new(WallTime::UNIX_EPOCH);
    let mut now = Timestamp::from_nanos(0);
    let mut fences: BTreeMap<String, FencingToken> = BTreeMap::new();
    let token = |t: u8| Token::new(&format!("t{}", t % 3)).expect("a valid token");
    let metadata = Arc::new(Metadata::default());
    for op in ops.iter().take(2_000) {
        match *op {
            Op::Acquire { key, token: t, lease } => {
                let key = format!("lock:k{}", key % 3);
                let lease = Duration::from_nanos(lease);
                if let Some(fence) = store.lock_acquire(key.as_str(), &token(t), lease, now) {
                    let last = fences.insert(key.clone(), fence);
                    assert!(last.is_none_or(|last| fence >= last), "a fencing token went down");
                    assert!(store.lock_owned(key.as_str(), &token(t), now), "granted but not owned");
                    assert!(store.lock_locked(key.as_str(), now));
                    assert_eq!(store.last_fence(key.as_str()), Some(fence));
                }
            }
            Op::Release { key, token: t } => {
                let key = format!("lock:k{}", key % 3);
                if store.lock_release(key.as_str(), &token(t), now) {
                    assert!(!store.lock_locked(key.as_str(), now), "released but still locked");
                }
            }
            Op::LeaderAcquire { key, token: t, lease } => {
                let key = format!("leader:k{}", key % 3);
                let record =
                    store.leader_acquire_or_renew(key.as_str(), &token(t), Duration::from_nanos(lease), &metadata, now);
                // A lease that ends past the end of time (584 years of nanoseconds) saturates.
                let ends = now.as_nanos().checked_add(lease).is_some_and(|end| end < u64::MAX);
                if record.holder == token(t).as_str() && lease > 0 && ends {
                    let live = store.leader_get(key.as_str(), now).expect("a fresh lease is live");
                    assert_eq!(live.holder, record.holder);
                }
            }
            Op::LeaderRelease { key, token: t } => {
                let key = format!("leader:k{}", key % 3);
                if store.leader_release(key.as_str(), &token(t), now) {
                    assert!(store.leader_get(key.as_str(), now).is_none(), "released but still led");
                }
            }
            Op::Claim { key, due } => {
                let key = format!("k{}", key % 3);
                let before = store.schedule_last_fired(key.as_str());
                let won = store.schedule_claim(key.as_str(), due);
                assert_eq!(won, due.is_finite() && before.is_none_or(|b| due > b), "claim {due} after {before:?}");
                if won {
                    assert_eq!(store.schedule_last_fired(key.as_str()), Some(due));
                }
            }
            Op::Advance(nanos) => now = now + Duration::from_nanos(nanos),
            Op::Vacate => store.vacate_expired(now),
        }
    }
});
