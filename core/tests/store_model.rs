//! The store model against the backend contract of spec §5 and the boundary cases of spec §8.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use support::{key, ms, token};
use tenure_core::{FencingToken, KeyKind, Metadata, StoreModel, StoreOp, StoreReply, Timestamp, WallTime};

fn store() -> StoreModel {
    StoreModel::new(WallTime::from_unix_micros(1_000_000))
}

fn t(ms: u64) -> Timestamp {
    Timestamp::from_nanos(ms * 1_000_000)
}

const LEASE: Duration = Duration::from_millis(200);

// ---- LockBackend contract (spec §8.1) -----------------------------------------------------

#[test]
fn fresh_acquire_returns_fence_one_and_same_token_renews_with_the_same_fence() {
    let mut s = store();
    let (k, a) = (key(KeyKind::Lock, "cart"), token("a"));
    assert_eq!(s.lock_acquire(&k, &a, LEASE, t(0)), Some(FencingToken::FIRST));
    assert_eq!(s.lock_acquire(&k, &a, LEASE, t(100)), Some(FencingToken::FIRST));
    // The renewal moved the expiry: still held at 250 ms although the first lease ended at 200.
    assert!(s.lock_owned(&k, &a, t(250)));
}

#[test]
fn another_token_is_refused_while_held_and_takes_over_after_expiry_with_a_greater_fence() {
    let mut s = store();
    let (k, a, b) = (key(KeyKind::Lock, "cart"), token("a"), token("b"));
    let first = s.lock_acquire(&k, &a, LEASE, t(0)).unwrap();
    assert_eq!(s.lock_acquire(&k, &b, LEASE, t(100)), None);
    // Held at exactly the expiry instant (spec §6.1: live while expire_at >= now).
    assert_eq!(s.lock_acquire(&k, &b, LEASE, t(200)), None);
    assert!(s.lock_locked(&k, t(200)) && s.lock_owned(&k, &a, t(200)));
    let taken = s.lock_acquire(&k, &b, LEASE, Timestamp::from_nanos(200_000_001)).unwrap();
    assert!(taken > first);
}

#[test]
fn same_token_after_its_own_expiry_counts_as_a_new_transition() {
    let mut s = store();
    let (k, a) = (key(KeyKind::Lock, "cart"), token("a"));
    let first = s.lock_acquire(&k, &a, LEASE, t(0)).unwrap();
    let again = s.lock_acquire(&k, &a, LEASE, t(300)).unwrap();
    assert_eq!(again, first.next());
}

#[test]
fn release_is_true_once_for_the_live_holder_only() {
    let mut s = store();
    let (k, a, b) = (key(KeyKind::Lock, "cart"), token("a"), token("b"));
    assert!(!s.lock_release(&k, &a, t(0)), "never acquired");
    s.lock_acquire(&k, &a, LEASE, t(0));
    assert!(!s.lock_release(&k, &b, t(10)), "another token");
    assert!(s.lock_release(&k, &a, t(200)), "at the expiry instant the lease is still live");
    assert!(!s.lock_release(&k, &a, t(201)), "second release");
}

#[test]
fn release_after_expiry_is_false_and_vacates() {
    let mut s = store();
    let (k, a) = (key(KeyKind::Lock, "cart"), token("a"));
    s.lock_acquire(&k, &a, LEASE, t(0));
    assert!(!s.lock_release(&k, &a, t(201)));
    assert!(s.lock_lease(&k, t(0)).is_none(), "the expired lease was vacated");
}

#[test]
fn locked_and_owned_follow_the_live_lease() {
    let mut s = store();
    let (k, a, b) = (key(KeyKind::Lock, "cart"), token("a"), token("b"));
    assert!(!s.lock_locked(&k, t(0)) && !s.lock_owned(&k, &a, t(0)));
    s.lock_acquire(&k, &a, LEASE, t(0));
    assert!(s.lock_locked(&k, t(1)) && s.lock_owned(&k, &a, t(1)) && !s.lock_owned(&k, &b, t(1)));
    assert!(!s.lock_locked(&k, t(201)) && !s.lock_owned(&k, &a, t(201)));
}

