//! Fenced semaphores in the store model: at most `permits` live holders, fencing tokens that
//! strictly increase across every permit, arrival order among waiters that keep a place, and the
//! stored permit count; then random sequences checked against those invariants.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use proptest::prelude::*;
use support::{key, token};
use tenure_core::{FencingToken, Key, KeyKind, PermitAnswer, SemState, StoreModel, Timestamp, Token, WallTime};

fn store() -> StoreModel {
    StoreModel::new(WallTime::from_unix_micros(1_000_000))
}

fn t(ms: u64) -> Timestamp {
    Timestamp::from_nanos(ms * 1_000_000)
}

fn pool() -> Key {
    key(KeyKind::Semaphore, "pool")
}

const LEASE: Duration = Duration::from_millis(200);

fn granted(fence: u64, permits: u32) -> PermitAnswer {
    PermitAnswer { fence: Some(FencingToken::new(fence)), permits }
}

fn refused(permits: u32) -> PermitAnswer {
    PermitAnswer { fence: None, permits }
}

#[test]
fn an_untouched_name_is_free_with_no_count_and_questions_leave_nothing_behind() {
    let mut s = store();
    assert_eq!(s.sem_state(&pool(), t(0)), SemState::default());
    assert!(!s.sem_owned(&pool(), &token("a"), t(0)));
    assert!(!s.sem_release(&pool(), &token("a"), t(0)));
    assert!(s.sem_holders(&pool(), t(0)).is_empty());
    assert_eq!(s.sem_state(&pool(), t(0)), SemState::default());
}

#[test]
fn permits_are_granted_up_to_the_count_each_with_a_greater_fencing_token() {
    let mut s = store();
    let (a, b, c) = (token("a"), token("b"), token("c"));
    assert_eq!(s.sem_acquire(&pool(), &a, LEASE, 2, None, t(0)), granted(1, 2));
    assert_eq!(s.sem_acquire(&pool(), &b, LEASE, 2, None, t(1)), granted(2, 2));
    assert_eq!(s.sem_acquire(&pool(), &c, LEASE, 2, None, t(2)), refused(2), "both permits are taken");
    assert_eq!(s.sem_acquire(&pool(), &a, LEASE, 2, None, t(3)), granted(1, 2), "a renewal keeps its fence");
    assert_eq!(s.sem_state(&pool(), t(4)), SemState { permits: 2, holders: 2, waiting: 0, fence: 2 });
    assert!(s.sem_owned(&pool(), &a, t(4)) && !s.sem_owned(&pool(), &c, t(4)));
    assert!(s.sem_release(&pool(), &a, t(5)));
    assert!(!s.sem_release(&pool(), &a, t(5)), "released once");
    assert_eq!(s.sem_acquire(&pool(), &c, LEASE, 2, None, t(6)), granted(3, 2));
}

#[test]
fn a_lease_is_live_through_its_expiry_instant_and_an_expired_permit_is_free_again() {
    let mut s = store();
    let (a, b) = (token("a"), token("b"));
    assert_eq!(s.sem_acquire(&pool(), &a, LEASE, 1, None, t(0)), granted(1, 1));
    assert_eq!(s.sem_acquire(&pool(), &b, LEASE, 1, None, t(200)), refused(1), "live at its expiry instant");
    assert_eq!(s.sem_acquire(&pool(), &b, LEASE, 1, None, t(201)), granted(2, 1));
    assert!(!s.sem_release(&pool(), &a, t(202)), "an expired holder releases nothing");
    assert_eq!(s.sem_acquire(&pool(), &a, LEASE, 1, None, t(203)), refused(1), "its extend finds it gone");
}

