//! The fixed cases of the backend contract (spec §5.1–5.3 and the contract tests of §8.1).
//! Each takes a [`Harness`] and panics, naming the backend, when the store breaks the contract.

use std::sync::Arc;
use std::time::Duration;

use tenure_core::{FencingToken, Metadata};

use crate::{Clock, Harness};
use tenure::backend::{LeaderElectionCalls as _, LockCalls as _};

pub use crate::revoke::a_revoked_lease_is_lost_fenced_out_and_held_until_it_would_have_ended;

const LONG: Duration = Duration::from_secs(60);

fn fence(value: Option<FencingToken>, what: &str, harness: &Harness) -> u64 {
    match value {
        Some(f) => f.get(),
        None => panic!("{}: {what}: refused, expected a fencing token", harness.name),
    }
}

/// Unwraps a store call, naming the backend and the call on failure.
macro_rules! call {
    ($harness:expr, $call:expr) => {
        match $call.await {
            Ok(v) => v,
            Err(e) => panic!("{}: {} failed: {e}", $harness.name, stringify!($call)),
        }
    };
}

/// spec §8.1: a fresh acquire returns a fencing token ≥ 1.
pub async fn fresh_acquire_returns_a_fence_of_at_least_one(h: &Harness) {
    let s = h.store().await;
    let f = fence(call!(h, s.lock.acquire("lock:fresh", "t1", LONG)), "fresh acquire", h);
    assert!(f >= 1, "{}: fresh fence {f}", h.name);
}

/// spec §8.1: the same token acquiring twice succeeds both times with the same fence.
pub async fn the_same_token_extends_with_the_same_fence(h: &Harness) {
    let s = h.store().await;
    let a = fence(call!(h, s.lock.acquire("lock:x", "t1", LONG)), "acquire", h);
    let b = fence(call!(h, s.lock.acquire("lock:x", "t1", LONG)), "extend", h);
    assert_eq!(a, b, "{}: an extend changed the fence", h.name);
}

/// A queued acquire takes a free lock, renews its holder's, and is refused while another holds
/// it; once the holder releases, the waiter's next queued acquire holds (a store with a queue
/// handed it over; one without grants it then).
pub async fn a_queued_acquire_takes_renews_and_waits_its_turn(h: &Harness) {
    let s = h.store().await;
    let queued = |token: &str| s.lock.acquire_queued("lock:q", token, LONG, LONG);
    let a = fence(call!(h, queued("t1")), "queued acquire", h);
    let again = fence(call!(h, queued("t1")), "queued renewal", h);
    assert_eq!(a, again, "{}: a queued renewal changed the fence", h.name);
    assert_eq!(call!(h, queued("t2")), None, "{}: a second holder was let in", h.name);
    assert!(call!(h, s.lock.release("lock:q", "t1")), "{}: release", h.name);
    let b = fence(call!(h, queued("t2")), "the waiter's turn", h);
    assert!(b > a, "{}: the waiter's fence {b} is not above {a}", h.name);
}

/// spec §8.1: a different token is refused while the lock is held.
pub async fn another_token_is_refused_while_held(h: &Harness) {
    let s = h.store().await;
    call!(h, s.lock.acquire("lock:x", "t1", LONG));
    assert_eq!(call!(h, s.lock.acquire("lock:x", "t2", LONG)), None, "{}: a second holder was let in", h.name);
}

/// spec §5.1: the same token re-acquiring after its own expiry is a new transition (the next fence).
pub async fn the_same_token_reacquires_after_expiry_with_a_new_fence(h: &Harness) {
    let s = h.store().await;
    let (lease, wait) = h.short_lease();
    let a = fence(call!(h, s.lock.acquire("lock:x", "t1", lease)), "acquire", h);
    h.advance(wait).await;
    let b = fence(call!(h, s.lock.acquire("lock:x", "t1", LONG)), "re-acquire after expiry", h);
    assert!(s.fences.next_after(a, b), "{}: re-acquire after expiry: fence {b} after {a}", h.name);
}