#[test]
fn fencing_counters_survive_release_and_cleanup_and_are_per_name() {
    let mut s = store();
    let (k, other, a, b) = (key(KeyKind::Lock, "cart"), key(KeyKind::Lock, "other"), token("a"), token("b"));
    let f1 = s.lock_acquire(&k, &a, LEASE, t(0)).unwrap();
    assert!(s.lock_release(&k, &a, t(1)));
    let f2 = s.lock_acquire(&k, &b, LEASE, t(2)).unwrap();
    assert_eq!(f2, f1.next(), "spec §8.7: 1 then 2 after release + acquire by another token");
    s.vacate_expired(t(1000));
    assert_eq!(s.last_fence(&k), Some(f2));
    assert_eq!(s.lock_acquire(&k, &a, LEASE, t(1000)), Some(f2.next()));
    assert_eq!(s.lock_acquire(&other, &a, LEASE, t(1000)), Some(FencingToken::FIRST));
}

#[test]
fn lock_and_task_lock_keys_never_collide() {
    let mut s = store();
    let a = token("a");
    s.lock_acquire(&key(KeyKind::Lock, "x"), &a, LEASE, t(0));
    assert!(!s.lock_locked(&key(KeyKind::TaskLock, "x"), t(0)));
}

#[test]
fn apply_dispatches_every_operation() {
    let mut s = store();
    let (k, a) = (key(KeyKind::Lock, "cart"), token("a"));
    let acquire = StoreOp::LockAcquire { key: k.clone(), token: a.clone(), lease: LEASE, details: None };
    assert_eq!(s.apply(&acquire, t(0)), StoreReply::Fence(Some(FencingToken::FIRST)));
    assert_eq!(s.apply(&StoreOp::LockLocked { key: k.clone() }, t(0)), StoreReply::Flag(true));
    assert_eq!(s.apply(&StoreOp::LockOwned { key: k.clone(), token: a.clone() }, t(0)), StoreReply::Flag(true));
    assert_eq!(s.apply(&StoreOp::LockRelease { key: k, token: a }, t(0)), StoreReply::Flag(true));
}

// ---- LeaderElectionBackend (spec §5.2, §8.8) ----------------------------------------------

fn meta(pod: &str) -> Arc<Metadata> {
    Arc::new(Metadata::from_pairs([("pod", pod)]).unwrap())
}

#[test]
fn fresh_leader_record_and_renewal() {
    let mut s = store();
    let (k, a) = (key(KeyKind::Leader, "svc"), token("w1"));
    let first = s.leader_acquire_or_renew(&k, &a, ms(15_000), &meta("p1"), t(0));
    assert_eq!((first.holder.as_str(), first.transitions), ("w1", 0));
    assert_eq!(first.acquired_at, first.renewed_at);
    assert_eq!(first.acquired_at, WallTime::from_unix_micros(1_000_000));
    assert_eq!(first.metadata.get("pod"), Some("p1"));
    let renewed = s.leader_acquire_or_renew(&k, &a, ms(15_500), &meta("p2"), t(1000));
    assert_eq!(renewed.acquired_at, first.acquired_at, "renewal keeps acquired_at");
    assert_eq!(renewed.renewed_at, WallTime::from_unix_micros(2_000_000));
    assert_eq!(renewed.lease_duration, ms(15_500), "renewal writes the new lease");
    assert_eq!(renewed.metadata.get("pod"), Some("p2"), "renewal replaces metadata");
    assert_eq!(renewed.transitions, 0);
}

#[test]
fn a_live_leader_is_not_taken_and_the_record_is_expired_at_exactly_renewed_plus_lease() {
    let mut s = store();
    let (k, a, b) = (key(KeyKind::Leader, "svc"), token("w1"), token("w2"));
    s.leader_acquire_or_renew(&k, &a, LEASE, &meta("p1"), t(0));
    let seen = s.leader_acquire_or_renew(&k, &b, LEASE, &meta("p2"), Timestamp::from_nanos(199_999_999));
    assert_eq!((seen.holder.as_str(), seen.metadata.get("pod")), ("w1", Some("p1")));
    assert!(s.leader_get(&k, Timestamp::from_nanos(199_999_999)).is_some());
    assert!(s.leader_get(&k, t(200)).is_none(), "expired at exactly renewed_at + lease");
    let taken = s.leader_acquire_or_renew(&k, &b, LEASE, &meta("p2"), t(200));
    assert_eq!((taken.holder.as_str(), taken.transitions), ("w2", 1));
    assert_eq!(taken.acquired_at, taken.renewed_at);
}

