//! The lock machine on the read and write sides of a read-write lock, against the store model
//! (spec §1.9, §5.4, §8.13): what a reader and a writer ask, how a waiting writer's intent is
//! kept and withdrawn, poisoned grants, downgrades, and a reader whose generation moved on.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use support::{World, acquired, failed, key, ms, token};
use tenure_core::machine::local_validity;
use tenure_core::{
    Access, Error, FencingToken, KeyKind, LockConfig, LockEvent, LockMachine, LockPhase, LossReason, StoreOp,
    StoreReply, WouldBlockReason, WriteGrant,
};

fn side(w: &mut World, holder: &str, access: Access, config: &LockConfig) -> LockMachine {
    LockMachine::with_access(key(KeyKind::ReadWriteLock, "doc"), token(holder), access, config, &mut w.rng)
}

fn setup(lease: Duration) -> (World, LockConfig) {
    let mut w = World::new();
    let config = w.lock_config(lease);
    (w, config)
}

fn rw_key() -> tenure_core::Key {
    key(KeyKind::ReadWriteLock, "doc")
}

#[test]
fn a_reader_and_a_writer_ask_for_their_own_leases_and_release_them() {
    let (mut w, config) = setup(ms(1000));
    let mut reader = side(&mut w, "r", Access::Read, &config);
    reader.acquire(w.now, None).unwrap();
    let request = w.take(&mut reader);
    assert!(
        matches!(&request.op, StoreOp::RwAcquireRead { key, lease, .. } if key.as_str() == "rwlock:doc" && *lease == ms(1000))
    );
    assert_eq!(acquired(&w.answer(&mut reader, &request)), FencingToken::new(0), "the generation of an unwritten name");
    reader.release(w.now).unwrap();
    let request = w.take(&mut reader);
    assert!(matches!(request.op, StoreOp::RwReleaseRead { .. }));
    assert_eq!(w.answer(&mut reader, &request), vec![LockEvent::Released { fence: Some(FencingToken::new(0)) }]);

    let mut writer = side(&mut w, "w", Access::Write, &config);
    writer.acquire(w.now, None).unwrap();
    let request = w.take(&mut writer);
    assert!(matches!(request.op, StoreOp::RwAcquireWrite { intent: true, .. }), "a blocking attempt keeps an intent");
    assert_eq!(acquired(&w.answer(&mut writer, &request)), FencingToken::new(1));
    assert!(!writer.poisoned());
    writer.release(w.now).unwrap();
    let request = w.take(&mut writer);
    assert!(matches!(request.op, StoreOp::RwReleaseWrite { .. }));
    w.answer(&mut writer, &request);
    assert_eq!(w.store.rw_state(&rw_key(), w.now).generation, 1);
}

#[test]
fn a_nowait_writer_keeps_no_intent_and_is_turned_away_by_readers() {
    let (mut w, config) = setup(ms(1000));
    let mut reader = side(&mut w, "r", Access::Read, &config);
    reader.acquire(w.now, None).unwrap();
    w.pump(&mut reader);
    let mut writer = side(&mut w, "w", Access::Write, &config);
    writer.acquire_nowait(w.now).unwrap();
    let request = w.take(&mut writer);
    assert!(matches!(request.op, StoreOp::RwAcquireWrite { intent: false, .. }));
    let error = failed(&w.answer(&mut writer, &request)).clone();
    assert_eq!(error, Error::WouldBlock { name: "doc".into(), reason: WouldBlockReason::WriteRefused });
    assert_eq!(w.store.rw_state(&rw_key(), w.now).waiting_writers, 0);
    let mut other = side(&mut w, "r2", Access::Read, &config);
    other.acquire_nowait(w.now).unwrap();
    acquired(&w.pump(&mut other));
}