#[test]
fn waiters_that_keep_a_place_are_served_in_arrival_order() {
    let mut s = store();
    let (a, b, c, d) = (token("a"), token("b"), token("c"), token("d"));
    let wait = Some(LEASE);
    assert_eq!(s.sem_acquire(&pool(), &a, LEASE, 1, wait, t(0)), granted(1, 1));
    assert_eq!(s.sem_acquire(&pool(), &b, LEASE, 1, wait, t(1)), refused(1));
    assert_eq!(s.sem_acquire(&pool(), &c, LEASE, 1, wait, t(2)), refused(1));
    assert_eq!(s.sem_state(&pool(), t(3)).waiting, 2);
    assert!(s.sem_release(&pool(), &a, t(4)));
    assert_eq!(s.sem_acquire(&pool(), &c, LEASE, 1, wait, t(5)), refused(1), "b arrived first");
    assert_eq!(s.sem_acquire(&pool(), &d, LEASE, 1, None, t(5)), refused(1), "a single attempt waits behind too");
    assert_eq!(s.sem_acquire(&pool(), &b, LEASE, 1, wait, t(6)), granted(2, 1));
    assert!(s.sem_release(&pool(), &b, t(7)));
    assert_eq!(s.sem_acquire(&pool(), &c, LEASE, 1, wait, t(8)), granted(3, 1));
    assert_eq!(s.sem_state(&pool(), t(9)).waiting, 0);
}

#[test]
fn a_waiter_that_left_or_lapsed_holds_nobody_back() {
    let mut s = store();
    let (a, b, c) = (token("a"), token("b"), token("c"));
    let wait = Some(Duration::from_millis(50));
    assert_eq!(s.sem_acquire(&pool(), &a, LEASE, 1, None, t(0)), granted(1, 1));
    assert_eq!(s.sem_acquire(&pool(), &b, LEASE, 1, wait, t(1)), refused(1));
    assert!(!s.sem_release(&pool(), &b, t(2)), "leaving the line is no release of a permit");
    assert!(s.sem_release(&pool(), &a, t(3)));
    assert_eq!(s.sem_acquire(&pool(), &c, LEASE, 1, None, t(4)), granted(2, 1), "b left");

    assert_eq!(s.sem_acquire(&pool(), &b, LEASE, 1, wait, t(5)), refused(1));
    assert!(s.sem_release(&pool(), &c, t(6)));
    assert_eq!(s.sem_acquire(&pool(), &a, LEASE, 1, None, t(55)), refused(1), "b's place lasts through t(55)");
    assert_eq!(s.sem_acquire(&pool(), &a, LEASE, 1, None, t(56)), granted(3, 1), "b's place lapsed");
}

#[test]
fn the_permit_count_is_stored_and_another_count_is_refused_until_the_name_is_empty() {
    let mut s = store();
    let (a, b) = (token("a"), token("b"));
    assert_eq!(s.sem_acquire(&pool(), &a, LEASE, 3, None, t(0)), granted(1, 3));
    assert_eq!(s.sem_acquire(&pool(), &b, LEASE, 5, Some(LEASE), t(1)), refused(3), "the stored count answers");
    assert_eq!(s.sem_state(&pool(), t(2)).waiting, 0, "a mismatch keeps no place");
    assert!(s.sem_release(&pool(), &a, t(3)));
    assert_eq!(s.sem_state(&pool(), t(4)), SemState { permits: 0, holders: 0, waiting: 0, fence: 1 });
    assert_eq!(s.sem_acquire(&pool(), &b, LEASE, 5, None, t(5)), granted(2, 5), "an empty name takes the new count");
}

#[derive(Clone, Debug)]
enum Op {
    Acquire(usize, bool),
    Release(usize),
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..6usize, any::<bool>()).prop_map(|(i, wait)| Op::Acquire(i, wait)),
        2 => (0..6usize).prop_map(Op::Release),
        2 => (0..120u64).prop_map(Op::Advance),
    ]
}