#[test]
fn a_holder_retaking_its_own_expired_lease_keeps_transitions() {
    let mut s = store();
    let (k, a) = (key(KeyKind::Leader, "svc"), token("w1"));
    s.leader_acquire_or_renew(&k, &a, LEASE, &meta("p"), t(0));
    let again = s.leader_acquire_or_renew(&k, &a, LEASE, &meta("p"), t(500));
    assert_eq!(again.transitions, 0);
    assert_eq!(again.acquired_at, WallTime::from_unix_micros(1_500_000), "a takeover restarts acquired_at");
}

#[test]
fn leader_release_deletes_the_record_so_transitions_restart() {
    let mut s = store();
    let (k, a, b) = (key(KeyKind::Leader, "svc"), token("w1"), token("w2"));
    s.leader_acquire_or_renew(&k, &a, LEASE, &meta("p"), t(0));
    assert!(!s.leader_release(&k, &b, t(1)), "not the holder");
    assert!(s.leader_release(&k, &a, t(1)));
    assert!(s.leader_get(&k, t(1)).is_none());
    assert!(!s.leader_release(&k, &a, t(2)), "already released");
    assert_eq!(s.leader_acquire_or_renew(&k, &b, LEASE, &meta("p"), t(3)).transitions, 0);
}

#[test]
fn an_expired_leader_cannot_release() {
    let mut s = store();
    let (k, a) = (key(KeyKind::Leader, "svc"), token("w1"));
    s.leader_acquire_or_renew(&k, &a, LEASE, &meta("p"), t(0));
    assert!(!s.leader_release(&k, &a, t(200)));
}

// ---- ScheduleBackend (spec §5.3, §8.12) ---------------------------------------------------

#[test]
fn schedule_claims_win_only_with_a_strictly_later_due() {
    let mut s = store();
    let (k, other) = (key(KeyKind::Schedule, "nightly"), key(KeyKind::Schedule, "hourly"));
    assert_eq!(k.as_str(), "nightly", "schedule keys are the bare task name");
    assert_eq!(s.schedule_last_fired(&k), None);
    assert!(s.schedule_claim(&k, 100.0));
    assert!(!s.schedule_claim(&k, 100.0), "an equal due wins once");
    assert!(!s.schedule_claim(&k, 50.0), "an older due loses");
    assert_eq!(s.schedule_last_fired(&k), Some(100.0), "and leaves the state untouched");
    assert!(s.schedule_claim(&k, 100.25));
    assert_eq!(s.schedule_last_fired(&k), Some(100.25));
    assert!(s.schedule_claim(&other, 1.0), "names are independent");
    assert!(!s.schedule_claim(&k, f64::NAN) && !s.schedule_claim(&k, f64::INFINITY));
}

#[test]
fn many_claims_of_one_due_have_exactly_one_winner() {
    let mut s = store();
    let k = key(KeyKind::Schedule, "job");
    let winners = (0..16).filter(|_| s.schedule_claim(&k, 1_767_225_600.0)).count();
    assert_eq!(winners, 1);
}

#[test]
fn plain_string_keys_and_keys_reach_the_same_entry() {
    let mut s = store();
    let a = token("a");
    assert_eq!(s.lock_acquire("lock:cart", &a, LEASE, t(0)), Some(FencingToken::FIRST));
    assert!(s.lock_owned(&key(KeyKind::Lock, "cart"), &a, t(1)));
    assert!(s.lock_release(&key(KeyKind::Lock, "cart"), &a, t(1)));
    assert_eq!(s.last_fence("lock:cart"), Some(FencingToken::FIRST));
}
