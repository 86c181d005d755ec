//! `Lock` behaviours (spec §8.2, §8.3, DESIGN §4).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use futures_lite::future;
use tenure::{BackendErrorKind, Error, MemoryBackend, Runtime};

use crate::support::{Faulty, Promoted, eventually, eventually_async, lock, ms, sleep};
use tenure::backend::LockCalls;

pub async fn lock_key_is_prefixed_and_the_raw_name_stays_free<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let lock = lock(&rt, backend.clone(), "cart", ms(1000));
    let guard = lock.acquire().await.unwrap();
    assert!(LockCalls::locked(&backend, "lock:cart").await.unwrap());
    assert!(!LockCalls::locked(&backend, "cart").await.unwrap(), "the raw name is not locked");
    guard.release().await.unwrap();
}

pub async fn lock_acquire_release_and_handle<R: Runtime>(rt: R) {
    let lock = lock(&rt, MemoryBackend::new(), "cart", ms(1000));
    assert!(!lock.locked().await.unwrap());
    let guard = lock.acquire().await.unwrap();
    assert!(lock.locked().await.unwrap(), "locked inside");
    let handle = guard.handle().clone();
    assert_eq!(handle.name.as_str(), "cart");
    assert!(handle.fencing_token.get() >= 1);
    assert!(handle.token.as_str().starts_with(&format!("{}:task:", lock.config().worker())));
    assert!(guard.is_valid());
    guard.release().await.unwrap();
    assert!(!lock.locked().await.unwrap(), "free after");
}

pub async fn lock_owned_only_for_the_holder<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let a = lock(&rt, backend.clone(), "cart", ms(1000));
    let b = lock(&rt, backend, "cart", ms(1000));
    let guard = a.acquire().await.unwrap();
    assert!(guard.owned().await.unwrap());
    assert!(!b.holder().owned().await.unwrap(), "another worker does not own it");
    assert!(!a.holder().owned().await.unwrap(), "nor does another holder of the same lock");
    guard.release().await.unwrap();
}

pub async fn lock_nowait_would_block_when_held<R: Runtime>(rt: R) {
    let lock = lock(&rt, MemoryBackend::new(), "cart", ms(1000));
    let guard = lock.acquire_nowait().await.unwrap();
    let err = lock.acquire_nowait().await.unwrap_err();
    assert!(err.is_would_block() && !err.is_timeout(), "{err}");
    assert!(err.to_string().contains("cart"));
    guard.release().await.unwrap();
    lock.acquire_nowait().await.unwrap().release().await.unwrap();
}

pub async fn lock_waiter_takes_over_after_expiry_with_a_greater_fence<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let a = lock(&rt, backend.clone(), "cart", ms(30));
    let b = lock(&rt, backend, "cart", ms(1000));
    // A holder that never releases: its lease runs out after 30 ms.
    let stuck = a.holder();
    let first = stuck.acquire(None).await.unwrap().fencing_token;
    let guard = b.acquire_timeout(ms(2000)).await.unwrap();
    assert!(guard.fencing_token() > first);
    assert!(!stuck.is_held(), "the expired holder no longer believes it holds");
    guard.release().await.unwrap();
}

pub async fn lock_fence_climbs_across_release<R: Runtime>(rt: R) {
    let lock = lock(&rt, MemoryBackend::new(), "cart", ms(1000));
    let mut last = 0;
    for _ in 0..5 {
        let guard = lock.acquire().await.unwrap();
        assert!(guard.fencing_token().get() > last);
        last = guard.fencing_token().get();
        guard.release().await.unwrap();
    }
}

pub async fn lock_release_of_an_expired_lock_is_not_owned<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let a = lock(&rt, backend.clone(), "cart", ms(20));
    let b = lock(&rt, backend, "cart", ms(1000));
    let guard = a.acquire().await.unwrap();
    let taken = b.acquire_timeout(ms(2000)).await.unwrap();
    let err = guard.release().await.unwrap_err();
    assert!(err.is_not_owned() && !err.is_release(), "{err}");
    assert!(taken.owned().await.unwrap(), "the new holder keeps it");
    taken.release().await.unwrap();
}