/// spec §8.1: another token takes over after expiry, with a strictly greater fence.
pub async fn another_token_takes_over_after_expiry_with_a_greater_fence(h: &Harness) {
    let s = h.store().await;
    let (lease, wait) = h.short_lease();
    let a = fence(call!(h, s.lock.acquire("lock:x", "t1", lease)), "acquire", h);
    h.advance(wait).await;
    let b = fence(call!(h, s.lock.acquire("lock:x", "t2", LONG)), "takeover", h);
    assert!(b > a, "{}: takeover fence {b} not above {a}", h.name);
    assert!(!call!(h, s.lock.owned("lock:x", "t1")), "{}: the expired holder still owns", h.name);
}

/// spec §8.1: release of a name never acquired is false; by the holder true, then false.
pub async fn release_answers_true_once_and_only_for_a_live_holder(h: &Harness) {
    let s = h.store().await;
    assert!(!call!(h, s.lock.release("lock:never", "t1")), "{}: released a name never taken", h.name);
    call!(h, s.lock.acquire("lock:x", "t1", LONG));
    assert!(!call!(h, s.lock.release("lock:x", "t2")), "{}: a non-holder released", h.name);
    assert!(call!(h, s.lock.release("lock:x", "t1")), "{}: the holder could not release", h.name);
    assert!(!call!(h, s.lock.release("lock:x", "t1")), "{}: a second release answered true", h.name);
    assert!(!call!(h, s.lock.locked("lock:x")), "{}: locked after release", h.name);
}

/// spec §8.1: release after expiry is false (the holder's, and a stranger's).
pub async fn release_after_expiry_is_false(h: &Harness) {
    let s = h.store().await;
    let (lease, wait) = h.short_lease();
    call!(h, s.lock.acquire("lock:x", "t1", lease));
    h.advance(wait).await;
    assert!(!call!(h, s.lock.release("lock:x", "t1")), "{}: released an expired lease", h.name);
    assert!(!call!(h, s.lock.release("lock:x", "t2")), "{}: a stranger released an expired lease", h.name);
}

/// spec §8.1: `locked` false then true; `owned` only for the holder.
pub async fn locked_and_owned_follow_the_holder(h: &Harness) {
    let s = h.store().await;
    assert!(!call!(h, s.lock.locked("lock:x")), "{}: locked before any acquire", h.name);
    assert!(!call!(h, s.lock.owned("lock:x", "t1")), "{}: owned before any acquire", h.name);
    call!(h, s.lock.acquire("lock:x", "t1", LONG));
    assert!(call!(h, s.lock.locked("lock:x")), "{}: not locked after acquire", h.name);
    assert!(call!(h, s.lock.owned("lock:x", "t1")), "{}: the holder does not own", h.name);
    assert!(!call!(h, s.lock.owned("lock:x", "t2")), "{}: another token owns", h.name);
    assert!(!call!(h, s.lock.locked("lock:y")), "{}: names are not independent", h.name);
}

/// spec §5.1: fences start at 1 and strictly increase across release and expiry, per name (a
/// store with [`crate::Fences::Increasing`]: they strictly increase).
pub async fn fences_strictly_increase_across_release_and_expiry(h: &Harness) {
    let s = h.store().await;
    let (lease, wait) = h.short_lease();
    let mut seen = Vec::new();
    for round in 0..3 {
        seen.push(fence(call!(h, s.lock.acquire("lock:x", "t1", LONG)), "acquire", h));
        assert!(call!(h, s.lock.release("lock:x", "t1")), "{}: release", h.name);
        let token = if round % 2 == 0 { "t2" } else { "t1" };
        seen.push(fence(call!(h, s.lock.acquire("lock:x", token, lease)), "acquire to expire", h));
        h.advance(wait).await;
    }
    assert!(s.fences.first(seen[0]), "{}: the first fence of a name: {}", h.name, seen[0]);
    assert!(seen.windows(2).all(|w| s.fences.next_after(w[0], w[1])), "{}: fences {seen:?}", h.name);
    let other = fence(call!(h, s.lock.acquire("lock:other", "t1", LONG)), "another name", h);
    assert!(s.fences.first(other), "{}: fences are per name: another name's first is {other}", h.name);
}

