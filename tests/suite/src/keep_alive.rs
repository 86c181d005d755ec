//! Leases kept alive by the driver (DESIGN §4.8): renewed every third of the lease, retried while
//! valid, released at the maximum hold, lost the moment validity runs out unconfirmed.

use std::time::Duration;

use futures_lite::future;
use tenure::{KeepAlive, KeepAliveEnd, MemoryBackend, Runtime};

use crate::support::{Faulty, eventually, eventually_async, lock, lock_bounded, ms, sleep, task_lock};
use tenure::backend::LockCalls;

/// The longest a test keeps anything: far beyond every bound it checks.
const NO_BOUND: Duration = Duration::from_secs(3600);

pub async fn keep_alive_holds_a_lock_three_leases_with_one_fence<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let lock = lock(&rt, backend.clone(), "cart", ms(60));
    let other = crate::support::lock(&rt, backend.clone(), "cart", ms(60));
    let kept = lock.acquire().await.unwrap().keep_alive(NO_BOUND);
    let fence = kept.fencing_token();
    let first = kept.valid_until().unwrap();
    sleep(&rt, ms(200)).await;
    assert!(kept.is_valid(), "kept past three leases");
    assert!(kept.valid_until().unwrap() > first, "the validity moved forward with the renewals");
    assert_eq!(kept.fencing_token(), fence);
    assert_eq!(backend.last_fence("lock:cart"), Some(fence), "no new lease was granted in between");
    assert!(other.acquire_nowait().await.unwrap_err().is_would_block(), "nobody else got it");
    assert!(kept.guard().owned().await.unwrap());
    assert_eq!(kept.ended(), None);
    kept.stop().release().await.unwrap();
    assert!(!lock.locked().await.unwrap());
}

pub async fn keep_alive_loses_a_frozen_lease_before_another_holder_can_take_it<R: Runtime>(rt: R) {
    let store = Faulty::default();
    // Leases of 2 s: the store's lease outlasts the holder's belief by 1 %, 20 ms.
    let lock = lock(&rt, store.clone(), "cart", ms(2000));
    let kept = lock.acquire().await.unwrap().keep_alive(NO_BOUND);
    store.freeze();
    let believed_until = kept.valid_until().unwrap();
    let lost = kept.lost();
    // A contender straight on the store (not frozen for it) takes the lock as soon as it can.
    let contender = crate::support::lock(&rt, store.memory.clone(), "cart", ms(2000));
    let taken = async {
        let guard = contender.acquire().await.unwrap();
        (rt.now(), guard)
    };
    let (lost_at, taken) = future::zip(
        async {
            lost.await;
            rt.now()
        },
        taken,
    )
    .await;
    let (taken_at, guard) = taken;
    assert!(lost_at >= believed_until, "lost() completed before the validity ran out");
    assert!(taken_at > believed_until, "another holder took the lease while this one could count on it");
    assert!(lost_at.saturating_duration_since(believed_until) < ms(1000), "lost() came far too late");
    assert!(!kept.is_valid());
    // The renewal sent a third into the lease was still unanswered: the store was unreachable.
    let unreachable = || kept.ended() == Some(KeepAliveEnd::Unreachable);
    eventually(&rt, "the renewals stop, seeing the store unreachable", unreachable).await;
    store.heal();
    guard.release().await.unwrap();
    assert!(kept.stop().release().await.unwrap_err().is_not_owned());
}

pub async fn keep_alive_retries_a_failed_renewal_while_the_lease_is_valid<R: Runtime>(rt: R) {
    let store = Faulty::default();
    let lock = lock(&rt, store.clone(), "cart", ms(300));
    let kept = lock.acquire().await.unwrap().keep_alive(NO_BOUND);
    let fence = kept.fencing_token();
    // Renewals fail for a while — less than the validity left — then the store heals.
    sleep(&rt, ms(80)).await;
    store.fail();
    sleep(&rt, ms(120)).await;
    store.heal();
    sleep(&rt, ms(400)).await;
    assert!(kept.is_valid(), "a retried renewal kept the lease");
    assert_eq!((kept.fencing_token(), kept.ended()), (fence, None));
    kept.stop().release().await.unwrap();
}

