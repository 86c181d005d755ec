//! The Lock machine with queued acquires, against the store model: a waiter the store hands
//! the lock to holds at the push, counting the lease from its first attempt answered "queued";
//! late, given-up and regressed grants; `acquire_nowait` never queues.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use support::{World, key, ms, token};
use tenure_core::machine::local_validity;
use tenure_core::{
    BackendErrorKind, Error, FencingToken, Grant, KeyKind, LockEvent, LockMachine, LockPhase, StoreOp, StoreReply,
    Timestamp,
};

const WAIT: Duration = Duration::from_millis(100);

/// A world where "a" holds "cart" (plain), and queued waiter "b" has been answered "queued".
fn holder_and_waiter(lease: Duration) -> (World, LockMachine, LockMachine, Timestamp) {
    let mut w = World::new();
    let config = w.lock_config(lease);
    let mut a = w.lock("cart", "a", &config);
    let mut b = w.lock("cart", "b", &config);
    b.set_queued(Some(WAIT));
    a.acquire(w.now, None).unwrap();
    assert!(matches!(w.pump(&mut a)[..], [LockEvent::Acquired { .. }]));
    w.advance(ms(5));
    let sent = w.now;
    b.acquire(w.now, None).unwrap();
    let request = w.take(&mut b);
    assert!(matches!(&request.op, StoreOp::LockAcquireQueued { wait, .. } if *wait == WAIT), "{request:?}");
    w.advance(ms(1));
    assert!(w.answer(&mut b, &request).is_empty());
    assert_eq!(b.phase(), LockPhase::Waiting);
    (w, a, b, sent)
}

/// "a"'s release as Tenure's stores run it: frees the lock and hands it to the queue's head.
fn release_a(w: &mut World) -> Grant {
    let (released, grant) = w.store.lock_release_queued(&key(KeyKind::Lock, "cart"), &token("a"), w.now);
    assert!(released);
    grant.expect("b was queued")
}

#[test]
fn a_waiter_handed_the_lock_holds_at_the_push_counting_from_its_queued_attempt() {
    let lease = ms(1000);
    let (mut w, _a, mut b, sent) = holder_and_waiter(lease);
    w.advance(ms(3));
    let grant = release_a(&mut w);
    assert_eq!(grant.token, token("b"));
    w.advance(ms(1)); // the push's way
    b.handle_grant(w.now, grant.fence);
    let events: Vec<_> = std::iter::from_fn(|| b.poll_event()).collect();
    let until = sent + local_validity(lease);
    assert_eq!(events, [LockEvent::Acquired { fence: grant.fence, valid_until: until }]);
    assert!(b.poll_effect().is_none(), "no round trip after the push");
    assert!(until <= grant.expires_at, "the holder never counts past the store's lease");
    assert!(w.store.lock_owned(&key(KeyKind::Lock, "cart"), &token("b"), w.now));
}

#[test]
fn a_push_read_after_a_later_attempt_answered_queued_counts_from_the_first_such_attempt() {
    // Seed 664 of the simulator: the store hands b the lock, the push is held up (a paused
    // process, a notification on another connection), the handed lease lapses and c takes the
    // lock; b's next attempt is answered "queued" — and only then is the old push read.
    let lease = ms(100);
    let (mut w, _a, mut b, first_sent) = holder_and_waiter(lease);
    w.advance(ms(10));
    let stale = release_a(&mut w);
    w.advance(ms(120)); // the handed lease ends unheard
    let config = w.lock_config(lease);
    let mut c = w.lock("cart", "c", &config);
    c.acquire_nowait(w.now).unwrap();
    assert!(matches!(w.pump(&mut c)[..], [LockEvent::Acquired { .. }]));
    let events = w.fire(&mut b); // b asks again: queued behind c
    assert!(events.is_empty() && b.phase() == LockPhase::Waiting);
    w.advance(ms(1));
    b.handle_grant(w.now, stale.fence);
    // Counted from its first queued attempt, the stale grant is already over: b asks again.
    assert!(b.poll_event().is_none(), "b does not believe beside c");
    assert!(!b.is_held(w.now));
    let retry = w.take(&mut b);
    assert!(w.answer(&mut b, &retry).is_empty(), "still queued behind c");
    assert!(first_sent + local_validity(lease) <= w.now);
}

