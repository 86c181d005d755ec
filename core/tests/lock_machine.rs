//! The Lock machine against the store model: spec §3.1–3.3, §8.2, §8.3 and DESIGN §4.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use rand_core::Rng;
use support::{World, acquired, failed, ms};
use tenure_core::machine::local_validity;
use tenure_core::rng::{jitter, unit_interval};
use tenure_core::{
    BackendError, BackendErrorKind, Error, FencingToken, LockConfig, LockEvent, LockMachine, LockPhase, LossReason,
    SplitMix64, StoreOp, StoreReply, Timestamp, WouldBlockReason,
};

/// A world, a lock configuration with `lease` (retry 10 ms, no jitter), and holder "a" of "cart".
fn setup(lease: Duration) -> (World, LockConfig, LockMachine) {
    let mut w = World::new();
    let config = w.lock_config(lease);
    let lock = w.lock("cart", "a", &config);
    (w, config, lock)
}

fn unavailable() -> BackendError {
    BackendError::new(BackendErrorKind::Unavailable, "connection refused")
}

#[test]
fn acquire_grants_fence_one_with_validity_counted_from_the_send() {
    let (mut w, _, mut lock) = setup(ms(1000));
    let sent = w.now;
    lock.acquire(w.now, None).unwrap();
    let request = w.take(&mut lock);
    assert!(
        matches!(&request.op, StoreOp::LockAcquire { key, lease, .. } if key.as_str() == "lock:cart" && *lease == ms(1000))
    );
    assert_eq!(request.deadline, sent + LockConfig::DEFAULT_BACKEND_TIMEOUT);
    w.advance(ms(50)); // the reply takes 50 ms
    let fence = acquired(&w.answer(&mut lock, &request));
    assert_eq!(fence, FencingToken::FIRST);
    let until = sent + local_validity(ms(1000));
    assert_eq!(lock.valid_until(), Some(until), "from the send, not the reply (DESIGN §4.1)");
    assert_eq!(until, sent + ms(990), "less the 1 % drift allowance");
    let handle = lock.handle().unwrap();
    assert_eq!((handle.name.as_str(), handle.token.as_str(), handle.fencing_token), ("cart", "a", fence));
    assert!(lock.is_held(Timestamp::from_nanos(until.as_nanos() - 1)));
    assert!(!lock.is_held(until), "a holder never believes past its validity");
}

#[test]
fn a_held_lease_that_runs_out_is_reported_lost_at_once() {
    let (mut w, _, mut lock) = setup(ms(100));
    lock.acquire(w.now, None).unwrap();
    let fence = acquired(&w.pump(&mut lock));
    assert_eq!(lock.poll_timeout(), lock.valid_until());
    let events = w.fire(&mut lock);
    assert_eq!(events, vec![LockEvent::Lost { fence, reason: LossReason::Expired }]);
    assert_eq!(lock.phase(), LockPhase::Stale);
    assert_eq!(lock.poll_timeout(), None);
}

#[test]
fn a_waiter_retries_and_takes_over_after_the_lease_expires_with_a_greater_fence() {
    let mut w = World::new();
    let config = w.lock_config(ms(100));
    let mut a = w.lock("cart", "a", &config);
    let mut b = w.lock("cart", "b", &config);
    a.acquire(w.now, None).unwrap();
    let first = acquired(&w.pump(&mut a));
    b.acquire(w.now, None).unwrap();
    assert!(w.pump(&mut b).is_empty());
    assert_eq!(b.phase(), LockPhase::Waiting);
    let mut attempts = 0;
    let second = loop {
        let events = w.fire(&mut b);
        attempts += 1;
        if let [LockEvent::Acquired { fence, .. }] = events.as_slice() {
            break *fence;
        }
        assert!(attempts < 100, "never acquired");
    };
    assert!(second > first);
    // 100 ms lease, 10 ms retries, the store keeps the lease through its last instant.
    assert!((10..=12).contains(&attempts), "{attempts}");
}

