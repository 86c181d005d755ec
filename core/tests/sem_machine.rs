//! The lock machine holding a semaphore's permit, against the store model: what it asks, how a
//! waiter keeps its place in line and gives it up, a count that differs from the stored one.
#![allow(clippy::unwrap_used)]

mod support;

use std::num::NonZeroU32;
use std::time::Duration;

use support::{World, acquired, failed, key, ms, token};
use tenure_core::{
    Access, Error, FencingToken, KeyKind, LockConfig, LockEvent, LockMachine, StoreOp, WouldBlockReason,
};

fn permit(w: &mut World, holder: &str, permits: u32, config: &LockConfig) -> LockMachine {
    let access = Access::Permit(NonZeroU32::new(permits).unwrap());
    LockMachine::with_access(key(KeyKind::Semaphore, "pool"), token(holder), access, config, &mut w.rng)
}

fn setup(lease: Duration) -> (World, LockConfig) {
    let mut w = World::new();
    let config = w.lock_config(lease);
    (w, config)
}

fn pool() -> tenure_core::Key {
    key(KeyKind::Semaphore, "pool")
}

#[test]
fn holders_take_permits_up_to_the_count_and_a_single_attempt_is_turned_away_after() {
    let (mut w, config) = setup(ms(1000));
    let mut a = permit(&mut w, "a", 2, &config);
    let mut b = permit(&mut w, "b", 2, &config);
    let mut c = permit(&mut w, "c", 2, &config);
    a.acquire(w.now, None).unwrap();
    let request = w.take(&mut a);
    assert!(matches!(
        &request.op,
        StoreOp::SemAcquire { key, permits: 2, wait: Some(_), lease, .. } if key.as_str() == "semaphore:pool" && *lease == ms(1000)
    ));
    assert_eq!(acquired(&w.answer(&mut a, &request)), FencingToken::new(1));
    b.acquire_nowait(w.now).unwrap();
    let request = w.take(&mut b);
    assert!(matches!(request.op, StoreOp::SemAcquire { wait: None, .. }), "a single attempt keeps no place");
    assert_eq!(acquired(&w.answer(&mut b, &request)), FencingToken::new(2));
    c.acquire_nowait(w.now).unwrap();
    let error = failed(&w.pump(&mut c)).clone();
    assert_eq!(error, Error::WouldBlock { name: "pool".into(), reason: WouldBlockReason::PermitsTaken });

    a.extend(w.now).unwrap();
    let events = w.pump(&mut a);
    assert!(matches!(events[..], [LockEvent::Extended { fence, previous, .. }] if fence == previous));
    a.release(w.now).unwrap();
    let request = w.take(&mut a);
    assert!(matches!(request.op, StoreOp::SemRelease { .. }));
    assert_eq!(w.answer(&mut a, &request), vec![LockEvent::Released { fence: Some(FencingToken::new(1)) }]);
    assert_eq!(w.store.sem_state(&pool(), w.now).holders, 1);
}

#[test]
fn a_waiter_keeps_its_place_while_it_waits_and_gives_it_up_at_its_timeout() {
    let (mut w, config) = setup(ms(1000));
    let mut a = permit(&mut w, "a", 1, &config);
    let mut b = permit(&mut w, "b", 1, &config);
    a.acquire(w.now, None).unwrap();
    w.pump(&mut a);
    b.acquire(w.now, Some(ms(25))).unwrap();
    assert!(w.pump(&mut b).is_empty(), "refused, it waits");
    assert_eq!(w.store.sem_state(&pool(), w.now).waiting, 1, "with a place in line");
    let mut events = Vec::new();
    while events.is_empty() {
        events = w.fire(&mut b);
    }
    assert!(matches!(failed(&events), Error::Timeout { .. }));
    assert_eq!(w.store.sem_state(&pool(), w.now).waiting, 0, "the place is given up with the timeout");
}

#[test]
fn a_cancelled_waiter_leaves_the_line() {
    let (mut w, config) = setup(ms(1000));
    let mut a = permit(&mut w, "a", 1, &config);
    let mut b = permit(&mut w, "b", 1, &config);
    a.acquire(w.now, None).unwrap();
    w.pump(&mut a);
    b.acquire(w.now, None).unwrap();
    let request = w.take(&mut b);
    b.cancel(w.now);
    w.answer(&mut b, &request);
    assert_eq!(w.store.sem_state(&pool(), w.now).waiting, 0, "the cancelled attempt's place is given up");
    assert!(b.is_quiescent());
}

#[test]
fn a_count_other_than_the_stored_one_fails_clearly_and_keeps_no_place() {
    let (mut w, config) = setup(ms(1000));
    let mut a = permit(&mut w, "a", 3, &config);
    let mut b = permit(&mut w, "b", 5, &config);
    a.acquire(w.now, None).unwrap();
    w.pump(&mut a);
    b.acquire(w.now, None).unwrap();
    let events = w.pump(&mut b);
    let error = failed(&events);
    assert!(matches!(error, Error::Settings(_)), "{error:?}");
    let text = error.to_string();
    assert!(text.contains("'pool' is in use with 3 permits") && text.contains("asks for 5"), "{text}");
    assert_eq!(
        w.store.sem_state(&pool(), w.now),
        tenure_core::SemState { permits: 3, holders: 1, waiting: 0, fence: 1 }
    );
}

#[test]
fn a_waiter_keeps_the_place_it_was_given_and_asks_again_well_within_it() {
    let (mut w, config) = setup(ms(1000));
    let mut a = permit(&mut w, "a", 1, &config);
    a.acquire(w.now, None).unwrap();
    w.pump(&mut a);
    // A place shorter than the lease (the driver's, from the retry interval)...
    let mut b = permit(&mut w, "b", 1, &config);
    b.set_queued(Some(ms(300)));
    b.acquire(w.now, None).unwrap();
    let request = w.take(&mut b);
    assert!(matches!(request.op, StoreOp::SemAcquire { wait: Some(wait), .. } if wait == ms(300)));
    w.answer(&mut b, &request);
    // ...and, with none given, a lease: a retry interval longer than either is cut to a third.
    let slow = LockConfig::builder()
        .lease_duration(ms(300))
        .retry_interval(ms(1000))
        .retry_jitter(0.0)
        .build(&mut w.rng)
        .unwrap();
    let mut c = permit(&mut w, "c", 1, &slow);
    c.acquire(w.now, None).unwrap();
    w.pump(&mut c);
    let next = c.poll_timeout().expect("a next attempt");
    assert!(next <= w.now + ms(100), "the next attempt comes within a third of the place");
}

#[test]
fn an_extend_answered_with_another_count_loses_the_permit() {
    let (mut w, config) = setup(ms(1000));
    let mut a = permit(&mut w, "a", 2, &config);
    a.acquire(w.now, None).unwrap();
    w.pump(&mut a);
    a.extend(w.now).unwrap();
    let request = w.take(&mut a);
    let forged = tenure_core::StoreReply::Permit(tenure_core::PermitAnswer { fence: None, permits: 3 });
    let events = w.answer_with(&mut a, &request, Ok(forged));
    assert!(matches!(events[0], LockEvent::Lost { .. }), "{events:?}");
    assert!(matches!(events[1], LockEvent::Failed(Error::Settings(_))), "{events:?}");
    assert!(!a.is_held(w.now) && a.is_quiescent());
}