#[test]
fn a_waiting_writer_holds_new_readers_out_and_withdraws_its_intent_when_it_times_out() {
    let (mut w, config) = setup(ms(1000));
    let mut reader = side(&mut w, "r", Access::Read, &config);
    reader.acquire(w.now, None).unwrap();
    w.pump(&mut reader);
    let mut writer = side(&mut w, "w", Access::Write, &config);
    writer.acquire(w.now, Some(ms(25))).unwrap();
    assert!(w.pump(&mut writer).is_empty(), "refused: waits");
    assert_eq!(writer.phase(), LockPhase::Waiting);
    let mut late = side(&mut w, "r2", Access::Read, &config);
    late.acquire_nowait(w.now).unwrap();
    let error = failed(&w.pump(&mut late)).clone();
    assert_eq!(error, Error::WouldBlock { name: "doc".into(), reason: WouldBlockReason::ReadRefused });
    // Attempts at 10 and 20 ms, the last at the deadline (25 ms): refused, it gives up.
    let mut events = Vec::new();
    while events.is_empty() {
        events = w.fire(&mut writer);
    }
    assert_eq!(failed(&events), &Error::Timeout { name: "doc".into(), timeout: ms(25) });
    assert_eq!(w.store.rw_state(&rw_key(), w.now).waiting_writers, 0, "the intent was withdrawn");
    assert!(writer.is_quiescent());
    let mut after = side(&mut w, "r3", Access::Read, &config);
    after.acquire_nowait(w.now).unwrap();
    acquired(&w.pump(&mut after));
}

#[test]
fn a_cancelled_waiting_writer_withdraws_its_intent_and_one_whose_attempt_failed_too() {
    let (mut w, config) = setup(ms(1000));
    let mut reader = side(&mut w, "r", Access::Read, &config);
    reader.acquire(w.now, None).unwrap();
    w.pump(&mut reader);
    let mut writer = side(&mut w, "w", Access::Write, &config);
    writer.acquire(w.now, None).unwrap();
    w.pump(&mut writer);
    writer.cancel(w.now);
    let request = w.take(&mut writer);
    assert!(matches!(request.op, StoreOp::RwCancelIntent { .. }));
    assert!(w.answer(&mut writer, &request).is_empty(), "quiet");
    assert_eq!(w.store.rw_state(&rw_key(), w.now).waiting_writers, 0);

    let mut failing = side(&mut w, "w2", Access::Write, &config);
    failing.acquire(w.now, None).unwrap();
    w.pump(&mut failing); // refused: an intent is kept
    w.advance(ms(10));
    failing.handle_timeout(w.now);
    let attempt = w.take(&mut failing);
    let events = w.answer_with(&mut failing, &attempt, Err(tenure_core::BackendError::timeout(ms(5))));
    assert!(matches!(failed(&events), Error::Acquire { .. }));
    assert_eq!(w.store.rw_state(&rw_key(), w.now).waiting_writers, 0, "withdrawn after the failure too");
}

#[test]
fn the_writer_is_granted_when_the_last_reader_leaves_and_learns_an_expired_writer_poisoned_it() {
    let (mut w, config) = setup(ms(100));
    let mut first = side(&mut w, "w1", Access::Write, &config);
    first.acquire(w.now, None).unwrap();
    assert_eq!(acquired(&w.pump(&mut first)), FencingToken::new(1));
    // w1 vanishes without releasing; w2 waits out its lease.
    let mut second = side(&mut w, "w2", Access::Write, &config);
    second.acquire(w.now, None).unwrap();
    let mut events = w.pump(&mut second);
    while events.is_empty() {
        events = w.fire(&mut second);
    }
    assert_eq!(acquired(&events), FencingToken::new(2));
    assert!(second.poisoned(), "the writer before it expired without releasing");
}

#[test]
fn a_writer_whose_lease_lapsed_and_was_granted_again_by_an_extend_is_poisoned() {
    let (mut w, config) = setup(ms(100));
    let mut writer = side(&mut w, "w", Access::Write, &config);
    writer.acquire(w.now, None).unwrap();
    let fence = acquired(&w.pump(&mut writer));
    w.fire(&mut writer); // lost: expired locally
    w.advance(ms(50)); // and on the store
    writer.extend(w.now).unwrap();
    let request = w.take(&mut writer);
    assert!(matches!(request.op, StoreOp::RwAcquireWrite { intent: false, .. }), "an extend keeps no intent");
    let events = w.answer(&mut writer, &request);
    assert!(matches!(events[..], [LockEvent::Extended { fence: f, previous, .. }] if f > fence && previous == fence));
    assert!(writer.poisoned());
}