pub async fn lock_nested_acquire_on_a_holder_is_reentrant<R: Runtime>(rt: R) {
    let lock = lock(&rt, MemoryBackend::new(), "cart", ms(1000));
    let holder = lock.holder();
    holder.acquire(None).await.unwrap();
    assert!(holder.acquire(None).await.unwrap_err().is_reentrant());
    assert!(holder.acquire_nowait().await.unwrap_err().is_reentrant());
    holder.release().await.unwrap();
    holder.acquire_nowait().await.unwrap();
    holder.release().await.unwrap();
    assert!(holder.release().await.unwrap_err().is_not_owned(), "a second release");
}

pub async fn lock_timeout_is_a_lock_timeout_error<R: Runtime>(rt: R) {
    let lock = lock(&rt, MemoryBackend::new(), "cart", ms(5000));
    let guard = lock.acquire().await.unwrap();
    let err = lock.acquire_timeout(ms(10)).await.unwrap_err();
    assert!(err.is_timeout() && err.is_would_block(), "{err}");
    assert_eq!(err, Error::Timeout { name: "cart".into(), timeout: ms(10) });
    assert_eq!(err.to_string(), "Lock 'cart' not acquired within 0.01s");
    guard.release().await.unwrap();
}

pub async fn lock_timeout_succeeds_when_the_blocker_expires_first<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let blocker = lock(&rt, backend.clone(), "cart", ms(30));
    let waiter = lock(&rt, backend, "cart", ms(1000));
    blocker.holder().acquire(None).await.unwrap();
    let guard = waiter.acquire_timeout(ms(500)).await.unwrap();
    guard.release().await.unwrap();
}

pub async fn lock_extend_keeps_the_fence_and_a_lost_lease_is_not_owned<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let a = lock(&rt, backend.clone(), "cart", ms(40));
    let b = lock(&rt, backend, "cart", ms(1000));
    let mut guard = a.acquire().await.unwrap();
    let fence = guard.fencing_token();
    let handle = guard.extend().await.unwrap().clone();
    assert_eq!((handle.fencing_token, handle.name.as_str()), (fence, "cart"));
    let taken = b.acquire_timeout(ms(2000)).await.unwrap();
    assert!(guard.extend().await.unwrap_err().is_not_owned());
    assert!(a.holder().extend().await.unwrap_err().is_not_owned(), "a holder that never acquired");
    taken.release().await.unwrap();
}

pub async fn lock_backend_failures_map_to_operation_errors<R: Runtime>(rt: R) {
    let backend = Faulty::default();
    let lock = lock(&rt, backend.clone(), "cart", ms(1000));
    let mut guard = lock.acquire().await.unwrap();
    backend.fail();
    assert!(matches!(lock.acquire_nowait().await, Err(Error::Acquire { .. })));
    assert!(matches!(lock.locked().await, Err(Error::LockedCheck { .. })));
    assert!(matches!(guard.owned().await, Err(Error::OwnedCheck { .. })));
    assert!(matches!(guard.extend().await, Err(Error::Extend { .. })));
    let err = guard.release().await.unwrap_err();
    assert!(
        matches!(&err, Error::Release { name, cause } if name == "cart" && cause.kind() == BackendErrorKind::Unavailable)
    );
    backend.heal();
}

pub async fn lock_frozen_backend_fails_within_backend_timeout<R: Runtime>(rt: R) {
    let backend = Faulty::default();
    let lock = tenure::Lock::builder("cart", rt.clone())
        .backend(backend.clone())
        .backend_timeout(ms(50))
        .env_load(false)
        .build()
        .unwrap();
    backend.freeze();
    let started = rt.now();
    let err = lock.acquire().await.unwrap_err();
    let took = rt.now().saturating_duration_since(started);
    assert!(matches!(&err, Error::Acquire { cause, .. } if cause.kind() == BackendErrorKind::Timeout), "{err}");
    assert!(took >= ms(50) && took < ms(2000), "took {took:?}");
    assert!(matches!(lock.locked().await, Err(Error::LockedCheck { .. })));
    backend.heal();
}

