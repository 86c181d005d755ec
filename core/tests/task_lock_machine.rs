//! The TaskLock machine against the store model: spec §3.4, §8.5, §8.7 and grelmicro 0.44.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use support::{World, key, ms, token};
use tenure_core::machine::local_validity;
use tenure_core::{
    BackendError, BackendErrorKind, Error, FencingToken, KeyKind, LossReason, StoreOp, StoreReply, TaskLockConfig,
    TaskLockEvent, TaskLockMachine, TaskLockPhase, WouldBlockReason,
};

fn config(w: &mut World, min_hold: Duration, lease: Duration) -> TaskLockConfig {
    TaskLockConfig::builder().min_hold_duration(min_hold).lease_duration(lease).build(&mut w.rng).unwrap()
}

fn machine(config: &TaskLockConfig) -> TaskLockMachine {
    TaskLockMachine::new(key(KeyKind::TaskLock, "cleanup"), config)
}

fn entered(events: &[TaskLockEvent]) -> FencingToken {
    match events {
        [TaskLockEvent::Entered { fence, .. }] => *fence,
        other => panic!("expected Entered, got {other:?}"),
    }
}

fn failed(events: &[TaskLockEvent]) -> &Error {
    match events.last() {
        Some(TaskLockEvent::Failed(e)) => e,
        other => panic!("expected Failed, got {other:?}"),
    }
}

#[test]
fn enter_takes_the_task_lock_key_and_another_worker_is_turned_away() {
    let mut w = World::new();
    let cfg = config(&mut w, ms(500), ms(1000));
    let (mut a, mut b) = (machine(&cfg), machine(&cfg));
    a.enter(w.now, token("a:task:1.x:1.y")).unwrap();
    let request = w.take(&mut a);
    assert!(matches!(&request.op, StoreOp::LockAcquire { key, lease, .. }
        if key.as_str() == "tasklock:cleanup" && *lease == ms(1000)));
    let sent = w.now;
    w.advance(ms(5));
    entered(&w.answer(&mut a, &request));
    assert_eq!(a.acquired_at(), Some(w.now), "the min hold counts from the grant's arrival");
    assert!(a.is_held(sent + local_validity(ms(1000)) - Duration::from_nanos(1)));
    b.enter(w.now, token("b:task:1.x:1.y")).unwrap();
    let error = failed(&w.pump(&mut b)).clone();
    assert_eq!(error, Error::WouldBlock { name: "cleanup".into(), reason: WouldBlockReason::TaskLockHeld });
    assert_eq!(b.phase(), TaskLockPhase::Idle);
}

#[test]
fn exit_at_exactly_min_hold_releases() {
    let mut w = World::new();
    let cfg = config(&mut w, ms(500), ms(1000));
    let mut a = machine(&cfg);
    a.enter(w.now, token("a:1")).unwrap();
    entered(&w.pump(&mut a));
    w.advance(ms(500));
    a.exit(w.now).unwrap();
    let request = w.take(&mut a);
    assert!(matches!(request.op, StoreOp::LockRelease { .. }), "elapsed == min_hold releases");
    assert_eq!(
        w.answer(&mut a, &request),
        vec![TaskLockEvent::Exited { fence: FencingToken::FIRST, held_until: None }]
    );
    assert!(!w.store.lock_locked(a.key(), w.now));
}

#[test]
fn exit_before_min_hold_shortens_the_lease_to_the_remainder() {
    let mut w = World::new();
    let cfg = config(&mut w, ms(500), ms(1000));
    let mut a = machine(&cfg);
    a.enter(w.now, token("a:1")).unwrap();
    entered(&w.pump(&mut a));
    let acquired_at = w.now;
    w.advance(ms(200));
    a.exit(w.now).unwrap();
    let request = w.take(&mut a);
    assert!(matches!(request.op, StoreOp::LockAcquire { lease, .. } if lease == ms(300)), "{:?}", request.op);
    let events = w.answer(&mut a, &request);
    assert_eq!(
        events,
        vec![TaskLockEvent::Exited { fence: FencingToken::FIRST, held_until: Some(acquired_at + ms(500)) }]
    );
    assert_eq!(a.phase(), TaskLockPhase::Idle);
    let mut b = machine(&cfg);
    w.advance(ms(300));
    b.enter(w.now, token("b:1")).unwrap();
    assert!(failed(&w.pump(&mut b)).is_would_block(), "held through the end of the min hold");
    w.advance(Duration::from_nanos(1));
    b.enter(w.now, token("b:2")).unwrap();
    entered(&w.pump(&mut b));
}