#[test]
fn a_reader_whose_lease_lapsed_while_a_writer_wrote_is_not_extended_and_gives_the_new_lease_back() {
    let (mut w, config) = setup(ms(100));
    let mut reader = side(&mut w, "r", Access::Read, &config);
    reader.acquire(w.now, None).unwrap();
    assert_eq!(acquired(&w.pump(&mut reader)), FencingToken::new(0));
    w.advance(ms(150));
    let mut writer = side(&mut w, "w", Access::Write, &config);
    writer.acquire_nowait(w.now).unwrap();
    acquired(&w.pump(&mut writer));
    writer.release(w.now).unwrap();
    w.pump(&mut writer);
    reader.handle_timeout(w.now); // the reader learns its validity ran out
    while reader.poll_event().is_some() {}
    reader.extend(w.now).unwrap();
    let events = w.pump(&mut reader);
    assert_eq!(failed(&events), &Error::NotOwned { name: "doc".into() });
    assert_eq!(w.store.rw_state(&rw_key(), w.now).readers, 0, "the read lease granted at generation 1 went back");
    assert!(reader.is_quiescent());
}

#[test]
fn a_reader_extend_keeps_its_generation_and_one_refused_is_lost() {
    let (mut w, config) = setup(ms(1000));
    let mut reader = side(&mut w, "r", Access::Read, &config);
    reader.acquire(w.now, None).unwrap();
    let generation = acquired(&w.pump(&mut reader));
    w.advance(ms(100));
    reader.extend(w.now).unwrap();
    let events = w.pump(&mut reader);
    assert!(
        matches!(events[..], [LockEvent::Extended { fence, previous, .. }] if fence == generation && previous == generation)
    );
    // The store forgot the reader (another process reaped it after a pause, say): NotOwned.
    reader.extend(w.now).unwrap();
    let request = w.take(&mut reader);
    let events = w.answer_with(&mut reader, &request, Ok(StoreReply::Fence(None)));
    assert_eq!(events[0], LockEvent::Lost { fence: generation, reason: LossReason::NotOwned });
    assert_eq!(events[1], LockEvent::Failed(Error::NotOwned { name: "doc".into() }));
}

#[test]
fn a_downgrade_turns_the_writer_into_a_reader_in_one_step() {
    let (mut w, config) = setup(ms(1000));
    let mut writer = side(&mut w, "w", Access::Write, &config);
    writer.acquire(w.now, None).unwrap();
    let fence = acquired(&w.pump(&mut writer));
    w.advance(ms(10));
    let sent = w.now;
    writer.downgrade(w.now).unwrap();
    assert_eq!(writer.phase(), LockPhase::Downgrading);
    assert_eq!(writer.valid_until(), None, "the write lease is not counted on meanwhile");
    let request = w.take(&mut writer);
    assert!(matches!(request.op, StoreOp::RwDowngrade { lease, .. } if lease == ms(1000)));
    let events = w.answer(&mut writer, &request);
    let until = sent + local_validity(ms(1000));
    assert_eq!(events, vec![LockEvent::Downgraded { generation: fence, valid_until: until }]);
    assert_eq!(writer.access(), Access::Read);
    assert!(w.store.rw_owned_read(&rw_key(), &token("w"), w.now));
    // Another writer waits behind the new reader; another reader joins only once it gave up.
    let mut other = side(&mut w, "w2", Access::Write, &config);
    other.acquire_nowait(w.now).unwrap();
    failed(&w.pump(&mut other));
    // Reading now, the holder releases its read lease.
    writer.release(w.now).unwrap();
    let request = w.take(&mut writer);
    assert!(matches!(request.op, StoreOp::RwReleaseRead { .. }));
    w.answer(&mut writer, &request);
    assert_eq!(w.store.rw_state(&rw_key(), w.now), tenure_core::RwState { generation: 1, ..Default::default() });
}

#[test]
fn a_downgrade_needs_the_write_lease_and_a_refused_one_is_not_owned() {
    let (mut w, config) = setup(ms(1000));
    let mut reader = side(&mut w, "r", Access::Read, &config);
    assert_eq!(reader.downgrade(w.now), Err(Error::NotOwned { name: "doc".into() }), "a reader cannot");
    let mut writer = side(&mut w, "w", Access::Write, &config);
    assert_eq!(writer.downgrade(w.now), Err(Error::NotOwned { name: "doc".into() }), "nothing held");
    writer.acquire(w.now, None).unwrap();
    w.pump(&mut writer);
    writer.downgrade(w.now).unwrap();
    let request = w.take(&mut writer);
    let events = w.answer_with(&mut writer, &request, Ok(StoreReply::Fence(None)));
    assert_eq!(failed(&events), &Error::NotOwned { name: "doc".into() });
    assert_eq!(writer.access(), Access::Write);
    reader.acquire(w.now, Some(ms(0))).unwrap();
    assert!(matches!(w.pump(&mut reader)[..], [LockEvent::Failed(Error::Timeout { .. })]), "the store still has w");
}

