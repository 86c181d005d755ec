//! What the front ends share below their bindings (`tenure::binding`): the lease slot a guard
//! object holds, and the options every binding maps its own settings onto.

use std::time::Duration;

use tenure::binding::{ElectionOptions, LeaseSlot, LockOptions, Spelling, TaskLockOptions, Unit};
use tenure::{KeepAliveEnd, LeaderElection, Lock, MemoryBackend, Runtime, TaskLock};

use crate::rw::rw;
use crate::support::{eventually_async, lock, ms};

pub async fn binding_slot_release_beats_the_loss_its_stop_shows<R: Runtime>(rt: R) {
    let lock = lock(&rt, MemoryBackend::new(), "cart", ms(2000));
    let slot = LeaseSlot::new(lock.acquire().await.unwrap());
    slot.keep_alive(Duration::MAX, None).unwrap();
    assert!(slot.keeping() && slot.is_valid() && slot.valid_until().is_some());
    let lost = slot.lost().unwrap();
    slot.release().await.unwrap();
    assert!(!lost.await, "a release is not a loss");
    assert!(!slot.is_valid() && slot.valid_until().is_none());
    assert!(slot.release().await.unwrap_err().is_not_owned(), "a second release");
    assert!(!slot.lost().unwrap().await, "lost() of a released slot says released");
    assert!(!lock.locked().await.unwrap());
}

pub async fn binding_slot_loss_at_the_maximum_hold_is_a_lost_error_with_its_cause<R: Runtime>(rt: R) {
    let lock = lock(&rt, MemoryBackend::new(), "cart", ms(2000));
    let slot = LeaseSlot::new(lock.acquire().await.unwrap());
    slot.keep_alive(ms(100), None).unwrap();
    assert!(slot.lost().unwrap().await, "the maximum hold ends the lease");
    assert_eq!(slot.ended(), Some(KeepAliveEnd::MaxHold));
    let lost = slot.lost_error();
    assert_eq!((lost.code(), lost.name(), lost.loss_cause()), ("LOCK_LOST", Some("cart"), Some(KeepAliveEnd::MaxHold)));
    assert!(lost.is_not_owned(), "a lost lease is not owned: {lost}");
    // The keep-alive gives the lease back at its maximum hold, in the background.
    eventually_async(&rt, "the lock is free after the maximum hold", || async { !lock.locked().await.unwrap() }).await;
    assert!(slot.release().await.unwrap_err().is_not_owned());
}

pub async fn binding_slot_refuses_a_warning_threshold_and_keeps_the_guard_as_it_was<R: Runtime>(rt: R) {
    let lock = lock(&rt, MemoryBackend::new(), "cart", ms(2000));
    let slot = LeaseSlot::new(lock.acquire().await.unwrap());
    assert_eq!(slot.warning().await, None, "no warning from a lease nobody keeps alive");
    let refused = slot.keep_alive(Duration::MAX, Some(ms(2000))).unwrap_err();
    assert_eq!(refused.field(), Some("warn_below"), "{refused}");
    assert!(!slot.keeping() && slot.is_valid(), "the guard holds as before, not kept");
    slot.keep_alive(Duration::MAX, Some(ms(500))).unwrap();
    assert!(slot.keeping());
    // A second call keeps the first keep-alive; another threshold is refused (set at the start).
    slot.keep_alive(Duration::MAX, None).unwrap();
    let refused = slot.keep_alive(Duration::MAX, Some(ms(400))).unwrap_err();
    assert_eq!(refused.field(), Some("warn_below"), "{refused}");
    assert!(slot.keeping());
    let warning = slot.warning();
    slot.release().await.unwrap();
    assert_eq!(warning.await, None, "a release ends the warnings");
    assert!(!lock.locked().await.unwrap());
}