/// spec §6.1/§6.4: a lock is live *at* its expiry instant and free just after (to the store's
/// resolution). Exact only where the clock can be driven; on real clocks, half a lease before
/// and half a lease after (plus the store's lateness).
pub async fn a_lock_is_live_through_its_expiry_instant(h: &Harness) {
    let s = h.store().await;
    let lease = h.lease(Duration::from_millis(1000));
    let a = fence(call!(h, s.lock.acquire("lock:edge", "t1", lease)), "acquire", h);
    let (at_expiry, after) = match h.clock {
        Clock::Manual(_) => (lease, Duration::from_millis(1)),
        Clock::Real { .. } => (lease / 2, lease + h.leases.late),
    };
    h.advance(at_expiry).await;
    assert!(call!(h, s.lock.locked("lock:edge")), "{}: not live at its expiry instant", h.name);
    assert!(call!(h, s.lock.owned("lock:edge", "t1")), "{}: not owned at its expiry instant", h.name);
    assert_eq!(call!(h, s.lock.acquire("lock:edge", "t2", lease)), None, "{}: taken at its expiry instant", h.name);
    h.advance(after).await;
    assert!(!call!(h, s.lock.locked("lock:edge")), "{}: live after its expiry", h.name);
    let b = fence(call!(h, s.lock.acquire("lock:edge", "t2", lease)), "takeover just after expiry", h);
    assert!(s.fences.next_after(a, b), "{}: takeover fence {b} after {a}", h.name);
}

fn meta(pairs: &[(&str, &str)]) -> Metadata {
    Metadata::from_pairs(pairs.iter().copied()).unwrap_or_default()
}

/// spec §5.2: no record → created; live and same holder → renewed, `acquired_at` and
/// transitions kept; live and another holder → that record, untouched.
pub async fn a_leader_record_is_created_renewed_and_refused(h: &Harness) {
    let s = h.store().await;
    let lease = Duration::from_secs(15);
    let m = meta(&[("pod", "p1")]);
    let first = call!(h, s.leader.acquire_or_renew("leader:svc", "w1", lease, &m));
    assert_eq!((first.holder.as_str(), first.transitions), ("w1", 0), "{}: created", h.name);
    assert_eq!(first.acquired_at, first.renewed_at, "{}: a new record's times", h.name);
    assert_eq!(first.lease_duration, lease, "{}: lease", h.name);
    h.advance(Duration::from_millis(300)).await;
    let renewed = call!(h, s.leader.acquire_or_renew("leader:svc", "w1", lease * 2, &m));
    assert_eq!(renewed.acquired_at, first.acquired_at, "{}: a renewal moved acquired_at", h.name);
    assert!(renewed.renewed_at > first.renewed_at, "{}: a renewal kept renewed_at", h.name);
    assert_eq!((renewed.transitions, renewed.lease_duration), (0, lease * 2), "{}: renewal", h.name);
    let refused = call!(h, s.leader.acquire_or_renew("leader:svc", "w2", lease, &meta(&[])));
    assert_eq!(refused, renewed, "{}: another holder's call changed or hid the record", h.name);
    assert_eq!(call!(h, s.leader.get("leader:svc")), Some(renewed), "{}: get", h.name);
}

/// spec §5.2: a record is expired at exactly `renewed_at + lease`.
pub async fn a_leader_record_expires_at_renewed_plus_lease(h: &Harness) {
    let s = h.store().await;
    let lease = h.lease(Duration::from_millis(1000));
    call!(h, s.leader.acquire_or_renew("leader:edge", "w1", lease, &meta(&[])));
    let (before, at) = match h.clock {
        Clock::Manual(_) => (lease - Duration::from_millis(1), Duration::from_millis(1)),
        Clock::Real { .. } => (lease / 2, lease + h.leases.late),
    };
    h.advance(before).await;
    assert!(call!(h, s.leader.get("leader:edge")).is_some(), "{}: expired before its end", h.name);
    h.advance(at).await;
    assert_eq!(call!(h, s.leader.get("leader:edge")), None, "{}: live at renewed_at + lease", h.name);
    assert!(!call!(h, s.leader.release("leader:edge", "w1")), "{}: released an expired record", h.name);
}