pub async fn lock_dropped_guard_releases<R: Runtime>(rt: R) {
    let lock = lock(&rt, MemoryBackend::new(), "cart", ms(60_000));
    let guard = lock.acquire().await.unwrap();
    drop(guard);
    let probe = lock.clone();
    eventually_async(&rt, "the dropped guard's release", || {
        let probe = probe.clone();
        async move { !probe.locked().await.unwrap() }
    })
    .await;
}

pub async fn lock_lost_completes_when_the_lease_runs_out<R: Runtime>(rt: R) {
    let lock = lock(&rt, MemoryBackend::new(), "cart", ms(30));
    let guard = lock.acquire().await.unwrap();
    let started = rt.now();
    guard.lost().await;
    assert!(!guard.is_valid());
    let after = rt.now().saturating_duration_since(started);
    assert!(after >= ms(29) && after < ms(2000), "{after:?}");
    // Local belief ends before the store's lease (1 % drift allowance); once that is over too:
    sleep(&rt, ms(5)).await;
    assert!(guard.release().await.unwrap_err().is_not_owned());
}

pub async fn lock_dropped_acquire_leaves_nothing_held<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let lock = lock(&rt, backend, "cart", ms(1000));
    let guard = lock.acquire().await.unwrap();
    // A waiter gives up (its future is dropped) while the lock is held.
    let gave_up = future::or(async { Some(lock.acquire().await) }, async {
        sleep(&rt, ms(20)).await;
        None
    })
    .await;
    assert!(gave_up.is_none());
    guard.release().await.unwrap();
    assert!(!lock.locked().await.unwrap(), "the dropped waiter holds nothing");
    lock.acquire_nowait().await.unwrap().release().await.unwrap();
}

pub async fn lock_release_wakes_a_waiter_at_once<R: Runtime>(rt: R) {
    // With a 30 s retry interval only the push wake-up can hand the lock over in time.
    let lock = tenure::Lock::builder("cart", rt.clone())
        .backend(MemoryBackend::new())
        .retry_interval(Duration::from_secs(30))
        .env_load(false)
        .build()
        .unwrap();
    let guard = lock.acquire().await.unwrap();
    let acquired = Arc::new(AtomicU64::new(0));
    let (waiter, flag) = (lock.clone(), acquired.clone());
    rt.spawn(async move {
        let guard = waiter.acquire().await.unwrap();
        flag.store(guard.fencing_token().get(), Ordering::SeqCst);
        guard.release().await.unwrap();
    });
    sleep(&rt, ms(10)).await;
    guard.release().await.unwrap();
    eventually(&rt, "the waiter acquired", || acquired.load(Ordering::SeqCst) == 2).await;
}

pub async fn lock_reconfigure_applies_to_the_next_acquire_and_keeps_the_worker<R: Runtime>(rt: R) {
    let lock = lock(&rt, MemoryBackend::new(), "cart", ms(1000));
    let shorter =
        lock.config().to_builder().lease_duration(ms(30)).build(&mut tenure::core::SplitMix64::new(1)).unwrap();
    lock.reconfigure(shorter.clone()).unwrap();
    lock.reconfigure(shorter).unwrap(); // equal: a no-op
    let guard = lock.acquire().await.unwrap();
    guard.lost().await; // the 30 ms lease runs out
    let other_worker = shorter_worker(&lock);
    let err = lock.reconfigure(other_worker).unwrap_err();
    assert!(err.is_settings() && err.to_string().contains("worker is immutable"), "{err}");
    assert_eq!(lock.config().lease_duration(), ms(30), "the old configuration stays");
}