pub async fn keep_alive_warns_once_per_run_of_failed_renewals_before_the_loss<R: Runtime>(rt: R) {
    let store = Faulty::default();
    let lock = lock(&rt, store.clone(), "cart", ms(1500));
    let kept = lock.acquire().await.unwrap().keep_alive(NO_BOUND);
    let warning = kept.warning();
    // Renewals fail: retried every 150 ms while valid; once less than a third (500 ms) is left,
    // the warning says how much.
    store.fail();
    let left = warning.await.expect("a warning before the loss");
    assert!(left <= ms(500) && left > ms(0), "warned with {left:?} left");
    assert!(kept.is_valid() && kept.ended().is_none(), "warned before the loss, not with it");
    // The store comes back before the validity runs out: kept, one fence, and the next run of
    // failures warns again.
    store.heal();
    eventually(&rt, "a renewal gets through", || kept.valid_until().is_some_and(|until| until > rt.now() + ms(1000)))
        .await;
    let fence = kept.fencing_token();
    let again = kept.warning();
    store.fail();
    assert!(again.await.is_some(), "a new run of failures warns again");
    kept.lost().await;
    eventually(&rt, "the renewals stop", || kept.ended().is_some()).await;
    assert_eq!(kept.ended(), Some(KeepAliveEnd::Unreachable), "lost while renewals failed: unreachable");
    assert_eq!(kept.warning().await, None, "no warning after the end");
    assert_eq!(kept.fencing_token(), fence);
    store.heal();
    let _ = kept.stop().release().await;
}

pub async fn keep_alive_warns_while_a_renewal_hangs<R: Runtime>(rt: R) {
    let store = Faulty::default();
    // A backend timeout longer than the lease: the renewal hangs until the validity runs out.
    let lock = lock_bounded(&rt, store.clone(), "cart", ms(1500), ms(5000));
    let guard = lock.acquire().await.unwrap();
    // Frozen: the renewal sent at ~500 ms goes unanswered; the warning comes at its time (~800
    // ms, 700 ms of validity left), not only when an answer (or none) comes back.
    store.freeze();
    let kept = KeepAlive::with_warning(guard, NO_BOUND, ms(700)).map_err(|(e, _)| e).unwrap();
    let left = kept.warning().await.expect("a warning while the renewal hangs");
    assert!(left <= ms(700) && left > ms(300), "warned on time, with {left:?} left");
    assert!(kept.is_valid(), "before the loss");
    kept.lost().await;
    eventually(&rt, "the renewals stop", || kept.ended().is_some()).await;
    assert_eq!(kept.ended(), Some(KeepAliveEnd::Unreachable));
    store.heal();
    let _ = kept.stop().release().await;
}

pub async fn keep_alive_refuses_a_warning_threshold_outside_the_lease<R: Runtime>(rt: R) {
    let lock = lock(&rt, MemoryBackend::new(), "cart", ms(600));
    let mut guard = lock.acquire().await.unwrap();
    for bad in [ms(0), ms(300), ms(600), ms(5000)] {
        let (error, back) = KeepAlive::with_warning(guard, NO_BOUND, bad).unwrap_err();
        assert_eq!(error.field(), Some("warn_below"), "{error}");
        assert!(back.is_valid(), "the guard comes back holding");
        guard = back;
    }
    let kept = KeepAlive::with_warning(guard, NO_BOUND, ms(100)).map_err(|(e, _)| e).unwrap();
    kept.stop().release().await.unwrap();
}