/// spec §5.2: a takeover of an expired record by another holder adds a transition (by the same
/// holder, none); a release deletes the record, so the next one starts at 0.
pub async fn a_takeover_counts_a_transition_and_a_release_deletes_the_record(h: &Harness) {
    let s = h.store().await;
    let (lease, wait) = h.short_lease();
    let none = meta(&[]);
    call!(h, s.leader.acquire_or_renew("leader:x", "w1", lease, &none));
    h.advance(wait).await;
    let same = call!(h, s.leader.acquire_or_renew("leader:x", "w1", lease, &none));
    assert_eq!((same.holder.as_str(), same.transitions), ("w1", 0), "{}: same holder after expiry", h.name);
    assert_eq!(same.acquired_at, same.renewed_at, "{}: a retaken record's acquired_at", h.name);
    h.advance(wait).await;
    let taken = call!(h, s.leader.acquire_or_renew("leader:x", "w2", LONG, &none));
    assert_eq!((taken.holder.as_str(), taken.transitions), ("w2", 1), "{}: takeover", h.name);
    assert!(!call!(h, s.leader.release("leader:x", "w1")), "{}: a non-holder released", h.name);
    assert!(call!(h, s.leader.release("leader:x", "w2")), "{}: the holder could not release", h.name);
    assert_eq!(call!(h, s.leader.get("leader:x")), None, "{}: a released record is still there", h.name);
    let fresh = call!(h, s.leader.acquire_or_renew("leader:x", "w3", LONG, &none));
    assert_eq!((fresh.holder.as_str(), fresh.transitions), ("w3", 0), "{}: after release", h.name);
}

/// A term's fence (Tenure's, kept beside grelmicro's record): a take gets one above every term's
/// before it on the name, a renewal keeps it, another holder's call reads it, a release does not
/// reset it, and the same holder taking its expired lease again begins a new term.
pub async fn a_term_s_fence_rises_with_every_take_and_survives_a_release(h: &Harness) {
    let s = h.store().await;
    let (lease, wait) = h.short_lease();
    let none = meta(&[]);
    let first = call!(h, s.leader.acquire_or_renew("leader:f", "w1", LONG, &none));
    let f1 = first.fence.unwrap_or_else(|| panic!("{}: a take without a fence: {first:?}", h.name));
    let renewed = call!(h, s.leader.acquire_or_renew("leader:f", "w1", LONG, &none));
    assert_eq!(renewed.fence, Some(f1), "{}: a renewal changed the term's fence", h.name);
    let refused = call!(h, s.leader.acquire_or_renew("leader:f", "w2", LONG, &none));
    assert_eq!((refused.holder.as_str(), refused.fence), ("w1", Some(f1)), "{}: another's call", h.name);
    assert_eq!(call!(h, s.leader.get("leader:f")).and_then(|r| r.fence), Some(f1), "{}: get", h.name);
    assert!(call!(h, s.leader.release("leader:f", "w1")), "{}: the holder could not release", h.name);
    let second = call!(h, s.leader.acquire_or_renew("leader:f", "w2", lease, &none));
    let f2 = second.fence.unwrap_or_else(|| panic!("{}: a take without a fence: {second:?}", h.name));
    assert!(f2 > f1, "{}: the term after a release has fence {f2}, not above {f1}", h.name);
    h.advance(wait).await;
    let third = call!(h, s.leader.acquire_or_renew("leader:f", "w2", LONG, &none));
    let f3 = third.fence.unwrap_or_else(|| panic!("{}: a take without a fence: {third:?}", h.name));
    assert!(f3 > f2, "{}: a lease taken again after it ran out kept fence {f3} (the last: {f2})", h.name);
}

/// spec §5.2: metadata is stored with the record and replaced on renewal.
pub async fn leader_metadata_round_trips(h: &Harness) {
    let s = h.store().await;
    let first = meta(&[("pod", "p1"), ("zone", "eu-west-1a"), ("quote", "\"a\" 'b' {c}")]);
    let r = call!(h, s.leader.acquire_or_renew("leader:m", "w1", LONG, &first));
    assert_eq!(r.metadata, first, "{}: metadata as written", h.name);
    assert_eq!(call!(h, s.leader.get("leader:m")).map(|r| r.metadata), Some(first), "{}: metadata read", h.name);
    let second = meta(&[("pod", "p2")]);
    let r = call!(h, s.leader.acquire_or_renew("leader:m", "w1", LONG, &second));
    assert_eq!(r.metadata, second, "{}: metadata replaced on renewal", h.name);
}

