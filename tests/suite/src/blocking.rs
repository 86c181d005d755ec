//! Blocking adapters from plain threads (spec §8.2 `from_thread`, §8.5).

use tenure::{Error, MemoryBackend, Runtime};

use crate::support::{in_thread, lock, ms, task_lock};

pub async fn blocking_lock_from_a_plain_thread<R: Runtime>(rt: R) {
    let lock = lock(&rt, MemoryBackend::new(), "cart", ms(1000));
    let async_guard = lock.acquire().await.unwrap();
    let blocking = lock.blocking();
    let outcome = in_thread(move || {
        let timed_out = blocking.acquire(Some(ms(10))).unwrap_err();
        let refused = blocking.acquire_nowait().unwrap_err();
        (timed_out, refused, blocking.locked().unwrap())
    })
    .await;
    assert!(outcome.0.is_timeout() && outcome.0.to_string().contains("not acquired"));
    assert!(outcome.1.is_would_block() && outcome.2);
    async_guard.release().await.unwrap();
    let blocking = lock.blocking();
    let fences = in_thread(move || {
        let mut guard = blocking.acquire(None).unwrap();
        assert!(guard.handle().token.as_str().contains(":thread:"));
        let before = guard.fencing_token();
        let after = guard.extend().unwrap().fencing_token;
        assert!(guard.owned().unwrap());
        guard.release().unwrap();
        (before, after)
    })
    .await;
    assert_eq!(fences.0, fences.1, "extend keeps the fencing token");
    assert!(!lock.locked().await.unwrap());
}

pub async fn blocking_holder_has_thread_semantics<R: Runtime>(rt: R) {
    let lock = lock(&rt, MemoryBackend::new(), "cart", ms(1000));
    let blocking = lock.blocking();
    let results = in_thread(move || {
        let holder = blocking.holder();
        holder.acquire(None).unwrap();
        let nested = holder.acquire_nowait().unwrap_err();
        let other = blocking.holder();
        let not_owner = other.release().unwrap_err();
        holder.release().unwrap();
        (nested, not_owner, holder.is_held())
    })
    .await;
    assert!(results.0.is_reentrant());
    assert!(results.1.is_not_owned(), "another thread cannot release it");
    assert!(!results.2);
}

pub async fn blocking_task_lock_from_a_plain_thread<R: Runtime>(rt: R) {
    let task = task_lock(&rt, MemoryBackend::new(), "cleanup", ms(1), ms(1000));
    let blocking = task.blocking();
    let outcome = in_thread(move || {
        let guard = blocking.enter().unwrap();
        let nested = blocking.enter().unwrap_err();
        let locked = blocking.locked().unwrap();
        std::thread::sleep(ms(2)); // past the 1 ms min hold
        guard.exit().unwrap();
        (nested, locked, blocking.locked().unwrap())
    })
    .await;
    assert!(outcome.0.is_reentrant() && outcome.1 && !outcome.2);
}

pub async fn blocking_call_on_a_runtime_thread_is_refused_or_undetectable<R: Runtime>(rt: R) {
    let lock = lock(&rt, MemoryBackend::new(), "cart", ms(1000));
    if rt.blocks_runtime() {
        let err = lock.blocking().acquire(None).unwrap_err();
        assert!(matches!(err, Error::Deadlock { .. }), "{err}");
        assert!(err.to_string().contains("would deadlock"));
        assert!(!lock.locked().await.unwrap(), "nothing was attempted");
    } else {
        // This runtime cannot tell its threads apart (smol): the call is served; from a plain
        // thread it always is.
        let guard = lock.blocking().acquire_nowait().unwrap();
        guard.release().unwrap();
    }
}

pub async fn blocking_nested_acquire_on_a_thread_is_reentrant_and_a_lost_extend_not_owned<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let short = lock(&rt, backend.clone(), "cart", ms(30));
    let other = lock(&rt, backend, "cart", ms(1000));
    let (blocking, other) = (short.blocking(), other.blocking());
    let outcome = in_thread(move || {
        let mut guard = blocking.acquire(None).unwrap();
        let nested = blocking.acquire_nowait().unwrap_err();
        std::thread::sleep(ms(40)); // the 30 ms lease runs out
        let taken = other.acquire(Some(ms(1000))).unwrap();
        let extend = guard.extend().unwrap_err();
        drop(guard);
        taken.release().unwrap();
        let again = blocking.acquire_nowait().map(|g| g.release());
        (nested, extend, matches!(again, Ok(Ok(()))))
    })
    .await;
    assert!(outcome.0.is_reentrant(), "{}", outcome.0);
    assert!(outcome.1.is_not_owned(), "{}", outcome.1);
    assert!(outcome.2, "after the guard is gone the thread may acquire again");
}