#[test]
fn answers_of_the_wrong_shape_for_the_side_are_protocol_errors() {
    let (mut w, config) = setup(ms(1000));
    let mut writer = side(&mut w, "w", Access::Write, &config);
    writer.acquire_nowait(w.now).unwrap();
    let request = w.take(&mut writer);
    let events = w.answer_with(&mut writer, &request, Ok(StoreReply::Fence(Some(FencingToken::new(3)))));
    assert!(
        matches!(failed(&events), Error::Acquire { cause, .. } if cause.kind() == tenure_core::BackendErrorKind::Protocol)
    );
    let mut reader = side(&mut w, "r", Access::Read, &config);
    reader.acquire_nowait(w.now).unwrap();
    let request = w.take(&mut reader);
    let grant = WriteGrant { fence: FencingToken::new(3), poisoned: false };
    let events = w.answer_with(&mut reader, &request, Ok(StoreReply::Write(Some(grant))));
    assert!(matches!(failed(&events), Error::Acquire { .. }));
}

#[test]
fn a_write_grant_that_lands_after_its_acquire_was_abandoned_is_released_and_a_refusal_withdraws_the_intent() {
    let (mut w, config) = setup(ms(1000));
    let mut writer = side(&mut w, "w", Access::Write, &config);
    writer.acquire(w.now, None).unwrap();
    let request = w.take(&mut writer);
    // The store is slow: the attempt is abandoned at its deadline (its intent withdrawn at
    // once, in case it was applied), then applied and answered with a grant.
    w.now = request.deadline;
    writer.handle_timeout(w.now);
    assert!(matches!(writer.poll_event(), Some(LockEvent::Failed(Error::Acquire { .. }))));
    let withdraw = w.take(&mut writer);
    assert!(matches!(withdraw.op, StoreOp::RwCancelIntent { .. }));
    let late = w.store.apply(&request.op, w.now);
    assert!(w.store.rw_state(&rw_key(), w.now).writing);
    writer.handle_reply(w.now, request.id, Ok(late));
    assert!(writer.poll_effect().is_none(), "one request at a time: the release waits for the withdrawal");
    // Once the withdrawal is answered, the late grant is given back (pumped here).
    assert!(w.answer(&mut writer, &withdraw).is_empty());
    assert!(!w.store.rw_state(&rw_key(), w.now).writing);
    assert!(writer.is_quiescent());

    let long = w.lock_config(Duration::from_secs(60)); // outlasts the attempt's deadline
    let mut reader = side(&mut w, "r", Access::Read, &long);
    reader.acquire(w.now, None).unwrap();
    w.pump(&mut reader);
    let mut waiting = side(&mut w, "w2", Access::Write, &config);
    waiting.acquire(w.now, None).unwrap();
    let request = w.take(&mut waiting);
    w.now = request.deadline;
    waiting.handle_timeout(w.now);
    while waiting.poll_event().is_some() {}
    let withdraw = w.take(&mut waiting);
    w.answer(&mut waiting, &withdraw); // answered before the slow attempt is applied
    let late = w.store.apply(&request.op, w.now); // refused: an intent is recorded after all
    assert_eq!(w.store.rw_state(&rw_key(), w.now).waiting_writers, 1);
    waiting.handle_reply(w.now, request.id, Ok(late));
    let again = w.take(&mut waiting);
    assert!(matches!(again.op, StoreOp::RwCancelIntent { .. }), "withdrawn again");
    w.answer(&mut waiting, &again);
    assert_eq!(w.store.rw_state(&rw_key(), w.now).waiting_writers, 0);
}

