//! `TaskLock` behaviours (spec §8.5, §8.7).

use tenure::{Error, MemoryBackend, Runtime};

use crate::support::{Faulty, eventually_async, lock, ms, sleep, task_lock};
use tenure::backend::LockCalls;

pub async fn task_lock_key_is_prefixed_and_separate_from_lock<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let task = task_lock(&rt, backend.clone(), "cleanup", ms(1), ms(1000));
    let guard = task.enter().await.unwrap();
    assert!(LockCalls::locked(&backend, "tasklock:cleanup").await.unwrap());
    let plain = lock(&rt, backend, "cleanup", ms(1000));
    plain.acquire_nowait().await.unwrap().release().await.unwrap();
    guard.exit().await.unwrap();
}

pub async fn task_lock_nested_enter_is_reentrant<R: Runtime>(rt: R) {
    let task = task_lock(&rt, MemoryBackend::new(), "cleanup", ms(1), ms(1000));
    let guard = task.enter().await.unwrap();
    assert!(task.enter().await.unwrap_err().is_reentrant());
    assert!(task.clone().enter().await.unwrap_err().is_reentrant(), "clones share the instance");
    guard.exit().await.unwrap();
}

pub async fn task_lock_exit_after_min_hold_releases<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let a = task_lock(&rt, backend.clone(), "cleanup", ms(20), ms(1000));
    let b = task_lock(&rt, backend, "cleanup", ms(20), ms(1000));
    let guard = a.enter().await.unwrap();
    let err = b.enter().await.unwrap_err();
    assert!(err.is_would_block() && err.to_string().starts_with("Task lock not acquired"), "{err}");
    sleep(&rt, ms(25)).await;
    guard.exit().await.unwrap();
    assert!(!a.locked().await.unwrap(), "released at exit");
    let again = a.enter().await.unwrap();
    assert!(b.enter().await.unwrap_err().is_would_block());
    sleep(&rt, ms(25)).await;
    again.exit().await.unwrap();
    b.enter().await.unwrap().exit().await.unwrap();
}

pub async fn task_lock_exit_before_min_hold_keeps_the_key_until_then<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let a = task_lock(&rt, backend.clone(), "cleanup", ms(80), ms(1000));
    let b = task_lock(&rt, backend, "cleanup", ms(80), ms(1000));
    let started = rt.now();
    a.enter().await.unwrap().exit().await.unwrap();
    assert!(a.locked().await.unwrap(), "held after exit for the rest of the min hold");
    assert!(a.enter().await.unwrap_err().is_would_block(), "not even this instance re-runs within it");
    let probe = b.clone();
    eventually_async(&rt, "the min hold ends", || {
        let probe = probe.clone();
        async move { !probe.locked().await.unwrap() }
    })
    .await;
    assert!(rt.now().saturating_duration_since(started) >= ms(80), "not before the min hold");
    b.enter().await.unwrap().exit().await.unwrap();
}

pub async fn task_lock_body_longer_than_lease_is_not_owned<R: Runtime>(rt: R) {
    let task = task_lock(&rt, MemoryBackend::new(), "cleanup", ms(10), ms(30));
    let guard = task.enter().await.unwrap();
    guard.lost().await;
    sleep(&rt, ms(5)).await;
    let err = guard.exit().await.unwrap_err();
    assert!(err.is_not_owned(), "{err}");
    assert!(!task.locked().await.unwrap(), "free afterwards");
    task.enter().await.unwrap().exit().await.unwrap();
}

pub async fn task_lock_backend_failures_map_to_errors<R: Runtime>(rt: R) {
    let backend = Faulty::default();
    let task = task_lock(&rt, backend.clone(), "cleanup", ms(1), ms(1000));
    backend.fail();
    assert!(matches!(task.enter().await, Err(Error::Acquire { .. })));
    assert!(matches!(task.locked().await, Err(Error::LockedCheck { .. })));
    backend.heal();
    let mut guard = task.enter().await.unwrap();
    backend.fail();
    assert!(matches!(guard.extend().await, Err(Error::Extend { .. })));
    assert!(matches!(guard.exit().await, Err(Error::Release { .. })), "exit errors are release errors");
    backend.heal();
    sleep(&rt, ms(1)).await;
    // The instance is clean after a failed exit: only the store's lease (1 s) is left.
    assert!(task.enter().await.unwrap_err().is_would_block());
}

