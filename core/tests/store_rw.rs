//! Read-write locks in the store model: the `ReadWriteLockBackend` contract of spec §5.4 and the
//! cases of §8.13, then random sequences checked against the invariants every store must keep.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use proptest::prelude::*;
use support::{key, token};
use tenure_core::{FencingToken, Key, KeyKind, RwState, StoreModel, StoreOp, StoreReply, Timestamp, Token, WallTime};

fn store() -> StoreModel {
    StoreModel::new(WallTime::from_unix_micros(1_000_000))
}

fn t(ms: u64) -> Timestamp {
    Timestamp::from_nanos(ms * 1_000_000)
}

fn doc() -> Key {
    key(KeyKind::ReadWriteLock, "doc")
}

const LEASE: Duration = Duration::from_millis(200);
const GEN0: Option<FencingToken> = Some(FencingToken::new(0));

fn fence(n: u64) -> FencingToken {
    FencingToken::new(n)
}

#[test]
fn an_untouched_name_reads_as_generation_zero_and_free_and_questions_leave_nothing_behind() {
    let mut s = store();
    assert_eq!(s.rw_state(&doc(), t(0)), RwState::default());
    assert!(!s.rw_owned_read(&doc(), &token("a"), t(0)) && !s.rw_owned_write(&doc(), &token("a"), t(0)));
    assert!(!s.rw_release_read(&doc(), &token("a"), t(0)) && !s.rw_release_write(&doc(), &token("a"), t(0)));
    assert!(!s.rw_cancel_intent(&doc(), &token("a"), t(0)));
    assert_eq!(s.rw_downgrade(&doc(), &token("a"), LEASE, t(0)), None);
    assert_eq!(s.rw_holders(&doc(), t(0)), (None, Vec::new()));
}

#[test]
fn readers_share_and_exclude_a_writer_which_records_an_intent_that_holds_new_readers_out() {
    let mut s = store();
    let (r1, r2, w, r3) = (token("r1"), token("r2"), token("w"), token("r3"));
    assert_eq!(s.rw_acquire_read(&doc(), &r1, LEASE, t(0)), GEN0);
    assert_eq!(s.rw_acquire_read(&doc(), &r2, LEASE, t(1)), GEN0);
    assert_eq!(s.rw_acquire_write(&doc(), &w, LEASE, true, t(2)), None);
    assert_eq!(s.rw_state(&doc(), t(3)), RwState { generation: 0, writing: false, readers: 2, waiting_writers: 1 });
    assert_eq!(s.rw_acquire_read(&doc(), &r3, LEASE, t(4)), None, "the intent holds a new reader out");
    assert_eq!(s.rw_acquire_read(&doc(), &r1, LEASE, t(5)), GEN0, "a reader already in may renew");
    assert!(s.rw_release_read(&doc(), &r1, t(6)) && s.rw_release_read(&doc(), &r2, t(7)));
    let grant = s.rw_acquire_write(&doc(), &w, LEASE, true, t(8)).unwrap();
    assert_eq!((grant.fence, grant.poisoned), (fence(1), false));
    assert_eq!(s.rw_state(&doc(), t(9)), RwState { generation: 1, writing: true, readers: 0, waiting_writers: 0 });
    assert_eq!(s.rw_acquire_read(&doc(), &r3, LEASE, t(10)), None, "the writer holds readers out");
}

#[test]
fn a_nowait_writer_records_no_intent_and_cancel_intent_lets_readers_in() {
    let mut s = store();
    let (r, w) = (token("r"), token("w"));
    s.rw_acquire_read(&doc(), &r, LEASE, t(0)).unwrap();
    assert_eq!(s.rw_acquire_write(&doc(), &w, LEASE, false, t(1)), None);
    assert_eq!(s.rw_state(&doc(), t(2)).waiting_writers, 0);
    assert_eq!(s.rw_acquire_read(&doc(), &token("r2"), LEASE, t(3)), GEN0);
    assert_eq!(s.rw_acquire_write(&doc(), &w, LEASE, true, t(4)), None);
    assert!(s.rw_cancel_intent(&doc(), &w, t(5)));
    assert!(!s.rw_cancel_intent(&doc(), &w, t(6)), "once");
    assert_eq!(s.rw_acquire_read(&doc(), &token("r3"), LEASE, t(7)), GEN0);
}