fn shorter_worker<R: Runtime>(lock: &tenure::Lock<R>) -> tenure::LockConfig {
    let worker = tenure::WorkerId::new("another-worker").unwrap();
    lock.config().to_builder().worker(worker).build(&mut tenure::core::SplitMix64::new(2)).unwrap()
}

pub async fn lock_contenders_never_overlap<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let inside = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    for worker in 0..8 {
        let lock = lock(&rt, backend.clone(), "shared", ms(1000));
        let (inside, done, rt2) = (inside.clone(), done.clone(), rt.clone());
        rt.spawn(async move {
            let mut last = 0;
            for _ in 0..10 {
                let guard = lock.acquire().await.unwrap();
                assert!(guard.fencing_token().get() > last, "worker {worker}: fencing token went down");
                last = guard.fencing_token().get();
                assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders at once");
                sleep(&rt2, Duration::from_micros(200)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
                guard.release().await.unwrap();
            }
            done.fetch_add(1, Ordering::SeqCst);
        });
    }
    eventually(&rt, "8 workers × 10 critical sections", || done.load(Ordering::SeqCst) == 8).await;
}

pub async fn lock_cancelled_acquire_releases_a_grant_that_lands_late<R: Runtime>(rt: R) {
    let backend = Faulty::default();
    let lock = lock(&rt, backend.clone(), "cart", ms(60_000));
    // Wide margins, so that a loaded machine cannot reorder the store's answer and the give-up.
    backend.slow(&rt, ms(400));
    let gave_up = future::or(async { Some(lock.acquire().await) }, async {
        sleep(&rt, ms(10)).await;
        None
    })
    .await;
    assert!(gave_up.is_none(), "the acquire was still in flight");
    // The store applies the acquire at 400 ms; the abandoned holder releases it when the grant lands.
    let memory = backend.memory.clone();
    eventually_async(&rt, "the late grant released", || {
        let memory = memory.clone();
        async move { !LockCalls::locked(&memory, "lock:cart").await.unwrap() && memory.lock_names() == 1 }
    })
    .await;
    backend.heal();
    let fence = backend.memory.last_fence("lock:cart");
    assert_eq!(fence.map(tenure::FencingToken::get), Some(1), "one grant, the late one");
    match lock.acquire_nowait().await {
        Ok(guard) => guard.release().await.unwrap(),
        Err(e) => panic!("{e}: last fence {:?}, now {:?}", backend.memory.last_fence("lock:cart"), rt.now()),
    }
}

pub async fn lock_retry_after_a_backend_timeout_is_not_disturbed_by_the_late_answer<R: Runtime>(rt: R) {
    let backend = Faulty::default();
    let lock = tenure::Lock::builder("cart", rt.clone())
        .backend(backend.clone())
        .backend_timeout(ms(20))
        .env_load(false)
        .build()
        .unwrap();
    backend.slow(&rt, ms(300));
    let err = lock.acquire().await.unwrap_err();
    assert!(matches!(&err, Error::Acquire { cause, .. } if cause.kind() == BackendErrorKind::Timeout), "{err}");
    // The first attempt lands at 300 ms; meanwhile the store answers at once again.
    backend.heal();
    let guard = lock.acquire().await.unwrap();
    sleep(&rt, ms(320)).await; // past the late answer of the first attempt
    assert!(guard.is_valid() && guard.owned().await.unwrap(), "the late answer changed nothing");
    guard.release().await.unwrap();
}

pub async fn lock_second_acquire_on_the_same_lock_waits_instead_of_nesting<R: Runtime>(rt: R) {
    let lock = lock(&rt, MemoryBackend::new(), "cart", ms(1000));
    let guard = lock.acquire().await.unwrap();
    let err = lock.acquire_timeout(ms(20)).await.unwrap_err();
    assert!(err.is_timeout() && !err.is_reentrant(), "another contender, not a nested one: {err}");
    guard.release().await.unwrap();
}