pub async fn task_lock_extend_keeps_it_held<R: Runtime>(rt: R) {
    let task = task_lock(&rt, MemoryBackend::new(), "cleanup", ms(1), ms(40));
    let mut guard = task.enter().await.unwrap();
    let fence = guard.fencing_token();
    sleep(&rt, ms(25)).await;
    guard.extend().await.unwrap();
    sleep(&rt, ms(25)).await;
    assert!(guard.is_valid() && task.locked().await.unwrap(), "extended past the first lease");
    assert_eq!(guard.fencing_token(), fence);
    guard.exit().await.unwrap();
}

pub async fn task_lock_run_skips_when_held_elsewhere<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let a = task_lock(&rt, backend.clone(), "report", ms(1), ms(1000));
    let b = task_lock(&rt, backend, "report", ms(1), ms(1000));
    let guard = a.enter().await.unwrap();
    assert_eq!(b.run(async { 42 }).await.unwrap(), None, "skipped this tick");
    sleep(&rt, ms(2)).await; // past the 1 ms min hold
    guard.exit().await.unwrap();
    assert_eq!(b.run(async { 42 }).await.unwrap(), Some(42));
}

pub async fn task_lock_dropped_guard_exits<R: Runtime>(rt: R) {
    let task = task_lock(&rt, MemoryBackend::new(), "cleanup", ms(1), ms(60_000));
    drop(task.enter().await.unwrap());
    let probe = task.clone();
    eventually_async(&rt, "the dropped guard's exit", || {
        let probe = probe.clone();
        async move { !probe.locked().await.unwrap() }
    })
    .await;
    task.enter().await.unwrap().exit().await.unwrap();
}

pub async fn task_lock_enter_after_a_backend_timeout_and_its_late_answer<R: Runtime>(rt: R) {
    let backend = Faulty::default();
    let task = tenure::TaskLock::builder("cleanup", rt.clone())
        .backend(backend.clone())
        .min_hold_duration(ms(1))
        .backend_timeout(ms(20))
        .env_load(false)
        .build()
        .unwrap();
    backend.slow(&rt, ms(300));
    assert!(matches!(task.enter().await, Err(Error::Acquire { .. })));
    backend.heal();
    let guard = task.enter().await.unwrap();
    sleep(&rt, ms(320)).await; // the first enter lands, refused: nothing changes
    assert!(guard.is_valid());
    guard.exit().await.unwrap();
}

pub async fn task_lock_reconfigure_swaps_keeps_the_worker_and_applies_to_the_next_enter<R: Runtime>(rt: R) {
    let task = task_lock(&rt, MemoryBackend::new(), "cleanup", ms(1), ms(60_000));
    let shorter =
        task.config().to_builder().lease_duration(ms(30)).build(&mut tenure::core::SplitMix64::new(1)).unwrap();
    task.reconfigure(shorter.clone()).unwrap();
    task.reconfigure(shorter).unwrap();
    let guard = task.enter().await.unwrap();
    guard.lost().await; // the 30 ms lease of the new configuration runs out
    let other = task
        .config()
        .to_builder()
        .worker(tenure::WorkerId::new("w2").unwrap())
        .build(&mut tenure::core::SplitMix64::new(2));
    let err = task.reconfigure(other.unwrap()).unwrap_err();
    assert!(err.to_string().contains("worker is immutable"), "{err}");
    drop(guard);
}

pub async fn task_lock_enter_right_after_a_dropped_guard<R: Runtime>(rt: R) {
    let task = task_lock(&rt, MemoryBackend::new(), "cleanup", ms(1), ms(60_000));
    let guard = task.enter().await.unwrap();
    sleep(&rt, ms(2)).await; // past the min hold
    drop(guard);
    let again = task.enter().await.unwrap();
    again.exit().await.unwrap();
}