#[test]
fn bounded_acquire_makes_its_last_attempt_at_the_deadline_then_times_out() {
    let mut w = World::new();
    let config = LockConfig::builder().retry_interval(ms(100)).retry_jitter(0.0).build(&mut w.rng).unwrap();
    let mut holder = w.lock("cart", "a", &config);
    holder.acquire(w.now, None).unwrap();
    w.pump(&mut holder);
    let mut waiter = w.lock("cart", "b", &config);
    let start = w.now;
    waiter.acquire(w.now, Some(ms(250))).unwrap();
    w.pump(&mut waiter);
    let mut attempt_times = vec![start];
    let error = loop {
        let events = w.fire(&mut waiter);
        attempt_times.push(w.now);
        if let [LockEvent::Failed(e)] = events.as_slice() {
            break e.clone();
        }
    };
    assert_eq!(attempt_times, vec![start, start + ms(100), start + ms(200), start + ms(250)]);
    assert_eq!(error, Error::Timeout { name: "cart".into(), timeout: ms(250) });
    assert!(error.is_timeout() && error.is_would_block());
    assert_eq!(waiter.phase(), LockPhase::Idle);
}

#[test]
fn timeout_zero_is_exactly_one_attempt() {
    let mut w = World::new();
    let config = w.lock_config(ms(1000));
    let mut holder = w.lock("cart", "a", &config);
    holder.acquire(w.now, None).unwrap();
    w.pump(&mut holder);
    let mut waiter = w.lock("cart", "b", &config);
    waiter.acquire(w.now, Some(Duration::ZERO)).unwrap();
    let error = failed(&w.pump(&mut waiter)).clone();
    assert!(error.is_timeout(), "{error}");
    assert_eq!(waiter.poll_effect(), None);
}

#[test]
fn acquire_nowait_refused_is_would_block() {
    let mut w = World::new();
    let config = w.lock_config(ms(1000));
    let mut a = w.lock("cart", "a", &config);
    let mut b = w.lock("cart", "w2:task:7.0123456789abcdef", &config);
    a.acquire_nowait(w.now).unwrap();
    acquired(&w.pump(&mut a));
    b.acquire_nowait(w.now).unwrap();
    let error = failed(&w.pump(&mut b)).clone();
    assert_eq!(error, Error::WouldBlock { name: "cart".into(), reason: WouldBlockReason::LockHeld });
    assert_eq!(error.to_string(), "Lock not acquired: name=cart", "the token is a capability: never in messages");
}

#[test]
fn nested_acquire_by_the_same_holder_is_reentrant_in_every_order() {
    let (mut w, _, mut lock) = setup(ms(1000));
    lock.acquire(w.now, None).unwrap();
    assert!(lock.acquire(w.now, None).unwrap_err().is_reentrant(), "while acquiring");
    w.pump(&mut lock);
    assert!(lock.acquire(w.now, None).unwrap_err().is_reentrant());
    assert!(lock.acquire_nowait(w.now).unwrap_err().is_reentrant());
    lock.release(w.now).unwrap();
    assert_eq!(w.pump(&mut lock), vec![LockEvent::Released { fence: Some(FencingToken::FIRST) }]);
    lock.acquire_nowait(w.now).unwrap();
    assert!(acquired(&w.pump(&mut lock)) > FencingToken::FIRST, "after release the holder may acquire again");
}

#[test]
fn extend_keeps_the_fence_and_pushes_validity() {
    let (mut w, _, mut lock) = setup(ms(100));
    lock.acquire(w.now, None).unwrap();
    let fence = acquired(&w.pump(&mut lock));
    w.advance(ms(60));
    let sent = w.now;
    lock.extend(w.now).unwrap();
    let events = w.pump(&mut lock);
    let until = sent + local_validity(ms(100));
    assert_eq!(events, vec![LockEvent::Extended { fence, previous: fence, valid_until: until }]);
    w.advance(ms(90));
    assert!(lock.is_held(w.now));
}

#[test]
fn extend_without_holding_is_refused_without_asking_the_store() {
    let (w, _, mut lock) = setup(ms(100));
    assert!(lock.extend(w.now).unwrap_err().is_not_owned());
    assert_eq!(lock.poll_effect(), None);
}

#[test]
fn extend_after_a_silent_expiry_is_granted_again_with_a_greater_fence() {
    let (mut w, _, mut lock) = setup(ms(100));
    lock.acquire(w.now, None).unwrap();
    let fence = acquired(&w.pump(&mut lock));
    w.advance(ms(150));
    lock.extend(w.now).unwrap();
    let events = w.pump(&mut lock);
    assert!(
        matches!(events.as_slice(), [LockEvent::Lost { .. }, LockEvent::Extended { fence: f, previous, .. }]
        if *f == fence.next() && *previous == fence),
        "{events:?}"
    );
    assert!(lock.is_held(w.now));
}