pub async fn lock_dropping_a_guard_stops_belief_at_once<R: Runtime>(rt: R) {
    let lock = lock(&rt, MemoryBackend::new(), "cart", ms(60_000));
    let guard = lock.acquire().await.unwrap();
    let holder = guard.holder().clone();
    let lost = guard.lost();
    drop(guard);
    assert!(!holder.is_held(), "released when dropped, before the store answers");
    lost.await;
}

pub async fn lock_a_fence_below_one_its_holders_saw_is_refused_whichever_holder_asks<R: Runtime>(rt: R) {
    // A failover to a replica that missed the last grants (Redis without min_replicas): the
    // promoted store hands out tokens again from 1. A lock that saw nothing (another process)
    // takes them; the lock that saw 3 refuses them (and gives each grant back), on a fresh holder
    // and on a nowait acquire alike, a token equal to one it saw too; above 3 it holds again.
    let store = Promoted::default();
    let lock = lock(&rt, store.clone(), "cart", ms(60_000));
    for _ in 0..3 {
        lock.acquire().await.unwrap().release().await.unwrap();
    }
    store.fail_over();
    let other = crate::support::lock(&rt, store.clone(), "cart", ms(60_000));
    let guard = other.acquire().await.unwrap();
    assert_eq!(guard.fencing_token().get(), 1, "the other lock saw nothing");
    guard.release().await.unwrap();
    let regressed = |result: Result<(), Error>, message: &str| match result {
        Err(Error::Acquire { cause, .. }) => {
            cause.kind() == BackendErrorKind::FenceRegression && cause.message() == message
        }
        _ => false,
    };
    let fresh = lock.holder().acquire(None).await.map(drop);
    let below = "the store answered fencing token 2 after 3 for the same lock";
    assert!(regressed(fresh.clone(), below), "a fresh holder: {fresh:?}");
    let nowait = lock.acquire_nowait().await.map(drop);
    let again = "the store answered fencing token 3 again for the same lock (it was granted before)";
    assert!(regressed(nowait.clone(), again), "a nowait acquire: {nowait:?}");
    assert!(!lock.locked().await.unwrap(), "the refused grants were given back");
    let guard = lock.acquire().await.unwrap();
    assert_eq!(guard.fencing_token().get(), 4);
    guard.release().await.unwrap();
    // A nested acquire on a holder that holds changes nothing of its lease: it renews its token.
    let holder = lock.holder();
    let held = holder.acquire(None).await.unwrap().fencing_token;
    assert!(matches!(holder.acquire(None).await, Err(Error::Reentrant { .. })));
    assert_eq!(holder.extend().await.unwrap().fencing_token, held);
    holder.release().await.unwrap();
}

pub async fn lock_every_acquisition_takes_a_fresh_token<R: Runtime>(rt: R) {
    // A request of an earlier acquisition (a release that timed out, a retried one) may still
    // reach the store; under a new token it cannot free the current lease (tests/sim seed 275).
    let backend = MemoryBackend::new();
    let lock = lock(&rt, backend.clone(), "cart", ms(60_000));
    let first = lock.acquire().await.unwrap();
    let old = first.handle().token.clone();
    first.release().await.unwrap();
    let second = lock.acquire().await.unwrap();
    assert_ne!(second.handle().token, old, "the pooled holder took a new token");
    assert!(!LockCalls::release(&backend, "lock:cart", old.as_str()).await.unwrap(), "a stale release misses");
    assert!(second.owned().await.unwrap());
    second.release().await.unwrap();

    let holder = lock.holder();
    holder.acquire(None).await.unwrap();
    let old = holder.token();
    holder.release().await.unwrap();
    holder.acquire_nowait().await.unwrap();
    assert_ne!(holder.token(), old, "a holder's next acquisition too");
    holder.release().await.unwrap();
}