pub async fn binding_slot_tells_its_loop_a_warning_given_while_the_callback_ran<R: Runtime>(rt: R) {
    let store = crate::support::Faulty::default();
    let lock = lock(&rt, store.clone(), "cart", ms(1500));
    let slot = LeaseSlot::new(lock.acquire().await.unwrap());
    slot.keep_alive(Duration::MAX, None).unwrap();
    store.fail();
    assert!(slot.next_warning().await.is_some(), "the first warning");
    // The "callback" runs long: the store heals, a renewal gets through, and a new run of failures
    // warns before the loop asks again.
    store.heal();
    let renewed = || slot.valid_until().is_some_and(|until| until > rt.now() + ms(1000));
    crate::support::eventually(&rt, "a renewal gets through", renewed).await;
    let missed = slot.warning();
    store.fail();
    assert!(missed.await.is_some(), "a user's own wait sees the second warning");
    let told = futures_lite::future::or(slot.next_warning(), async {
        crate::support::sleep(&rt, ms(100)).await;
        None
    });
    assert!(told.await.is_some(), "the loop is told the warning it did not see, at once");
    store.heal();
    slot.release().await.unwrap();
    assert_eq!(slot.next_warning().await, None, "none after the release");
}

pub async fn binding_slot_refuses_a_downgrade_while_kept_and_downgrades_otherwise<R: Runtime>(rt: R) {
    let doc = rw(&rt, MemoryBackend::new(), "doc", ms(5000));
    let slot = LeaseSlot::new(doc.write().acquire().await.unwrap().into_lock_guard());
    let fence = slot.fencing_token();
    slot.keep_alive(Duration::MAX, None).unwrap();
    let refused = slot.downgrade().await.unwrap_err();
    assert!(refused.is_reentrant() && refused.code() == "LOCK_BUSY", "{refused}");
    slot.release().await.unwrap();
    let slot = LeaseSlot::new(doc.write().acquire().await.unwrap().into_lock_guard());
    assert!(slot.fencing_token() > fence);
    let generation = slot.downgrade().await.unwrap();
    assert_eq!(generation, slot.fencing_token(), "the read lease reads the write");
    assert!(!doc.state().await.unwrap().writing, "downgraded");
    slot.release().await.unwrap();
}

pub async fn binding_options_apply_to_every_builder_and_name_a_bad_setting_as_spelt<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let given = LockOptions::from_numbers(Unit::Millis, Spelling::Camel, [Some(1500.0), Some(20.0), None]).unwrap();
    let options = LockOptions { worker: Some("w1".into()), retry_jitter: Some(0.3), env_load: Some(false), ..given };
    let lock = options.apply(Lock::builder("cart", rt.clone()).backend(backend.clone())).unwrap().build().unwrap();
    let c = lock.config();
    assert_eq!((c.worker().as_str(), c.lease_duration(), c.retry_interval()), ("w1", ms(1500), ms(20)));
    assert_eq!(c.retry_jitter(), 0.3);
    let doc = options.apply(tenure::ReadWriteLock::builder("doc", rt.clone()).backend(backend.clone())).unwrap();
    assert_eq!(doc.build().unwrap().config().lease_duration(), ms(1500));
    let again = LockOptions { lease_duration: Some(ms(4000)), ..LockOptions::default() }.reconfigure(&c).unwrap();
    assert_eq!((again.worker().as_str(), again.lease_duration()), ("w1", ms(4000)));

    let given = [Some(10.0), Some(8.0), None, None, None];
    let election = ElectionOptions::from_numbers(Unit::Seconds, Spelling::Snake, given).unwrap();
    let election = ElectionOptions { env_load: Some(false), ..election };
    let built = election.apply(LeaderElection::builder("svc", rt.clone()).backend(backend.clone())).unwrap();
    let c = built.build().unwrap().config();
    assert_eq!((c.lease_duration(), c.renew_deadline()), (Duration::from_secs(10), Duration::from_secs(8)));
    let task = TaskLockOptions { env_load: Some(false), ..TaskLockOptions::default() };
    let task = task.apply(TaskLock::builder("job", rt.clone()).backend(backend)).unwrap().build().unwrap();
    assert!(task.config().lease_duration() > Duration::ZERO);

    let bad = TaskLockOptions::from_numbers(Unit::Millis, Spelling::Camel, [Some(0.5), None, None]).unwrap_err();
    assert_eq!(bad.field(), Some("minHoldDuration"), "{bad}");
    let bad = LockOptions { worker: Some(String::new()), ..LockOptions::default() };
    assert!(bad.apply(Lock::builder("cart", rt.clone())).is_err(), "an empty worker");
}