#[test]
fn extend_after_a_takeover_is_not_owned() {
    let mut w = World::new();
    let config = w.lock_config(ms(100));
    let mut a = w.lock("cart", "a", &config);
    let mut b = w.lock("cart", "b", &config);
    a.acquire(w.now, None).unwrap();
    w.pump(&mut a);
    w.advance(ms(150));
    b.acquire_nowait(w.now).unwrap();
    acquired(&w.pump(&mut b));
    a.extend(w.now).unwrap();
    let events = w.pump(&mut a);
    assert!(matches!(events.last(), Some(LockEvent::Failed(e)) if e.is_not_owned()), "{events:?}");
    assert_eq!(a.phase(), LockPhase::Idle);
    assert!(a.extend(w.now).unwrap_err().is_not_owned(), "a lost lease never renews");
}

#[test]
fn extend_found_taken_while_believed_held_reports_the_loss() {
    let (mut w, _, mut lock) = setup(ms(100));
    lock.acquire(w.now, None).unwrap();
    let fence = acquired(&w.pump(&mut lock));
    lock.extend(w.now).unwrap();
    let request = w.take(&mut lock);
    let events = w.answer_with(&mut lock, &request, Ok(StoreReply::Fence(None)));
    assert_eq!(events[0], LockEvent::Lost { fence, reason: LossReason::NotOwned });
    assert!(matches!(&events[1], LockEvent::Failed(e) if e.is_not_owned()));
}

#[test]
fn release_twice_and_release_of_an_expired_taken_lock_are_not_owned() {
    let mut w = World::new();
    let config = w.lock_config(ms(100));
    let mut a = w.lock("cart", "a", &config);
    let mut b = w.lock("cart", "b", &config);
    a.acquire(w.now, None).unwrap();
    w.pump(&mut a);
    a.release(w.now).unwrap();
    assert_eq!(w.pump(&mut a), vec![LockEvent::Released { fence: Some(FencingToken::FIRST) }]);
    a.release(w.now).unwrap();
    assert!(failed(&w.pump(&mut a)).is_not_owned(), "second release");
    a.acquire(w.now, None).unwrap();
    w.pump(&mut a);
    w.advance(ms(150));
    b.acquire(w.now, None).unwrap();
    w.pump(&mut b);
    a.release(w.now).unwrap();
    let events = w.pump(&mut a);
    assert!(matches!(events.last(), Some(LockEvent::Failed(e)) if e.is_not_owned()), "{events:?}");
    assert!(w.store.lock_owned(b.key(), b.token(), w.now), "the other holder keeps it");
}

#[test]
fn a_failed_release_keeps_the_token_so_the_caller_can_retry() {
    let (mut w, _, mut lock) = setup(ms(1000));
    lock.acquire(w.now, None).unwrap();
    let fence = acquired(&w.pump(&mut lock));
    lock.release(w.now).unwrap();
    assert!(!lock.is_held(w.now), "the holder stops counting on the lease at once");
    let request = w.take(&mut lock);
    let error = failed(&w.answer_with(&mut lock, &request, Err(unavailable()))).clone();
    assert!(error.is_release() && error.is_lock_backend());
    assert_eq!(lock.phase(), LockPhase::Stale);
    assert_eq!(lock.fence(), Some(fence));
    assert!(lock.acquire(w.now, None).unwrap_err().is_reentrant(), "the held marker is kept (spec §8.3)");
    lock.release(w.now).unwrap();
    assert_eq!(w.pump(&mut lock), vec![LockEvent::Released { fence: Some(fence) }], "the retry succeeds");
    lock.acquire(w.now, None).unwrap();
    assert_eq!(acquired(&w.pump(&mut lock)), fence.next());
}

#[test]
fn an_expired_holder_must_release_or_extend_before_acquiring_again() {
    let (mut w, _, mut lock) = setup(ms(100));
    lock.acquire(w.now, None).unwrap();
    let fence = acquired(&w.pump(&mut lock));
    w.advance(ms(150));
    assert!(lock.acquire(w.now, None).unwrap_err().is_reentrant());
    assert_eq!(lock.poll_event(), Some(LockEvent::Lost { fence, reason: LossReason::Expired }));
}

