//! Queued acquires in the store model: FIFO turns, the hand-off inside a release, lapsed places
//! skipped, grelmicro's plain calls beside the queue — and, over random sequences, one holder at
//! a time, fences that only grow, and no lapsed waiter ever handed the lock.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use proptest::prelude::*;
use support::{key, token};
use tenure_core::{FencingToken, Grant, Key, KeyKind, StoreModel, Timestamp, Token, Waiter, WallTime};

const LEASE: Duration = Duration::from_millis(200);
const WAIT: Duration = Duration::from_millis(50);

fn store() -> StoreModel {
    StoreModel::new(WallTime::from_unix_micros(1_000_000))
}

fn t(ms: u64) -> Timestamp {
    Timestamp::from_nanos(ms * 1_000_000)
}

fn lock() -> Key {
    key(KeyKind::Lock, "cart")
}

fn fence(n: u64) -> FencingToken {
    (1..n).fold(FencingToken::FIRST, |f, _| f.next())
}

/// A queued acquire by `who` at `at`, routed to `route`.
fn attempt(s: &mut StoreModel, who: &Token, route: u64, at: u64) -> (Option<FencingToken>, Option<Grant>) {
    s.lock_acquire_queued(&lock(), who, (LEASE, WAIT), (route, None), t(at))
}

fn tokens(queue: &[Waiter]) -> Vec<&str> {
    queue.iter().map(|w| w.token.as_str()).collect()
}

#[test]
fn releases_hand_the_lock_to_the_waiters_in_the_order_they_queued() {
    let mut s = store();
    let (a, b, c, d) = (token("a"), token("b"), token("c"), token("d"));
    assert_eq!(attempt(&mut s, &a, 1, 0), (Some(fence(1)), None));
    for (who, route) in [(&b, 2), (&c, 3), (&d, 4)] {
        assert_eq!(attempt(&mut s, who, route, 10), (None, None));
    }
    assert_eq!(tokens(&s.lock_queue(&lock(), t(10))), ["b", "c", "d"]);
    let mut holder = a;
    for (next, route, n) in [(&b, 2, 2), (&c, 3, 3), (&d, 4, 4)] {
        let (released, grant) = s.lock_release_queued(&lock(), &holder, t(10 * n));
        assert!(released);
        let grant = grant.unwrap();
        assert_eq!(grant, Grant { token: next.clone(), fence: fence(n), expires_at: t(10 * n) + LEASE, route });
        // The store holds it for the waiter: nobody else gets it, not even grelmicro.
        assert!(s.lock_owned(&lock(), next, t(10 * n)));
        assert_eq!(s.lock_acquire(&lock(), &token("grelmicro"), LEASE, t(10 * n)), None);
        holder = next.clone();
    }
    assert_eq!(s.lock_release_queued(&lock(), &holder, t(100)), (true, None));
    assert!(!s.lock_locked(&lock(), t(100)));
}

#[test]
fn a_waiter_whose_place_lapsed_is_skipped() {
    let mut s = store();
    let (a, b, c) = (token("a"), token("b"), token("c"));
    attempt(&mut s, &a, 1, 0);
    attempt(&mut s, &b, 2, 0); // its place lasts until 50 ms
    attempt(&mut s, &c, 3, 40); // until 90 ms
    let (_, grant) = s.lock_release_queued(&lock(), &a, t(60));
    assert_eq!(grant.unwrap().token, c);
    assert!(s.lock_queue(&lock(), t(60)).is_empty());
    // Nobody live waits: the next release hands nothing over.
    attempt(&mut s, &b, 2, 70);
    assert_eq!(s.lock_release_queued(&lock(), &c, t(130)), (true, None));
}

#[test]
fn asking_again_renews_a_place_without_losing_it() {
    let mut s = store();
    let (a, b, c) = (token("a"), token("b"), token("c"));
    attempt(&mut s, &a, 1, 0);
    attempt(&mut s, &b, 2, 0);
    attempt(&mut s, &c, 3, 10);
    attempt(&mut s, &b, 2, 40); // renewed until 90 ms, still first
    assert_eq!(tokens(&s.lock_queue(&lock(), t(80))), ["b"]);
    let (_, grant) = s.lock_release_queued(&lock(), &a, t(80));
    assert_eq!(grant.unwrap().token, b);
}

#[test]
fn a_free_lock_behind_a_live_waiter_goes_to_that_waiter_not_to_whoever_asks() {
    let mut s = store();
    let (a, b, c) = (token("a"), token("b"), token("c"));
    attempt(&mut s, &a, 1, 0);
    attempt(&mut s, &b, 2, 180);
    // a's lease ran out at 200 ms without a release; c asks at 210 ms: b is handed the lock
    // (c's attempt carries the grant to push), and c queues behind.
    let (fence_c, grant) = attempt(&mut s, &c, 3, 210);
    assert_eq!(fence_c, None);
    assert_eq!(grant, Some(Grant { token: b.clone(), fence: fence(2), expires_at: t(210) + LEASE, route: 2 }));
    assert_eq!(tokens(&s.lock_queue(&lock(), t(210))), ["c"]);
    // b asking again renews what it was handed: same fence.
    assert_eq!(attempt(&mut s, &b, 2, 215), (Some(fence(2)), None));
}