pub async fn keep_alive_a_revoked_task_run_says_so_and_never_changes_its_answer<R: Runtime>(rt: R) {
    use tenure::core::{Key, RevokeReason, StoreOp, StoreReply};
    let backend = MemoryBackend::new();
    let task = task_lock(&rt, backend.clone(), "nightly", ms(10), ms(600));
    let kept = task.enter().await.unwrap().keep_alive(NO_BOUND);
    let reason = RevokeReason::new("stuck").unwrap();
    let op = StoreOp::LockRevoke { key: Key::parse("tasklock:nightly").unwrap(), reason: reason.clone() };
    assert!(matches!(tenure::backend::LockBackend::execute(&backend, op).await, Ok(StoreReply::Revocation(Some(_)))));
    kept.lost().await;
    let told = kept.ended();
    assert_eq!(told, Some(KeepAliveEnd::Revoked(reason)), "told at once");
    // The renewal task says its end later: the same one (it once said `Lost` here).
    sleep(&rt, ms(300)).await;
    assert_eq!(kept.ended(), told);
    assert_eq!(kept.loss_cause(), told.unwrap());
}

pub async fn keep_alive_releases_at_the_maximum_hold<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let lock = lock(&rt, backend.clone(), "cart", ms(60));
    let started = rt.now();
    let kept = lock.acquire().await.unwrap().keep_alive(ms(150));
    kept.lost().await;
    assert!(rt.now().saturating_duration_since(started) >= ms(150), "released before the maximum hold");
    assert_eq!(kept.ended(), Some(KeepAliveEnd::MaxHold), "the reason is said when the lease goes");
    eventually_async(&rt, "released in the store", || async {
        !LockCalls::locked(&backend, "lock:cart").await.unwrap()
    })
    .await;
    assert!(kept.stop().release().await.unwrap_err().is_not_owned());
}

pub async fn keep_alive_dropped_stops_renewing_and_releases<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let lock = lock(&rt, backend.clone(), "cart", ms(60));
    let kept = lock.acquire().await.unwrap().keep_alive(NO_BOUND);
    let fence = kept.fencing_token();
    sleep(&rt, ms(30)).await;
    drop(kept);
    eventually_async(&rt, "the dropped keep-alive releases", || async { !lock.locked().await.unwrap() }).await;
    let next = lock.acquire().await.unwrap();
    assert!(next.fencing_token() > fence);
    next.release().await.unwrap();
}

pub async fn keep_alive_keeps_a_task_lock_run_past_its_lease<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let task = task_lock(&rt, backend.clone(), "nightly", ms(10), ms(60));
    let kept = task.enter().await.unwrap().keep_alive(NO_BOUND);
    sleep(&rt, ms(200)).await;
    assert!(kept.is_valid() && kept.guard().is_valid(), "the run outlived three leases");
    assert!(task_lock(&rt, backend, "nightly", ms(10), ms(60)).enter().await.unwrap_err().is_would_block());
    // Without the keep-alive this exit would be NotOwned (the job outlived its lease).
    kept.stop().exit().await.unwrap();
    let started = rt.now();
    let kept = task.enter().await.unwrap().keep_alive(ms(100));
    kept.lost().await;
    assert!(rt.now().saturating_duration_since(started) >= ms(100));
    assert_eq!(kept.ended(), Some(KeepAliveEnd::MaxHold));
    eventually(&rt, "the run ends at its maximum hold", || !task.is_held()).await;
}

pub async fn keep_alive_a_renewal_confirmed_after_the_validity_does_not_revive_it<R: Runtime>(rt: R) {
    let store = Faulty::default();
    let lock = lock(&rt, store.clone(), "cart", ms(100));
    let other = crate::support::lock(&rt, store.memory.clone(), "cart", ms(100));
    let kept = lock.acquire().await.unwrap().keep_alive(NO_BOUND);
    // The next renewal (due a third into the lease, at ~33 ms) is applied at once but answered
    // only after the validity it renews ran out (~99 ms), though before the one it brings
    // (~132 ms) and within the backend timeout.
    store.late(&rt, ms(85));
    kept.lost().await;
    store.heal();
    let unreachable = || kept.ended() == Some(KeepAliveEnd::Unreachable);
    eventually(&rt, "the late confirmation ends the renewals", unreachable).await;
    assert!(!kept.is_valid() && kept.valid_until().is_none());
    kept.lost().await; // completes at once from now on
    // Nothing renews the lease any more: another holder gets it once it runs out.
    other.acquire_timeout(ms(1000)).await.unwrap().release().await.unwrap();
}