#[test]
fn an_extend_from_a_stale_lease_sets_no_timer_in_the_past() {
    let (mut w, _, mut lock) = setup(ms(100));
    lock.acquire(w.now, None).unwrap();
    acquired(&w.pump(&mut lock));
    w.advance(ms(150));
    lock.extend(w.now).unwrap();
    let request = w.take(&mut lock);
    let deadline = request.deadline;
    assert_eq!(lock.poll_timeout(), Some(deadline), "only the request's deadline");
    assert!(!lock.is_held(w.now));
    w.advance(ms(1));
    lock.handle_timeout(w.now);
    assert!(lock.poll_timeout().is_some_and(|t| t > w.now), "a timer that fired is not due again");
}

#[test]
fn validity_ending_during_an_extend_is_reported_once_with_a_timer_that_moves_on() {
    let (mut w, _, mut lock) = setup(ms(100));
    lock.acquire(w.now, None).unwrap();
    let fence = acquired(&w.pump(&mut lock));
    w.advance(ms(95));
    lock.extend(w.now).unwrap();
    let request = w.take(&mut lock);
    let events = w.fire(&mut lock); // the old validity (99 ms) ends before the request's deadline
    assert_eq!(events, vec![LockEvent::Lost { fence, reason: LossReason::Expired }]);
    assert_eq!(lock.poll_timeout(), Some(request.deadline));
    let events = w.answer(&mut lock, &request);
    assert!(matches!(events.as_slice(), [LockEvent::Extended { .. }]), "{events:?}");
    assert!(lock.is_held(w.now));
}

#[test]
fn a_reply_read_after_validity_ran_out_reports_the_loss_first() {
    let (mut w, _, mut lock) = setup(ms(100));
    lock.acquire(w.now, None).unwrap();
    let fence = acquired(&w.pump(&mut lock));
    lock.extend(w.now).unwrap();
    let request = w.take(&mut lock);
    w.advance(ms(120)); // no timer ran: the reply is the first input after validity ended
    let events = w.answer_with(&mut lock, &request, Ok(StoreReply::Fence(None)));
    assert_eq!(events[0], LockEvent::Lost { fence, reason: LossReason::Expired });
    assert!(matches!(&events[1..], [LockEvent::Failed(e)] if e.is_not_owned()), "{events:?}");
}

#[test]
fn a_shorter_lease_after_set_config_shortens_the_belief_at_once() {
    let (mut w, _, mut lock) = setup(ms(60_000));
    lock.acquire(w.now, None).unwrap();
    acquired(&w.pump(&mut lock));
    let shorter = w.lock_config(ms(1000));
    lock.set_config(&shorter);
    w.advance(ms(500));
    let sent = w.now;
    lock.extend(w.now).unwrap();
    assert_eq!(lock.valid_until(), Some(sent + local_validity(ms(1000))), "capped while in flight");
    w.pump(&mut lock);
    assert_eq!(lock.valid_until(), Some(sent + local_validity(ms(1000))));
    assert!(!lock.is_held(sent + ms(1000)) && w.store.lock_owned(lock.key(), lock.token(), sent + ms(1000)));
}

#[test]
fn an_acquire_abandoned_at_its_deadline_releases_a_late_grant() {
    let mut w = World::new();
    let config = LockConfig::builder().backend_timeout(ms(10)).build(&mut w.rng).unwrap();
    let mut lock = w.lock("cart", "a", &config);
    lock.acquire(w.now, None).unwrap();
    let request = w.take(&mut lock);
    assert!(failed(&w.fire(&mut lock)).is_lock_backend());
    w.advance(ms(5));
    assert!(w.answer(&mut lock, &request).is_empty(), "the late grant is not reported");
    assert!(!w.store.lock_locked(lock.key(), w.now), "and it was released");
    assert_eq!(lock.phase(), LockPhase::Idle);
}

#[test]
fn store_failures_map_to_the_operation_error() {
    let (mut w, _, mut lock) = setup(ms(1000));
    lock.acquire(w.now, None).unwrap();
    let request = w.take(&mut lock);
    let error = failed(&w.answer_with(&mut lock, &request, Err(unavailable()))).clone();
    assert!(
        matches!(&error, Error::Acquire { name, cause } if name == "cart" && cause.kind() == BackendErrorKind::Unavailable)
    );
    assert_eq!(lock.phase(), LockPhase::Idle, "no retry on errors");
    lock.acquire(w.now, None).unwrap();
    w.pump(&mut lock);
    lock.extend(w.now).unwrap();
    let request = w.take(&mut lock);
    assert!(matches!(failed(&w.answer_with(&mut lock, &request, Err(unavailable()))), Error::Extend { .. }));
    assert_eq!(lock.phase(), LockPhase::Held, "a failed extend keeps the old lease");
    lock.extend(w.now).unwrap();
    let request = w.take(&mut lock);
    let error = failed(&w.answer_with(&mut lock, &request, Ok(StoreReply::Flag(true)))).clone();
    assert!(matches!(&error, Error::Extend { cause, .. } if cause.kind() == BackendErrorKind::Protocol));
}