/// spec §5.3 and §8.12: a claim wins only with a strictly later due; names are independent.
pub async fn schedule_claims_win_only_with_a_later_due(h: &Harness) {
    let s = h.store().await;
    assert_eq!(call!(h, s.schedule.last_fired("nightly")), None, "{}: last_fired before any claim", h.name);
    assert!(call!(h, s.schedule.claim("nightly", 1_767_229_200.25)), "{}: first claim", h.name);
    assert!(!call!(h, s.schedule.claim("nightly", 1_767_229_200.25)), "{}: the same due twice", h.name);
    assert!(!call!(h, s.schedule.claim("nightly", 1_767_229_100.0)), "{}: an older due", h.name);
    assert_eq!(call!(h, s.schedule.last_fired("nightly")), Some(1_767_229_200.25), "{}: state", h.name);
    assert!(call!(h, s.schedule.claim("nightly", 1_767_229_300.5)), "{}: a later due", h.name);
    assert!(call!(h, s.schedule.claim("hourly", 1.0)), "{}: names are independent", h.name);
    assert_eq!(call!(h, s.schedule.last_fired("nightly")), Some(1_767_229_300.5), "{}: advanced", h.name);
}

/// Many concurrent acquires of one free name: exactly one wins.
pub async fn concurrent_acquires_have_one_winner(h: &Harness) {
    let s = h.store().await;
    let lock = s.lock.clone();
    let attempts = (0..16).map(|i| {
        let lock = Arc::clone(&lock);
        tokio::spawn(async move { lock.acquire("lock:race", &format!("t{i}"), LONG).await })
    });
    let mut winners = 0;
    for attempt in attempts {
        match attempt.await {
            Ok(Ok(Some(_))) => winners += 1,
            Ok(Ok(None)) => {}
            Ok(Err(e)) => panic!("{}: a concurrent acquire failed: {e}", h.name),
            Err(e) => panic!("{}: a task panicked: {e}", h.name),
        }
    }
    assert_eq!(winners, 1, "{}: winners of one free name", h.name);
}

/// spec §8.12: many concurrent claims of one due: exactly one wins.
pub async fn concurrent_claims_have_one_winner(h: &Harness) {
    let s = h.store().await;
    let schedule = s.schedule.clone();
    let claims = (0..16).map(|_| {
        let schedule = Arc::clone(&schedule);
        tokio::spawn(async move { schedule.claim("race", 42.0).await })
    });
    let mut winners = 0;
    for claim in claims {
        match claim.await {
            Ok(Ok(true)) => winners += 1,
            Ok(Ok(false)) => {}
            Ok(Err(e)) => panic!("{}: a concurrent claim failed: {e}", h.name),
            Err(e) => panic!("{}: a task panicked: {e}", h.name),
        }
    }
    assert_eq!(winners, 1, "{}: winners of one due", h.name);
}

/// Random operation sequences against the backend and the store model side by side.
pub async fn random_sequences_match_the_store_model(h: &Harness) {
    let ops = if matches!(h.clock, Clock::Manual(_)) { 60 } else { 30 };
    sequences_match_the_store_model(h, crate::random::Mix::All, h.sequences(200, 3), ops).await;
}

/// Random sequences of queued and plain acquires and releases on one name: the store's queue of
/// waiters against the model's (a store that keeps no queue answers them as plain calls).
pub async fn queued_sequences_match_the_store_model(h: &Harness) {
    let ops = if matches!(h.clock, Clock::Manual(_)) { 60 } else { 30 };
    sequences_match_the_store_model(h, crate::random::Mix::Queue, h.sequences(200, 8), ops).await;
}

pub(crate) async fn sequences_match_the_store_model(h: &Harness, mix: crate::random::Mix, sequences: u64, ops: usize) {
    let seed = std::env::var("TENURE_CONFORMANCE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x7e4e);
    for i in 0..sequences {
        // A real-clock sequence the machine ran too slowly to judge runs again on a fresh store,
        // from the second time on a grid twice as coarse each time (a loaded machine's scheduling
        // delays of 100 ms and more then fit in half a quantum).
        let mut late = Vec::new();
        let mut coarser = 1;
        while let Err(too_late) = crate::random::compare(h, mix, seed + i, ops, coarser).await {
            if !late.is_empty() {
                coarser *= 2;
            }
            late.push(too_late);
            assert!(
                late.len() < 5,
                "{}: sequence {} ran too late to judge {} times: {late:?}",
                h.name,
                seed + i,
                late.len()
            );
        }
        if !late.is_empty() {
            eprintln!("{}: sequence {} ran again after running too late: {late:?}", h.name, seed + i);
        }
    }
}