#[test]
fn a_grant_too_late_to_count_on_is_renewed_by_asking_again() {
    let lease = ms(100);
    let (mut w, _a, mut b, _) = holder_and_waiter(lease);
    w.advance(ms(80));
    let grant = release_a(&mut w);
    // The push comes after the lease counted from the queued attempt would have run out (the
    // store's, counted from the release, still runs).
    w.advance(ms(30));
    b.handle_grant(w.now, grant.fence);
    let renewal = w.take(&mut b);
    assert!(matches!(renewal.op, StoreOp::LockAcquireQueued { .. }));
    let sent = w.now;
    let events = w.answer(&mut b, &renewal);
    assert_eq!(events, [LockEvent::Acquired { fence: grant.fence, valid_until: sent + local_validity(lease) }]);
}

#[test]
fn an_acquire_given_up_gives_its_place_up_and_what_was_handed_over_meanwhile() {
    let (mut w, _a, mut b, _) = holder_and_waiter(ms(1000));
    let cart = key(KeyKind::Lock, "cart");
    b.cancel(w.now);
    let give_up = w.take(&mut b);
    assert!(matches!(give_up.op, StoreOp::LockRelease { .. }), "{give_up:?}");
    // a's release overtakes it: the store hands the lock to b, still queued.
    let grant = release_a(&mut w);
    assert_eq!(grant.token, token("b"));
    // b's release then frees what it was handed, and the queue is empty.
    let (released, next) = w.store.lock_release_queued(&cart, &token("b"), w.now);
    assert!(released && next.is_none());
    b.handle_reply(w.now, give_up.id, Ok(StoreReply::Flag(released)));
    assert!(b.poll_event().is_none(), "quiet: nobody waits for it");
    // The push comes last: the machine, idle, gives back what it may hold (nothing now).
    b.handle_grant(w.now, grant.fence);
    let again = w.take(&mut b);
    assert!(matches!(again.op, StoreOp::LockRelease { .. }));
    assert!(w.answer(&mut b, &again).is_empty());
    assert!(!w.store.lock_locked(&cart, w.now));
    assert!(w.store.lock_queue(&cart, w.now).is_empty());
    assert!(b.is_quiescent());
}

#[test]
fn a_bounded_acquire_that_times_out_gives_its_place_up() {
    let mut w = World::new();
    let config = w.lock_config(ms(1000));
    let (mut a, mut b) = (w.lock("cart", "a", &config), w.lock("cart", "b", &config));
    b.set_queued(Some(WAIT));
    a.acquire(w.now, None).unwrap();
    w.pump(&mut a);
    b.acquire(w.now, Some(ms(0))).unwrap();
    let attempt = w.take(&mut b);
    let cart = key(KeyKind::Lock, "cart");
    let (fence, _) = w.store.lock_acquire_queued(&cart, &token("b"), (ms(1000), WAIT), (0, None), w.now);
    b.handle_reply(w.now, attempt.id, Ok(StoreReply::Fence(fence)));
    assert!(matches!(b.poll_event(), Some(LockEvent::Failed(Error::Timeout { .. }))));
    let give_up = w.take(&mut b);
    assert!(matches!(give_up.op, StoreOp::LockRelease { .. }));
    w.store.lock_release_queued(&cart, &token("b"), w.now);
    assert!(w.store.lock_queue(&cart, w.now).is_empty());
}

/// "a" holds "cart"; queued waiter "b" has an attempt in flight, which the store applies (a
/// place kept) and answers only after `abandon` has run on b.
fn attempt_answered_after(abandon: impl FnOnce(&mut World, &mut LockMachine)) -> (World, LockMachine, LockMachine) {
    let mut w = World::new();
    let config = w.lock_config(ms(60_000));
    let (mut a, mut b) = (w.lock("cart", "a", &config), w.lock("cart", "b", &config));
    b.set_queued(Some(WAIT));
    a.acquire(w.now, None).unwrap();
    w.pump(&mut a);
    b.acquire(w.now, None).unwrap();
    let attempt = w.take(&mut b);
    let cart = key(KeyKind::Lock, "cart");
    let (fence, _) = w.store.lock_acquire_queued(&cart, &token("b"), (ms(60_000), WAIT), (0, None), w.now);
    assert!(fence.is_none() && !w.store.lock_queue(&cart, w.now).is_empty(), "b keeps a place");
    abandon(&mut w, &mut b);
    b.handle_reply(w.now, attempt.id, Ok(StoreReply::Fence(fence)));
    (w, a, b)
}