#[test]
fn a_frozen_store_fails_the_call_at_backend_timeout_and_late_replies_are_ignored() {
    let mut w = World::new();
    let config = LockConfig::builder().backend_timeout(ms(300)).build(&mut w.rng).unwrap();
    let mut lock = w.lock("cart", "a", &config);
    let sent = w.now;
    lock.acquire(w.now, None).unwrap();
    let request = w.take(&mut lock);
    assert_eq!(lock.poll_timeout(), Some(sent + ms(300)));
    w.advance(ms(299));
    lock.handle_timeout(w.now);
    assert_eq!(lock.poll_event(), None, "an early timeout does nothing");
    let events = w.fire(&mut lock);
    assert_eq!(w.now, sent + ms(300));
    let error = failed(&events);
    assert!(matches!(error, Error::Acquire { cause, .. } if cause.kind() == BackendErrorKind::Timeout), "{error}");
    // The store applies the request late; its reply is stale and changes nothing.
    let late = w.answer(&mut lock, &request);
    assert!(late.is_empty());
    assert_eq!(lock.phase(), LockPhase::Idle);
}

#[test]
fn duplicated_and_unknown_replies_are_ignored() {
    let (mut w, _, mut lock) = setup(ms(1000));
    lock.acquire(w.now, None).unwrap();
    let request = w.take(&mut lock);
    acquired(&w.answer(&mut lock, &request));
    assert!(w.answer(&mut lock, &request).is_empty(), "duplicate");
    lock.handle_reply(w.now, tenure_core::OpId::new(999), Ok(StoreReply::Fence(None)));
    assert_eq!(lock.poll_event(), None);
    assert_eq!(lock.phase(), LockPhase::Held);
}

#[test]
fn a_cancelled_acquire_releases_a_grant_that_lands_afterwards() {
    let (mut w, _, mut lock) = setup(ms(1000));
    lock.acquire(w.now, None).unwrap();
    let request = w.take(&mut lock);
    lock.cancel(w.now);
    assert_eq!(lock.phase(), LockPhase::Cancelling);
    let events = w.answer(&mut lock, &request);
    assert!(events.is_empty(), "a cancelled command reports nothing: {events:?}");
    assert!(!w.store.lock_locked(lock.key(), w.now), "the late grant was released");
    assert_eq!(lock.phase(), LockPhase::Idle);
}

#[test]
fn cancelling_a_wait_or_an_extend_leaves_no_request_behind() {
    let mut w = World::new();
    let config = w.lock_config(ms(1000));
    let mut a = w.lock("cart", "a", &config);
    let mut b = w.lock("cart", "b", &config);
    a.acquire(w.now, None).unwrap();
    let fence = acquired(&w.pump(&mut a));
    b.acquire(w.now, None).unwrap();
    w.pump(&mut b);
    b.cancel(w.now);
    assert_eq!((b.phase(), b.poll_timeout()), (LockPhase::Idle, None));
    a.extend(w.now).unwrap();
    let request = w.take(&mut a);
    a.cancel(w.now);
    assert_eq!((a.phase(), a.fence()), (LockPhase::Held, Some(fence)));
    assert!(w.answer(&mut a, &request).is_empty(), "the cancelled extend's reply is ignored");
    a.release(w.now).unwrap();
    let request = w.take(&mut a);
    a.cancel(w.now);
    assert_eq!(a.phase(), LockPhase::Releasing, "a release goes on");
    assert!(w.answer(&mut a, &request).is_empty(), "quietly");
    assert!(!w.store.lock_locked(a.key(), w.now));
}

#[test]
fn commands_during_another_are_busy() {
    let (mut w, _, mut lock) = setup(ms(1000));
    lock.acquire(w.now, None).unwrap();
    assert!(matches!(lock.release(w.now), Err(Error::Busy { operation: "acquire", .. })));
    w.pump(&mut lock);
    lock.extend(w.now).unwrap();
    assert!(matches!(lock.release(w.now), Err(Error::Busy { operation: "extend", .. })));
    w.pump(&mut lock);
    lock.release(w.now).unwrap();
    assert!(matches!(lock.extend(w.now), Err(Error::Busy { operation: "release", .. })));
}