#[test]
fn the_same_instance_cannot_rerun_within_its_hold_and_reuses_the_hold_token_after_it() {
    let mut w = World::new();
    let cfg = config(&mut w, ms(500), ms(1000));
    let mut a = machine(&cfg);
    a.enter(w.now, token("a:task:1:n1")).unwrap();
    entered(&w.pump(&mut a));
    w.advance(ms(100));
    a.exit(w.now).unwrap();
    w.pump(&mut a);
    a.enter(w.now, token("a:task:1:n2")).unwrap();
    assert!(failed(&w.pump(&mut a)).is_would_block(), "a fresh nonce is refused while the hold lasts");
    w.advance(ms(400));
    a.enter(w.now, token("a:task:1:n3")).unwrap();
    let request = w.take(&mut a);
    assert!(matches!(&request.op, StoreOp::LockAcquire { token, .. } if token.as_str() == "a:task:1:n1"));
    entered(&w.answer(&mut a, &request));
    assert_eq!(a.token().map(|t| t.as_str()), Some("a:task:1:n1"));
}

#[test]
fn nested_enter_is_reentrant_and_exit_without_enter_is_not_owned() {
    let mut w = World::new();
    let cfg = config(&mut w, ms(500), ms(1000));
    let mut a = machine(&cfg);
    assert!(a.exit(w.now).unwrap_err().is_not_owned());
    assert!(a.extend(w.now).unwrap_err().is_not_owned());
    a.enter(w.now, token("a:1")).unwrap();
    assert!(a.enter(w.now, token("a:2")).unwrap_err().is_reentrant(), "while entering");
    entered(&w.pump(&mut a));
    assert!(a.enter(w.now, token("a:3")).unwrap_err().is_reentrant(), "re-entrancy is per instance");
}

#[test]
fn a_body_longer_than_the_lease_loses_it_and_exit_reports_not_owned() {
    let mut w = World::new();
    let cfg = config(&mut w, ms(10), ms(50));
    let mut a = machine(&cfg);
    a.enter(w.now, token("a:1")).unwrap();
    let fence = entered(&w.pump(&mut a));
    assert_eq!(w.fire(&mut a), vec![TaskLockEvent::Lost { fence, reason: LossReason::Expired }]);
    w.advance(ms(60));
    a.exit(w.now).unwrap();
    assert!(failed(&w.pump(&mut a)).is_not_owned());
    assert!(!w.store.lock_locked(a.key(), w.now), "the key is free afterwards");
    a.enter(w.now, token("a:2")).unwrap();
    entered(&w.pump(&mut a));
}

#[test]
fn extend_keeps_the_key_held_without_moving_the_acquisition() {
    let mut w = World::new();
    let cfg = config(&mut w, ms(100), ms(200));
    let mut a = machine(&cfg);
    a.enter(w.now, token("a:1")).unwrap();
    let fence = entered(&w.pump(&mut a));
    let acquired_at = a.acquired_at();
    w.advance(ms(150));
    a.extend(w.now).unwrap();
    let until = w.now + local_validity(ms(200));
    assert_eq!(w.pump(&mut a), vec![TaskLockEvent::Extended { fence, previous: fence, valid_until: until }]);
    assert_eq!(a.acquired_at(), acquired_at);
    w.advance(ms(150));
    assert!(w.store.lock_locked(a.key(), w.now) && a.is_held(w.now));
    w.advance(ms(10));
    a.extend(w.now).unwrap();
    let request = w.take(&mut a);
    let events = w.answer_with(&mut a, &request, Ok(StoreReply::Fence(None)));
    assert_eq!(events[0], TaskLockEvent::Lost { fence, reason: LossReason::NotOwned });
    assert!(failed(&events).is_not_owned());
    assert_eq!(a.phase(), TaskLockPhase::Held, "still entered: exit must run");
    assert!(!a.is_held(w.now));
}