#[test]
fn an_intent_lapses_at_the_end_of_its_lease() {
    let mut s = store();
    s.rw_acquire_read(&doc(), &token("r"), Duration::from_secs(10), t(0)).unwrap();
    assert_eq!(s.rw_acquire_write(&doc(), &token("w"), LEASE, true, t(0)), None);
    assert_eq!(s.rw_acquire_read(&doc(), &token("r2"), LEASE, t(200)), None, "live at its expiry instant");
    assert_eq!(s.rw_acquire_read(&doc(), &token("r2"), LEASE, Timestamp::from_nanos(200_000_001)), GEN0);
}

#[test]
fn generations_grow_per_write_a_renewal_keeps_it_and_readers_see_the_last_write() {
    let mut s = store();
    let (w1, w2, r) = (token("w1"), token("w2"), token("r"));
    assert_eq!(s.rw_acquire_write(&doc(), &w1, LEASE, true, t(0)).unwrap().fence, fence(1));
    assert_eq!(s.rw_acquire_write(&doc(), &w1, LEASE, true, t(100)).unwrap().fence, fence(1), "renewed");
    assert_eq!(s.rw_acquire_write(&doc(), &w2, LEASE, true, t(150)), None);
    assert!(s.rw_release_write(&doc(), &w1, t(160)));
    assert_eq!(s.rw_state(&doc(), t(161)).waiting_writers, 1, "w2's intent");
    let second = s.rw_acquire_write(&doc(), &w2, LEASE, true, t(170)).unwrap();
    assert_eq!((second.fence, second.poisoned), (fence(2), false), "a clean release does not poison");
    assert_eq!(s.rw_state(&doc(), t(171)).waiting_writers, 0, "the grant withdrew w2's intent");
    assert!(s.rw_release_write(&doc(), &w2, t(180)));
    assert_eq!(s.rw_acquire_read(&doc(), &r, LEASE, t(190)), Some(fence(2)));
}

#[test]
fn an_expired_writer_poisons_the_next_grant_once_and_readers_are_reaped_by_a_writer() {
    let mut s = store();
    let (w1, w2, r) = (token("w1"), token("w2"), token("r"));
    s.rw_acquire_write(&doc(), &w1, LEASE, true, t(0)).unwrap();
    assert_eq!(s.rw_acquire_write(&doc(), &w2, LEASE, true, t(200)), None, "live at its expiry instant");
    let grant = s.rw_acquire_write(&doc(), &w2, LEASE, true, t(201)).unwrap();
    assert_eq!((grant.fence, grant.poisoned), (fence(2), true));
    assert!(!s.rw_release_write(&doc(), &w1, t(202)), "w1's lease is gone");
    assert!(s.rw_release_write(&doc(), &w2, t(203)));
    s.rw_acquire_read(&doc(), &r, LEASE, t(300)).unwrap();
    let after_reader = s.rw_acquire_write(&doc(), &w1, LEASE, true, t(501)).unwrap();
    assert_eq!((after_reader.fence, after_reader.poisoned), (fence(3), false), "an expired reader poisons nothing");
    assert!(!s.rw_owned_read(&doc(), &r, t(502)));
}

#[test]
fn a_renewal_of_an_expired_write_lease_is_a_new_grant_with_a_new_fence_and_poisoned() {
    let mut s = store();
    let w = token("w");
    s.rw_acquire_write(&doc(), &w, LEASE, true, t(0)).unwrap();
    let again = s.rw_acquire_write(&doc(), &w, LEASE, false, t(300)).unwrap();
    assert_eq!((again.fence, again.poisoned), (fence(2), true));
}

#[test]
fn downgrade_leaves_the_caller_reading_keeps_writers_out_and_needs_the_write_lease() {
    let mut s = store();
    let (w, w2, r) = (token("w"), token("w2"), token("r"));
    assert_eq!(s.rw_downgrade(&doc(), &w, LEASE, t(0)), None, "without the write lease");
    s.rw_acquire_write(&doc(), &w, LEASE, true, t(0)).unwrap();
    assert_eq!(s.rw_downgrade(&doc(), &w, LEASE, t(10)), Some(fence(1)));
    assert!(s.rw_owned_read(&doc(), &w, t(11)) && !s.rw_owned_write(&doc(), &w, t(11)));
    assert_eq!(s.rw_acquire_write(&doc(), &w2, LEASE, true, t(12)), None, "the new reader keeps writers out");
    assert_eq!(s.rw_acquire_read(&doc(), &r, LEASE, t(13)), None, "and w2's intent new readers");
    assert_eq!(s.rw_downgrade(&doc(), &w, LEASE, t(14)), None, "once");
    assert!(s.rw_release_read(&doc(), &w, t(15)));
    let next = s.rw_acquire_write(&doc(), &w2, LEASE, true, t(16)).unwrap();
    assert_eq!((next.fence, next.poisoned), (fence(2), false), "a downgrade is a clean end of the write");
}