#[test]
fn the_retry_pause_is_the_jitter_formula_with_the_machines_random_value() {
    let mut w = World::new();
    let config = LockConfig::builder().retry_interval(ms(200)).retry_jitter(0.4).build(&mut w.rng).unwrap();
    let mut holder = w.lock("cart", "a", &config);
    holder.acquire(w.now, None).unwrap();
    w.pump(&mut holder);
    // The machine seeds its jitter generator with one draw of the injected generator.
    let mut injected = SplitMix64::new(99);
    let mut probe = SplitMix64::new(SplitMix64::new(99).next_u64());
    let expected = jitter(ms(200), 0.4, unit_interval(probe.next_u64()));
    let mut waiter = LockMachine::new(holder.key().clone(), support::token("b"), &config, &mut injected);
    waiter.acquire(w.now, None).unwrap();
    w.pump(&mut waiter);
    assert_eq!(waiter.poll_timeout(), Some(w.now + expected));
    assert!(expected >= ms(120) && expected < ms(280));

    let flat = w.lock_config(ms(1000)); // retry 10 ms, jitter 0
    let mut waiter = w.lock("cart", "c", &flat);
    waiter.acquire(w.now, None).unwrap();
    w.pump(&mut waiter);
    assert_eq!(waiter.poll_timeout(), Some(w.now + ms(10)), "jitter 0 sleeps exactly retry_interval");
}

#[test]
fn a_push_wake_up_attempts_at_once() {
    let mut w = World::new();
    let config = LockConfig::builder().retry_interval(ms(500)).build(&mut w.rng).unwrap();
    let mut a = w.lock("cart", "a", &config);
    let mut b = w.lock("cart", "b", &config);
    a.acquire(w.now, None).unwrap();
    w.pump(&mut a);
    b.acquire(w.now, None).unwrap();
    w.pump(&mut b);
    a.release(w.now).unwrap();
    w.pump(&mut a);
    w.advance(ms(1));
    b.wake(w.now);
    assert_eq!(acquired(&w.pump(&mut b)), FencingToken::new(2));
}

#[test]
fn a_fence_lower_than_one_already_seen_is_refused() {
    let (mut w, _, mut lock) = setup(ms(1000));
    lock.acquire(w.now, None).unwrap();
    let request = w.take(&mut lock);
    w.answer_with(&mut lock, &request, Ok(StoreReply::Fence(Some(FencingToken::new(7)))));
    lock.release(w.now).unwrap();
    w.pump(&mut lock);
    lock.acquire(w.now, None).unwrap();
    let request = w.take(&mut lock);
    let events = w.answer_with(&mut lock, &request, Ok(StoreReply::Fence(Some(FencingToken::new(3)))));
    let error = failed(&events);
    assert!(matches!(error, Error::Acquire { cause, .. } if cause.kind() == BackendErrorKind::FenceRegression));
    assert!(!lock.is_held(w.now));
}

#[test]
fn a_lock_machine_fits_in_512_bytes() {
    let size = std::mem::size_of::<LockMachine>();
    assert!(size <= 512, "LockMachine is {size} bytes");
}

#[test]
fn cancelling_an_extend_after_validity_ended_reports_the_loss() {
    let (mut w, _, mut lock) = setup(ms(100));
    lock.acquire(w.now, None).unwrap();
    let fence = acquired(&w.pump(&mut lock));
    lock.extend(w.now).unwrap();
    let _request = w.take(&mut lock);
    w.advance(ms(99));
    lock.cancel(w.now);
    assert_eq!(lock.poll_event(), Some(LockEvent::Lost { fence, reason: LossReason::Expired }));
    assert_eq!(lock.phase(), LockPhase::Stale);
}

#[test]
fn a_wake_up_during_a_refused_attempt_is_not_lost() {
    let mut w = World::new();
    let config = LockConfig::builder().retry_interval(ms(500)).build(&mut w.rng).unwrap();
    let mut a = w.lock("cart", "a", &config);
    let mut b = w.lock("cart", "b", &config);
    a.acquire(w.now, None).unwrap();
    w.pump(&mut a);
    b.acquire(w.now, None).unwrap();
    let attempt = w.take(&mut b);
    let refused = w.store.apply(&attempt.op, w.now); // the store refuses b ...
    a.release(w.now).unwrap();
    w.pump(&mut a); // ... then a releases and the wake-up reaches b before the refusal does
    b.wake(w.now);
    b.handle_reply(w.now, attempt.id, Ok(refused));
    assert_eq!(b.phase(), LockPhase::Acquiring, "retried at once, not after 500 ms");
    assert_eq!(acquired(&w.pump(&mut b)), FencingToken::new(2));
}