pub async fn keep_alive_told_it_holds_no_more_after_its_validity_ran_out_ends_as_unreachable<R: Runtime>(rt: R) {
    let store = Faulty::default();
    let lock = lock(&rt, store.clone(), "cart", ms(100));
    let other = crate::support::lock(&rt, store.memory.clone(), "cart", ms(1000));
    let kept = lock.acquire().await.unwrap().keep_alive(NO_BOUND);
    // The next renewal (due at ~33 ms) reaches the store only at ~118 ms, after another holder
    // took the lease that ended at ~100 ms: the store answers that this one holds no more, after
    // its validity ran out (~99 ms). It ran out while the store was too slow to renew it first,
    // and that is what it says.
    store.slow(&rt, ms(85));
    kept.lost().await;
    let taken = other.acquire_timeout(ms(15)).await.expect("free once the lease ended");
    eventually(&rt, "the renewal's answer ends the keep-alive", || kept.ended().is_some()).await;
    assert_eq!(kept.ended(), Some(KeepAliveEnd::Unreachable));
    store.heal();
    taken.release().await.unwrap();
}

pub async fn keep_alive_a_lease_taken_by_another_holder_says_so_the_moment_it_is_lost<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let lock = lock(&rt, backend.clone(), "cart", ms(300));
    let kept = lock.acquire().await.unwrap().keep_alive(NO_BOUND);
    // The store lets the lease go and another holder takes the name: the next renewal (due at
    // ~100 ms, while the lease is still valid) finds it taken.
    let token = kept.guard().holder().token();
    assert!(LockCalls::release(&backend, "lock:cart", token.as_str()).await.unwrap());
    assert!(LockCalls::acquire(&backend, "lock:cart", "thief", ms(60_000)).await.unwrap().is_some());
    kept.lost().await;
    // Whoever wakes on the loss reads its cause at once, before the renewal task (woken by the
    // same answer) has said it: a binding's LockLostError says "lost", not "expired".
    assert_eq!(kept.ended(), Some(KeepAliveEnd::Lost));
    assert!(kept.stop().release().await.unwrap_err().is_not_owned());
}

pub async fn keep_alive_holds_and_ends_a_lease_on_a_sqlite_file<R: Runtime>(rt: R) {
    static FILES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = FILES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let path = std::env::temp_dir().join(format!("tenure-suite-keep-{}-{n}.db", std::process::id()));
    let store = tenure_sqlite::SqliteBackend::open(&path).await.unwrap();
    // Leases long enough for commits that wait on the disk (synchronous=full) under CI's load:
    // at 600 ms a renewal stalled past the lease once while the whole suite ran; and a backend
    // timeout to match (a first commit on a fresh file took over 200 ms once, on a clean clone).
    let lock = lock_bounded(&rt, store.clone(), "cart", ms(1500), ms(1000));
    let other = lock_bounded(&rt, store.clone(), "cart", ms(1500), ms(1000));
    let kept = lock.acquire().await.unwrap().keep_alive(NO_BOUND);
    let fence = kept.fencing_token();
    sleep(&rt, ms(4700)).await;
    assert!(kept.is_valid(), "kept past three leases on the file");
    assert_eq!((kept.fencing_token(), kept.ended()), (fence, None));
    assert!(other.acquire_nowait().await.unwrap_err().is_would_block(), "nobody else got it");
    drop(kept);
    // Checked on the store itself, unbounded: a check queued behind a commit that waits on the
    // disk under load may take longer than the lock's 200 ms backend timeout (it failed in CI).
    let free = || async { !LockCalls::locked(&store, "lock:cart").await.unwrap() };
    eventually_async(&rt, "the dropped keep-alive releases in the file", free).await;
    let kept = lock.acquire().await.unwrap().keep_alive(ms(300));
    kept.lost().await;
    assert_eq!(kept.ended(), Some(KeepAliveEnd::MaxHold));
    eventually_async(&rt, "released at the maximum hold", free).await;
    let next = other.acquire_nowait().await.unwrap();
    assert!(next.fencing_token() > fence);
    next.release().await.unwrap();
    store.close().await.unwrap();
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}