#[test]
fn a_cancelled_write_attempt_that_failed_withdraws_and_a_queue_wait_is_ignored_by_both_sides() {
    let (mut w, config) = setup(ms(1000));
    let mut reader = side(&mut w, "r", Access::Read, &config);
    reader.set_queued(Some(ms(100)));
    reader.acquire(w.now, None).unwrap();
    assert!(matches!(w.take(&mut reader).op, StoreOp::RwAcquireRead { .. }), "a reader never queues");
    let mut writer = side(&mut w, "w", Access::Write, &config);
    writer.set_queued(Some(ms(100)));
    writer.acquire(w.now, None).unwrap();
    let attempt = w.take(&mut writer);
    assert!(matches!(attempt.op, StoreOp::RwAcquireWrite { intent: true, .. }), "a writer never queues");
    writer.cancel(w.now);
    let events = w.answer_with(&mut writer, &attempt, Err(tenure_core::BackendError::timeout(ms(5))));
    assert!(events.is_empty(), "a cancelled command reports nothing");
    assert!(writer.is_quiescent(), "the withdrawal was sent and answered");
}

#[test]
fn a_downgrade_whose_outcome_is_unknown_releases_both_sides_and_a_cancelled_one_reports_nothing() {
    let (mut w, config) = setup(ms(1000));
    let mut writer = side(&mut w, "w", Access::Write, &config);
    writer.acquire(w.now, None).unwrap();
    w.pump(&mut writer);
    writer.downgrade(w.now).unwrap();
    let request = w.take(&mut writer);
    w.store.apply(&request.op, w.now); // applied, but the answer is lost
    let events = w.answer_with(&mut writer, &request, Err(tenure_core::BackendError::timeout(ms(5))));
    assert!(matches!(failed(&events), Error::Acquire { .. }));
    assert!(w.store.rw_owned_read(&rw_key(), &token("w"), w.now));
    writer.release(w.now).unwrap();
    let events = w.pump(&mut writer);
    assert_eq!(events, vec![LockEvent::Failed(Error::NotOwned { name: "doc".into() })], "the write side was gone");
    assert!(!w.store.rw_owned_read(&rw_key(), &token("w"), w.now), "and the read side went too");

    let mut other = side(&mut w, "w2", Access::Write, &config);
    other.acquire(w.now, None).unwrap();
    assert!(!other.poisoned());
    w.pump(&mut other);
    other.downgrade(w.now).unwrap();
    other.cancel(w.now);
    assert!(w.pump(&mut other).is_empty());
    assert_eq!(other.access(), Access::Read, "the downgrade went on");
}

#[test]
fn a_holder_awaiting_an_abandoned_answer_keeps_its_side_and_a_re_asked_grant_keeps_poisoned() {
    let (mut w, config) = setup(ms(1000));
    let mut writer = side(&mut w, "w", Access::Write, &config);
    writer.acquire_nowait(w.now).unwrap();
    let request = w.take(&mut writer);
    w.now = request.deadline; // abandoned: its answer is still awaited
    writer.handle_timeout(w.now);
    while writer.poll_event().is_some() {}
    assert!(writer.set_access(Access::Read).is_err(), "not while an answer is awaited");
    assert!(writer.set_token(token("w2")).is_err());
    assert_eq!(writer.access(), Access::Write);

    // A grant too late to count on is asked again; the renewal says "not poisoned", the first
    // grant said it was: poisoned it stays.
    let (mut w, config) = setup(ms(100));
    let mut vanished = side(&mut w, "v", Access::Write, &config);
    vanished.acquire_nowait(w.now).unwrap();
    w.pump(&mut vanished);
    w.advance(ms(150)); // v expired without releasing
    let mut next = side(&mut w, "n", Access::Write, &config);
    next.acquire(w.now, None).unwrap();
    let request = w.take(&mut next);
    w.advance(ms(50)); // the request's way: the store's lease runs until 150 ms from the send
    let grant = w.store.apply(&request.op, w.now);
    assert!(matches!(grant, StoreReply::Write(Some(WriteGrant { poisoned: true, .. }))));
    w.advance(ms(50)); // the answer's way: past the holder's 99 ms, within the store's lease
    next.handle_reply(w.now, request.id, Ok(grant));
    let renewal = w.take(&mut next);
    let renewed = w.store.apply(&renewal.op, w.now);
    assert!(matches!(renewed, StoreReply::Write(Some(WriteGrant { poisoned: false, .. }))), "a renewal");
    next.handle_reply(w.now, renewal.id, Ok(renewed));
    acquired(&w.pump(&mut next));
    assert!(next.poisoned(), "the renewal did not clear what the grant said");
}