/// Applies `request` at the store now, then lets `delay` pass before the reply reaches `lock`
/// (a reply slower than the lease, as after a process pause). The machine's own timers are not
/// fired in between: the late reply comes first.
fn answer_late(
    w: &mut World,
    lock: &mut LockMachine,
    request: &tenure_core::StoreRequest,
    delay: Duration,
) -> Vec<LockEvent> {
    let reply = w.store.apply(&request.op, w.now);
    w.advance(delay);
    lock.handle_reply(w.now, request.id, Ok(reply));
    let mut events = Vec::new();
    while let Some(event) = lock.poll_event() {
        events.push(event);
    }
    events
}

#[test]
fn a_grant_that_arrives_after_its_lease_ran_out_is_asked_again_by_a_blocking_acquire() {
    let (mut w, _, mut lock) = setup(ms(100));
    lock.acquire(w.now, None).unwrap();
    let request = w.take(&mut lock);
    assert_eq!(answer_late(&mut w, &mut lock, &request, ms(150)), vec![], "no worthless Acquired");
    assert_eq!(lock.phase(), LockPhase::Acquiring, "asks again at once");
    let again = w.take(&mut lock);
    let fence = acquired(&w.answer(&mut lock, &again));
    assert_eq!(fence, FencingToken::new(2), "the lapsed lease is granted anew");
    assert!(lock.is_held(w.now));
}

#[test]
fn a_late_grant_fails_a_nowait_or_expired_acquire_and_is_released() {
    let (mut w, config, mut lock) = setup(ms(100));
    lock.acquire_nowait(w.now).unwrap();
    let request = w.take(&mut lock);
    let events = answer_late(&mut w, &mut lock, &request, ms(99));
    let error = failed(&events);
    assert!(matches!(error, Error::Acquire { cause, .. } if cause.kind() == BackendErrorKind::Timeout), "{error:?}");
    assert!(!lock.is_held(w.now) && lock.fence().is_none());
    let release = w.take(&mut lock);
    assert!(matches!(release.op, StoreOp::LockRelease { .. }), "the grant is given back");
    assert_eq!(w.answer(&mut lock, &release), vec![], "quietly");
    assert!(lock.is_quiescent());

    let mut timed = w.lock("cart", "b", &config);
    timed.acquire(w.now, Some(ms(50))).unwrap();
    let request = w.take(&mut timed);
    let events = answer_late(&mut w, &mut timed, &request, ms(120));
    assert_eq!(failed(&events), &Error::Timeout { name: "cart".into(), timeout: ms(50) });
    assert!(matches!(w.take(&mut timed).op, StoreOp::LockRelease { .. }));
}

#[test]
fn an_extend_granted_too_late_fails_and_leaves_the_lease_stale() {
    let (mut w, _, mut lock) = setup(ms(100));
    lock.acquire(w.now, None).unwrap();
    let fence = acquired(&w.pump(&mut lock));
    lock.extend(w.now).unwrap();
    let request = w.take(&mut lock);
    let events = answer_late(&mut w, &mut lock, &request, ms(150));
    assert_eq!(events[0], LockEvent::Lost { fence, reason: LossReason::Expired }, "the old lease ran out first");
    assert!(
        matches!(&events[1], LockEvent::Failed(Error::Extend { cause, .. }) if cause.kind() == BackendErrorKind::Timeout)
    );
    assert_eq!(lock.phase(), LockPhase::Stale);
    assert!(!lock.is_held(w.now));
}