#[test]
fn store_failures_map_to_grelmicro_044_errors_and_never_wedge_the_instance() {
    let mut w = World::new();
    let cfg = config(&mut w, ms(500), ms(1000));
    let mut a = machine(&cfg);
    let down = || Err(BackendError::new(BackendErrorKind::Unavailable, "down"));
    a.enter(w.now, token("a:1")).unwrap();
    let request = w.take(&mut a);
    assert!(matches!(failed(&w.answer_with(&mut a, &request, down())), Error::Acquire { .. }));
    a.enter(w.now, token("a:2")).unwrap();
    entered(&w.pump(&mut a));
    a.extend(w.now).unwrap();
    let request = w.take(&mut a);
    assert!(matches!(failed(&w.answer_with(&mut a, &request, down())), Error::Extend { .. }));
    a.exit(w.now).unwrap(); // before min hold: shortening
    let request = w.take(&mut a);
    assert!(matches!(failed(&w.answer_with(&mut a, &request, down())), Error::Release { .. }));
    assert_eq!(a.phase(), TaskLockPhase::Idle, "state is clean after a failed exit");
    w.advance(ms(1001)); // the lease from "a:2" ends (inclusive) at +1000 ms
    a.enter(w.now, token("a:3")).unwrap();
    entered(&w.pump(&mut a));
    w.advance(ms(600));
    a.exit(w.now).unwrap(); // after min hold: release
    let request = w.take(&mut a);
    assert!(matches!(failed(&w.answer_with(&mut a, &request, down())), Error::Release { .. }));
    a.enter(w.now, token("a:4")).unwrap();
    let request = w.take(&mut a);
    let events = w.answer_with(&mut a, &request, Ok(StoreReply::Fence(None)));
    assert!(failed(&events).is_would_block(), "the failed release left the lease in the store");
}

#[test]
fn a_shortening_answered_with_none_is_not_owned() {
    let mut w = World::new();
    let cfg = config(&mut w, ms(500), ms(1000));
    let mut a = machine(&cfg);
    a.enter(w.now, token("a:1")).unwrap();
    entered(&w.pump(&mut a));
    a.exit(w.now).unwrap();
    let request = w.take(&mut a);
    assert!(failed(&w.answer_with(&mut a, &request, Ok(StoreReply::Fence(None)))).is_not_owned());
}

#[test]
fn store_calls_are_bounded_by_backend_timeout() {
    let mut w = World::new();
    let cfg = TaskLockConfig::builder().backend_timeout(ms(100)).build(&mut w.rng).unwrap();
    let mut a = machine(&cfg);
    let sent = w.now;
    a.enter(w.now, token("a:1")).unwrap();
    let _frozen = w.take(&mut a);
    let events = w.fire(&mut a);
    assert_eq!(w.now, sent + ms(100));
    assert!(matches!(failed(&events), Error::Acquire { cause, .. } if cause.kind() == BackendErrorKind::Timeout));
}

#[test]
fn an_enter_abandoned_at_its_deadline_releases_a_late_grant() {
    let mut w = World::new();
    let cfg = TaskLockConfig::builder().backend_timeout(ms(10)).build(&mut w.rng).unwrap();
    let mut a = machine(&cfg);
    a.enter(w.now, token("a:1")).unwrap();
    let request = w.take(&mut a);
    assert!(failed(&w.fire(&mut a)).is_lock_backend());
    assert!(w.answer(&mut a, &request).is_empty(), "the late grant is released without events");
    assert!(!w.store.lock_locked(a.key(), w.now));
    a.enter(w.now, token("a:2")).unwrap();
    entered(&w.pump(&mut a));
}