/// b gives its place up (a release, as a queue-keeping store runs it): a's release then hands
/// the lock to nobody, and it is free.
fn gives_up_its_place(mut w: World, mut b: LockMachine) {
    let cart = key(KeyKind::Lock, "cart");
    let give_up = w.take(&mut b);
    assert!(matches!(give_up.op, StoreOp::LockRelease { .. }), "{give_up:?}");
    let (released, _) = w.store.lock_release_queued(&cart, &token("b"), w.now);
    b.handle_reply(w.now, give_up.id, Ok(StoreReply::Flag(released)));
    assert!(b.poll_event().is_none(), "quiet: nobody waits for it");
    let (released, grant) = w.store.lock_release_queued(&cart, &token("a"), w.now);
    assert!(released && grant.is_none(), "a's release handed the lock to a waiter that left: {grant:?}");
    assert!(!w.store.lock_locked(&cart, w.now));
    assert!(b.is_quiescent());
}

#[test]
fn an_attempt_cancelled_in_flight_gives_up_the_place_its_refusal_kept() {
    // Found from Kotlin: a coroutine cancelled while its queued attempt was in flight left its
    // place; the holder's release then handed the lock to nobody for a whole lease.
    let (w, _a, b) = attempt_answered_after(|w, b| b.cancel(w.now));
    gives_up_its_place(w, b);
}

#[test]
fn an_attempt_abandoned_at_its_deadline_gives_up_the_place_its_late_refusal_kept() {
    let (w, _a, b) = attempt_answered_after(|w, b| {
        b.cancel(w.now);
        w.advance(ms(6000)); // past the backend timeout: the attempt is orphaned
        b.handle_timeout(w.now);
        // Given up at once, not knowing whether the store applied it...
        let give_up = w.take(b);
        assert!(matches!(give_up.op, StoreOp::LockRelease { .. }), "{give_up:?}");
        b.handle_reply(w.now, give_up.id, Ok(StoreReply::Flag(false)));
    });
    // ... and again once the late answer says it did.
    gives_up_its_place(w, b);
}

#[test]
fn a_grant_with_a_fence_lower_than_one_seen_fails_and_is_released() {
    let mut w = World::new();
    let config = w.lock_config(ms(1000));
    let mut c = w.lock("cart", "c", &config);
    c.set_queued(Some(WAIT));
    // An earlier acquisition saw fence 5.
    let seen = (1..5).fold(FencingToken::FIRST, |f, _| f.next());
    c.acquire(w.now, None).unwrap();
    let first = w.take(&mut c);
    c.handle_reply(w.now, first.id, Ok(StoreReply::Fence(Some(seen))));
    c.release(w.now).unwrap();
    let release = w.take(&mut c);
    c.handle_reply(w.now, release.id, Ok(StoreReply::Flag(true)));
    let _ = std::iter::from_fn(|| c.poll_event()).count();
    // Queued now, then handed fence 1: the store lost its counter.
    c.acquire(w.now, None).unwrap();
    let queued = w.take(&mut c);
    c.handle_reply(w.now, queued.id, Ok(StoreReply::Fence(None)));
    c.handle_grant(w.now, FencingToken::FIRST);
    let events: Vec<_> = std::iter::from_fn(|| c.poll_event()).collect();
    assert!(
        matches!(&events[..], [LockEvent::Failed(Error::Acquire { cause, .. })] if cause.kind() == BackendErrorKind::FenceRegression),
        "{events:?}"
    );
    assert!(matches!(w.take(&mut c).op, StoreOp::LockRelease { .. }), "what was handed over is given back");
}

#[test]
fn a_grant_during_an_attempt_in_flight_waits_for_that_attempts_answer() {
    let (mut w, _a, mut b, _) = holder_and_waiter(ms(1000));
    let retry = w.fire(&mut b); // the next attempt is sent (and answered "queued" again)
    assert!(retry.is_empty());
    w.advance(ms(20));
    b.handle_timeout(w.now);
    let in_flight = w.take(&mut b);
    let grant = release_a(&mut w);
    b.handle_grant(w.now, grant.fence);
    assert!(b.poll_event().is_none() && b.poll_effect().is_none());
    let sent = w.now;
    let events = w.answer(&mut b, &in_flight);
    assert_eq!(events, [LockEvent::Acquired { fence: grant.fence, valid_until: sent + local_validity(ms(1000)) }]);
}

#[test]
fn acquire_nowait_never_queues() {
    let mut w = World::new();
    let config = w.lock_config(ms(1000));
    let mut b = w.lock("cart", "b", &config);
    b.set_queued(Some(WAIT));
    b.acquire_nowait(w.now).unwrap();
    assert!(matches!(w.take(&mut b).op, StoreOp::LockAcquire { .. }));
}