#[test]
fn apply_answers_each_operation_in_its_shape() {
    let mut s = store();
    let (k, a) = (doc(), token("a"));
    let read = StoreOp::RwAcquireRead { key: k.clone(), token: a.clone(), lease: LEASE, details: None };
    assert_eq!(s.apply(&read, t(0)), StoreReply::Fence(GEN0));
    let write =
        StoreOp::RwAcquireWrite { key: k.clone(), token: token("b"), lease: LEASE, intent: true, details: None };
    assert_eq!(s.apply(&write, t(1)), StoreReply::Write(None));
    assert_eq!(
        s.apply(&StoreOp::RwState { key: k.clone() }, t(2)),
        StoreReply::Rw(RwState { generation: 0, writing: false, readers: 1, waiting_writers: 1 })
    );
    assert_eq!(s.apply(&StoreOp::RwOwnedRead { key: k.clone(), token: a.clone() }, t(3)), StoreReply::Flag(true));
    assert_eq!(s.apply(&StoreOp::RwReleaseRead { key: k.clone(), token: a.clone() }, t(4)), StoreReply::Flag(true));
    let cancel = StoreOp::RwCancelIntent { key: k.clone(), token: token("b") };
    assert_eq!(s.apply(&cancel, t(5)), StoreReply::Flag(true));
    let write =
        StoreOp::RwAcquireWrite { key: k.clone(), token: a.clone(), lease: LEASE, intent: false, details: None };
    assert!(matches!(s.apply(&write, t(6)), StoreReply::Write(Some(g)) if g.fence == fence(1)));
    assert_eq!(s.apply(&StoreOp::RwOwnedWrite { key: k.clone(), token: a.clone() }, t(7)), StoreReply::Flag(true));
    let down = StoreOp::RwDowngrade { key: k.clone(), token: a.clone(), lease: LEASE };
    assert_eq!(s.apply(&down, t(8)), StoreReply::Fence(Some(fence(1))));
    assert_eq!(s.apply(&StoreOp::RwReleaseWrite { key: k, token: a }, t(9)), StoreReply::Flag(false));
}

#[test]
fn vacate_expired_reaps_read_write_locks_too_and_keeps_the_generation() {
    let mut s = store();
    s.rw_acquire_write(&doc(), &token("w"), LEASE, true, t(0)).unwrap();
    s.vacate_expired(t(300));
    assert_eq!(s.rw_holders(&doc(), t(300)), (None, Vec::new()));
    let next = s.rw_acquire_write(&doc(), &token("w2"), LEASE, true, t(301)).unwrap();
    assert_eq!((next.fence, next.poisoned), (fence(2), true));
}

// ---- invariants over random sequences ---------------------------------------------------

#[derive(Clone, Debug)]
enum Op {
    Read(usize),
    Write(usize, bool),
    ReleaseRead(usize),
    ReleaseWrite(usize),
    Cancel(usize),
    Downgrade(usize),
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    let who = 0..4usize;
    prop_oneof![
        who.clone().prop_map(Op::Read),
        (who.clone(), any::<bool>()).prop_map(|(w, i)| Op::Write(w, i)),
        who.clone().prop_map(Op::ReleaseRead),
        who.clone().prop_map(Op::ReleaseWrite),
        who.clone().prop_map(Op::Cancel),
        who.prop_map(Op::Downgrade),
        (0..150u64).prop_map(Op::Advance),
    ]
}