#[test]
fn a_shorter_lease_caps_the_belief_of_an_extend_in_flight() {
    let mut w = World::new();
    let cfg = config(&mut w, ms(10), ms(60_000));
    let mut a = machine(&cfg);
    a.enter(w.now, token("a:1")).unwrap();
    entered(&w.pump(&mut a));
    a.set_config(&config(&mut w, ms(10), ms(1000)));
    let sent = w.now;
    a.extend(w.now).unwrap();
    assert!(!a.is_held(sent + local_validity(ms(1000))), "capped before the store answers");
    w.pump(&mut a);
    assert!(!a.is_held(sent + local_validity(ms(1000))));
}

#[test]
fn a_cancelled_enter_releases_a_grant_that_lands_afterwards() {
    let mut w = World::new();
    let cfg = config(&mut w, ms(500), ms(1000));
    let mut a = machine(&cfg);
    a.enter(w.now, token("a:1")).unwrap();
    let request = w.take(&mut a);
    a.cancel(w.now);
    assert_eq!((a.phase(), a.poll_timeout()), (TaskLockPhase::Idle, None));
    assert!(w.answer(&mut a, &request).is_empty());
    assert!(!w.store.lock_locked(a.key(), w.now), "the late grant was released");
}

#[test]
fn an_enter_granted_after_its_lease_ran_out_fails_and_gives_the_grant_back() {
    // The simulator's seed 11 (tests/sim): the reply to an enter reached a worker paused for
    // longer than the lease, and the task body started on a lease that had already run out.
    let mut w = World::new();
    let cfg = config(&mut w, ms(100), ms(200));
    let mut a = machine(&cfg);
    a.enter(w.now, token("a:task:1.x:1.y")).unwrap();
    let request = w.take(&mut a);
    let reply = w.store.apply(&request.op, w.now);
    w.advance(ms(300)); // paused with the reply waiting
    a.handle_reply(w.now, request.id, Ok(reply));
    let events: Vec<_> = std::iter::from_fn(|| a.poll_event()).collect();
    let error = failed(&events);
    assert!(matches!(error, Error::Acquire { cause, .. } if cause.kind() == BackendErrorKind::Timeout), "{error:?}");
    assert!(!events.iter().any(|e| matches!(e, TaskLockEvent::Entered { .. })), "no body starts");
    assert!(!a.is_held(w.now) && a.fence().is_none());
    let release = w.take(&mut a);
    assert!(matches!(&release.op, StoreOp::LockRelease { token, .. } if token.as_str() == "a:task:1.x:1.y"));
    assert_eq!(w.answer(&mut a, &release), vec![]);
    assert_eq!(a.phase(), TaskLockPhase::Idle);
    a.enter(w.now, token("a:task:1.x:2.y")).unwrap();
    entered(&w.pump(&mut a));
}

#[test]
fn an_extend_granted_too_late_fails_without_reviving_the_run() {
    let mut w = World::new();
    let cfg = config(&mut w, ms(100), ms(200));
    let mut a = machine(&cfg);
    a.enter(w.now, token("a:task:1.x:1.y")).unwrap();
    let fence = entered(&w.pump(&mut a));
    a.extend(w.now).unwrap();
    let request = w.take(&mut a);
    let reply = w.store.apply(&request.op, w.now);
    w.advance(ms(300));
    a.handle_reply(w.now, request.id, Ok(reply));
    let events: Vec<_> = std::iter::from_fn(|| a.poll_event()).collect();
    assert_eq!(events[0], TaskLockEvent::Lost { fence, reason: LossReason::Expired });
    assert!(matches!(&events[1], TaskLockEvent::Failed(Error::Extend { .. })), "{events:?}");
    assert_eq!(a.valid_until(), None, "the run no longer counts on a lease");
    assert_eq!(a.phase(), TaskLockPhase::Held, "entered until exit");
}