#[test]
fn the_head_takes_a_lock_freed_by_a_plain_release() {
    let mut s = store();
    let (g, b, c) = (token("grelmicro"), token("b"), token("c"));
    assert_eq!(s.lock_acquire(&lock(), &g, LEASE, t(0)), Some(fence(1)));
    attempt(&mut s, &b, 2, 5);
    attempt(&mut s, &c, 3, 6);
    // grelmicro's release hands nothing over; the queue moves at its head's next attempt.
    assert!(s.lock_release(&lock(), &g, t(10)));
    assert_eq!(
        attempt(&mut s, &c, 3, 20),
        (None, Some(Grant { token: b.clone(), fence: fence(2), expires_at: t(20) + LEASE, route: 2 }))
    );
    let mut s2 = store();
    s2.lock_acquire(&lock(), &g, LEASE, t(0));
    attempt(&mut s2, &b, 2, 5);
    s2.lock_release(&lock(), &g, t(10));
    assert_eq!(attempt(&mut s2, &b, 2, 20), (Some(fence(2)), None));
    assert!(s2.lock_queue(&lock(), t(20)).is_empty());
}

#[test]
fn a_waiter_giving_up_leaves_the_queue() {
    let mut s = store();
    let (a, b, c) = (token("a"), token("b"), token("c"));
    attempt(&mut s, &a, 1, 0);
    attempt(&mut s, &b, 2, 0);
    attempt(&mut s, &c, 3, 0);
    assert_eq!(s.lock_release_queued(&lock(), &b, t(10)), (false, None), "b never held; a still does");
    assert_eq!(tokens(&s.lock_queue(&lock(), t(10))), ["c"]);
    let (_, grant) = s.lock_release_queued(&lock(), &a, t(20));
    assert_eq!(grant.unwrap().token, c);
}

// ---- random sequences ------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum Step {
    /// A queued acquire by waiter `i`.
    Queued(usize),
    /// A queued release by `i`.
    Release(usize),
    /// grelmicro's plain acquire / release by `i`.
    Plain(usize, bool),
    /// Time passes (ms).
    Wait(u64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0usize..4).prop_map(Step::Queued),
        3 => (0usize..4).prop_map(Step::Release),
        1 => ((0usize..4), any::<bool>()).prop_map(|(i, a)| Step::Plain(i, a)),
        3 => (0u64..120).prop_map(Step::Wait),
    ]
}

proptest! {
    #[test]
    fn one_holder_growing_fences_and_no_lapsed_waiter_handed_the_lock(steps in prop::collection::vec(step(), 1..80)) {
        let mut s = store();
        let who: Vec<Token> = (0..4).map(|i| token(&format!("w{i}"))).collect();
        // grelmicro's processes, beside the queue.
        let plain: Vec<Token> = (0..4).map(|i| token(&format!("g{i}"))).collect();
        let mut now = 0u64;
        let mut last = None::<FencingToken>;
        for step in steps {
            let queue_before = s.lock_queue(&lock(), t(now));
            let actor = match step { Step::Queued(i) | Step::Release(i) => Some(&who[i]), _ => None };
            let grant = match step {
                Step::Queued(i) => {
                    let (granted, grant) = attempt(&mut s, &who[i], i as u64, now);
                    if let Some(f) = granted {
                        // A grant or a renewal: the holder's fence is never behind the last one.
                        prop_assert!(last.is_none_or(|l| f >= l));
                        if last.is_none_or(|l| f > l) { last = Some(f); }
                        prop_assert!(s.lock_owned(&lock(), &who[i], t(now)));
                    }
                    grant
                }
                Step::Release(i) => s.lock_release_queued(&lock(), &who[i], t(now)).1,
                Step::Plain(i, true) => {
                    if let Some(f) = s.lock_acquire(&lock(), &plain[i], LEASE, t(now)) {
                        prop_assert!(last.is_none_or(|l| f >= l));
                        if last.is_none_or(|l| f > l) { last = Some(f); }
                    }
                    None
                }
                Step::Plain(i, false) => { s.lock_release(&lock(), &plain[i], t(now)); None }
                Step::Wait(ms) => { now += ms; None }
            };
            if let Some(grant) = grant {
                // Handed to the oldest waiter whose place was live, with a fence past every other.
                let head = queue_before.iter().find(|w| w.expires_at >= t(now) && Some(&w.token) != actor);
                prop_assert_eq!(head.map(|w| &w.token), Some(&grant.token));
                prop_assert!(last.is_none_or(|l| grant.fence > l));
                last = Some(grant.fence);
                prop_assert!(s.lock_owned(&lock(), &grant.token, t(now)));
                prop_assert_eq!(grant.expires_at, t(now) + LEASE);
            }
            // One holder at most, and never a waiter still queued behind itself.
            let holders = who.iter().chain(&plain).filter(|w| s.lock_owned(&lock(), w, t(now))).count();
            prop_assert!(holders <= 1);
            if let Some(holder) = who.iter().find(|w| s.lock_owned(&lock(), w, t(now))) {
                prop_assert!(s.lock_queue(&lock(), t(now)).iter().all(|w| w.token != *holder));
            }
        }
    }
}