proptest! {
    /// Never a live writer beside a live reader or another writer; fences of write grants
    /// strictly increase; a renewal keeps the fence; a grant is poisoned iff a writer's lease
    /// ran out without a release since the last grant; a reader sees the last write's fence.
    #[test]
    fn random_sequences_keep_the_read_write_invariants(ops in prop::collection::vec(op(), 1..120)) {
        let mut s = store();
        let k = doc();
        let tokens: Vec<Token> = (0..4).map(|i| token(&format!("t{i}"))).collect();
        let mut now = t(0);
        let mut last_fence = 0u64;
        // The writer this test believes in, and when its lease ends (mirrors the model).
        let mut writer: Option<(usize, Timestamp)> = None;
        let mut expired_unreleased = false;
        for op in ops {
            if let Some((_, until)) = writer && until < now {
                writer = None;
                expired_unreleased = true;
            }
            match op {
                Op::Read(i) => {
                    if let Some(g) = s.rw_acquire_read(&k, &tokens[i], LEASE, now) {
                        prop_assert_eq!(g.get(), last_fence, "a reader reads the last write");
                    }
                }
                Op::Write(i, intent) => {
                    if let Some(grant) = s.rw_acquire_write(&k, &tokens[i], LEASE, intent, now) {
                        match writer {
                            Some((w, _)) if w == i => {
                                prop_assert_eq!(grant.fence.get(), last_fence, "a renewal keeps the fence");
                                prop_assert!(!grant.poisoned);
                            }
                            _ => {
                                prop_assert!(grant.fence.get() > last_fence, "fences strictly increase");
                                prop_assert_eq!(grant.poisoned, std::mem::take(&mut expired_unreleased));
                            }
                        }
                        last_fence = grant.fence.get();
                        writer = Some((i, now + LEASE));
                    }
                }
                Op::ReleaseRead(i) => { s.rw_release_read(&k, &tokens[i], now); }
                Op::ReleaseWrite(i) => {
                    if s.rw_release_write(&k, &tokens[i], now) {
                        prop_assert_eq!(writer.map(|(w, _)| w), Some(i));
                        writer = None;
                        expired_unreleased = false;
                    }
                }
                Op::Cancel(i) => { s.rw_cancel_intent(&k, &tokens[i], now); }
                Op::Downgrade(i) => {
                    if let Some(g) = s.rw_downgrade(&k, &tokens[i], LEASE, now) {
                        prop_assert_eq!(writer.map(|(w, _)| w), Some(i));
                        prop_assert_eq!(g.get(), last_fence);
                        writer = None;
                        expired_unreleased = false;
                    }
                }
                Op::Advance(ms) => now = now + Duration::from_millis(ms),
            }
            let (live_writer, readers) = s.rw_holders(&k, now);
            prop_assert!(live_writer.is_none() || readers.is_empty(), "a writer beside readers");
            prop_assert_eq!(live_writer.is_some(), writer.is_some_and(|(_, until)| until >= now));
            let state = s.rw_state(&k, now);
            prop_assert_eq!(state.generation, last_fence);
            prop_assert_eq!(state.readers, readers.len());
        }
    }
}

#[test]
fn a_grant_keeps_its_holders_details_until_the_lease_goes() {
    let mut s = store();
    let (k, r, w) = (doc(), token("r"), token("w"));
    let told = |text: &str| Some(tenure_core::HolderDetails::new(text).unwrap());
    let read = StoreOp::RwAcquireRead { key: k.clone(), token: r.clone(), lease: LEASE, details: told("reader") };
    assert_eq!(s.apply(&read, t(0)), StoreReply::Fence(GEN0));
    let renew = StoreOp::RwAcquireRead { key: k.clone(), token: r.clone(), lease: LEASE, details: None };
    s.apply(&renew, t(50));
    let (at, details) = s.held_details(&k, &r).unwrap();
    assert_eq!((at, details.as_str()), (t(0), "reader"), "a renewal keeps what the grant told");
    let refused =
        StoreOp::RwAcquireWrite { key: k.clone(), token: w.clone(), lease: LEASE, intent: true, details: told("w") };
    assert_eq!(s.apply(&refused, t(60)), StoreReply::Write(None));
    assert_eq!(s.held_details(&k, &w), None, "a refusal keeps nothing");
    assert!(s.rw_release_read(&k, &r, t(70)));
    assert_eq!(s.held_details(&k, &r), None, "a release forgets them");
    let write = StoreOp::RwAcquireWrite {
        key: k.clone(),
        token: w.clone(),
        lease: LEASE,
        intent: false,
        details: told("writer"),
    };
    assert!(matches!(s.apply(&write, t(80)), StoreReply::Write(Some(_))));
    assert_eq!(s.held_details(&k, &w).map(|(at, d)| (at, d.as_str())), Some((t(80), "writer")));
    assert_eq!(s.rw_downgrade(&k, &w, LEASE, t(90)), Some(fence(1)));
    assert!(s.held_details(&k, &w).is_some(), "a downgrade keeps the writer's details for its read");
    s.rw_state(&k, t(400));
    assert_eq!(s.held_details(&k, &w), None, "an expired lease's go with it");
}