proptest! {
    /// Never more than `permits` live holders; every new grant's fencing token is greater than
    /// every earlier one; a renewal keeps the fence; a waiter with a live place is never
    /// overtaken by a later arrival.
    #[test]
    fn random_sequences_keep_the_semaphore_invariants(ops in prop::collection::vec(op(), 1..150), permits in 1..4u32) {
        let mut s = store();
        let k = pool();
        let tokens: Vec<Token> = (0..6).map(|i| token(&format!("t{i}"))).collect();
        let mut now = t(0);
        let mut last_fence = 0u64;
        // What this test believes each token holds (fence, end of lease), and who waits since when.
        let mut held: Vec<Option<(u64, Timestamp)>> = vec![None; tokens.len()];
        let mut places: Vec<Option<(u64, Timestamp)>> = vec![None; tokens.len()];
        let mut arrivals = 0u64;
        for op in ops {
            for h in &mut held { if h.is_some_and(|(_, until)| until < now) { *h = None; } }
            for p in &mut places { if p.is_some_and(|(_, until)| until < now) { *p = None; } }
            match op {
                Op::Acquire(i, wait) => {
                    let answer = s.sem_acquire(&k, &tokens[i], LEASE, permits, wait.then_some(LEASE), now);
                    prop_assert_eq!(answer.permits, permits);
                    match (answer.fence, held[i]) {
                        (Some(f), Some((mine, _))) => prop_assert_eq!(f.get(), mine, "a renewal keeps the fence"),
                        (Some(f), None) => {
                            prop_assert!(f.get() > last_fence, "fences strictly increase across permits");
                            last_fence = f.get();
                            let mine = places[i].map_or(u64::MAX, |(since, _)| since);
                            let overtaken = places.iter().flatten().any(|(since, _)| *since < mine);
                            prop_assert!(!overtaken || held.iter().flatten().count() + 1 < permits as usize,
                                "a grant never overtakes an earlier waiter when it takes the last free permit");
                            places[i] = None;
                        }
                        (None, _) => {
                            prop_assert!(held[i].is_none(), "a holder's renewal is never refused");
                            if wait {
                                let since = places[i].map_or_else(|| { arrivals += 1; arrivals }, |(since, _)| since);
                                places[i] = Some((since, now + LEASE));
                            }
                        }
                    }
                    if let Some(f) = answer.fence { held[i] = Some((f.get(), now + LEASE)); }
                }
                Op::Release(i) => {
                    prop_assert_eq!(s.sem_release(&k, &tokens[i], now), held[i].is_some());
                    held[i] = None;
                    places[i] = None;
                }
                Op::Advance(ms) => now = now + Duration::from_millis(ms),
            }
            let live = s.sem_holders(&k, now);
            prop_assert!(live.len() <= permits as usize, "{} holders of {} permits", live.len(), permits);
            prop_assert_eq!(live.len(), held.iter().flatten().filter(|(_, until)| *until >= now).count());
        }
    }
}

#[test]
fn a_permit_keeps_its_holders_details_until_it_goes() {
    use tenure_core::{HolderDetails, StoreOp, StoreReply};
    let mut s = store();
    let acquire = |who: &str, details: Option<&str>| StoreOp::SemAcquire {
        key: pool(),
        token: token(who),
        lease: Duration::from_millis(200),
        permits: 1,
        wait: Some(Duration::from_millis(200)),
        details: details.map(|text| HolderDetails::new(text).unwrap()),
    };
    assert_eq!(s.apply(&acquire("a", Some("first")), t(0)), StoreReply::Permit(granted(1, 1)));
    assert_eq!(s.apply(&acquire("b", Some("second")), t(1)), StoreReply::Permit(refused(1)));
    assert_eq!(s.held_details(&pool(), &token("b")), None, "a waiter's place keeps nothing");
    assert_eq!(s.apply(&acquire("a", None), t(100)), StoreReply::Permit(granted(1, 1)));
    assert_eq!(s.held_details(&pool(), &token("a")).map(|(at, d)| (at, d.as_str())), Some((t(0), "first")));
    assert!(s.sem_release(&pool(), &token("a"), t(150)));
    assert_eq!(s.held_details(&pool(), &token("a")), None);
    assert_eq!(s.apply(&acquire("b", Some("second")), t(160)), StoreReply::Permit(granted(2, 1)));
    assert_eq!(s.held_details(&pool(), &token("b")).map(|(at, _)| at), Some(t(160)));
    s.sem_state(&pool(), t(400));
    assert_eq!(s.held_details(&pool(), &token("b")), None, "an expired permit's go with it");
}