#[test]
fn a_quiescent_machine_takes_a_new_token_and_a_busy_one_refuses() {
    let (mut w, _, mut lock) = setup(ms(100));
    assert!(lock.token_is_fresh());
    lock.acquire(w.now, None).unwrap();
    assert!(!lock.token_is_fresh(), "sent in an acquire");
    assert!(matches!(lock.set_token(support::token("b")), Err(Error::Busy { .. })));
    w.pump(&mut lock);
    assert!(matches!(lock.set_token(support::token("b")), Err(Error::Busy { .. })), "holding");
    lock.release(w.now).unwrap();
    w.pump(&mut lock);
    lock.set_token(support::token("b")).unwrap();
    assert!(lock.token_is_fresh());
    lock.acquire(w.now, None).unwrap();
    let request = w.take(&mut lock);
    assert!(matches!(&request.op, StoreOp::LockAcquire { token, .. } if token.as_str() == "b"));
}

#[test]
fn a_release_from_an_earlier_acquisition_cannot_free_the_next_one() {
    // The simulator's seed 275 (tests/sim): a release that timed out reached the store after the
    // same holder had acquired again, and freed the new lease. A new token per acquisition makes
    // the stale release a no-op.
    let (mut w, _, mut lock) = setup(ms(60_000));
    lock.acquire(w.now, None).unwrap();
    w.pump(&mut lock);
    lock.release(w.now).unwrap();
    let stale = w.take(&mut lock); // delayed in the network
    w.fire(&mut lock); // and timed out
    assert_eq!(lock.phase(), LockPhase::Stale, "the outcome is unknown");
    lock.release(w.now).unwrap(); // released again, and answered
    assert_eq!(w.pump(&mut lock), vec![LockEvent::Released { fence: Some(FencingToken::FIRST) }]);
    lock.set_token(support::token("a-2")).unwrap();
    lock.acquire(w.now, None).unwrap();
    w.pump(&mut lock);
    assert!(w.store.lock_lease(lock.key(), w.now).is_some());
    assert_eq!(w.store.apply(&stale.op, w.now), StoreReply::Flag(false), "the late release misses");
    assert!(w.store.lock_owned(lock.key(), lock.token(), w.now));
}

#[test]
fn an_extend_refused_by_a_revocation_of_its_own_fence_is_lost_as_revoked_with_the_reason() {
    let (mut w, _, mut lock) = setup(ms(10_000));
    lock.acquire(w.now, None).unwrap();
    let fence = acquired(&w.pump(&mut lock));
    let reason = tenure_core::RevokeReason::new("stuck").unwrap();
    lock.extend(w.now).unwrap();
    let request = w.take(&mut lock);
    let revoked = StoreReply::Revoked { fence, reason: reason.clone() };
    let events = w.answer_with(&mut lock, &request, Ok(revoked));
    assert_eq!(events[0], LockEvent::Lost { fence, reason: LossReason::Revoked(reason.clone()) });
    let cause = tenure_core::LossCause::Revoked(reason.clone());
    assert!(matches!(&events[1..], [LockEvent::Failed(e)] if e.loss_cause() == Some(cause.clone())), "{events:?}");
    assert_eq!(lock.loss(), Some((fence, LossReason::Revoked(reason.clone()))));
    assert!(!lock.is_held(w.now));

    // Another holder's revocation is a refusal like any: the lease was taken.
    let (mut w, _, mut lock) = setup(ms(10_000));
    lock.acquire(w.now, None).unwrap();
    let fence = acquired(&w.pump(&mut lock));
    lock.extend(w.now).unwrap();
    let request = w.take(&mut lock);
    let other = StoreReply::Revoked { fence: FencingToken::new(fence.get() + 5), reason };
    let events = w.answer_with(&mut lock, &request, Ok(other));
    assert_eq!(events[0], LockEvent::Lost { fence, reason: LossReason::NotOwned });
}

#[test]
fn a_revocation_told_after_the_validity_ran_out_reports_the_loss_once() {
    let (mut w, _, mut lock) = setup(ms(100));
    lock.acquire(w.now, None).unwrap();
    let fence = acquired(&w.pump(&mut lock));
    lock.extend(w.now).unwrap();
    let request = w.take(&mut lock);
    w.advance(ms(120));
    let reason = tenure_core::RevokeReason::new("stuck").unwrap();
    let events = w.answer_with(&mut lock, &request, Ok(StoreReply::Revoked { fence, reason: reason.clone() }));
    assert_eq!(events[0], LockEvent::Lost { fence, reason: LossReason::Expired });
    let cause = tenure_core::LossCause::Revoked(reason);
    assert!(matches!(&events[1..], [LockEvent::Failed(e)] if e.loss_cause() == Some(cause.clone())), "{events:?}");
    assert_eq!(lock.loss(), Some((fence, LossReason::Expired)), "the first cause told is kept");
}
