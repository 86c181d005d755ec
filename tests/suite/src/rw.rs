//! `ReadWriteLock` behaviours (spec §1.9, §8.13), on the memory backend.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tenure::{Access, Error, FencingToken, MemoryBackend, ReadWriteLock, Runtime, RwState};

use crate::support::{eventually, eventually_async, ms, sleep};

/// A read-write lock with `lease`, 5 ms retries and the environment ignored.
pub fn rw<R: Runtime>(rt: &R, backend: MemoryBackend, name: &str, lease: Duration) -> ReadWriteLock<R> {
    ReadWriteLock::builder(name, rt.clone())
        .backend(backend)
        .lease_duration(lease)
        .retry_interval(ms(5))
        .backend_timeout(ms(200))
        .env_load(false)
        .build()
        .unwrap()
}

/// A task that waits for the write side, notes its fencing token and releases.
fn spawn_writer<R: Runtime>(rt: &R, lock: &ReadWriteLock<R>) -> Arc<AtomicU64> {
    let granted = Arc::new(AtomicU64::new(0));
    let (writer, flag) = (lock.clone(), granted.clone());
    rt.spawn(async move {
        let guard = writer.write().acquire().await.unwrap();
        flag.store(guard.fencing_token().get(), Ordering::SeqCst);
        guard.release().await.unwrap();
    });
    granted
}

fn state(generation: u64, writing: bool, readers: usize, waiting_writers: usize) -> RwState {
    RwState { generation, writing, readers, waiting_writers }
}

pub async fn rw_readers_share_and_a_waiting_writer_holds_new_readers_out<R: Runtime>(rt: R) {
    let lock = rw(&rt, MemoryBackend::new(), "doc", ms(2000));
    let (first, second) = (lock.read().acquire().await.unwrap(), lock.read().acquire().await.unwrap());
    assert_eq!((first.generation(), second.generation()), (FencingToken::new(0), FencingToken::new(0)));
    assert_eq!(lock.state().await.unwrap(), state(0, false, 2, 0));
    let granted = spawn_writer(&rt, &lock);
    eventually_async(&rt, "the writer waits with an intent", || async {
        lock.state().await.is_ok_and(|s| s.waiting_writers == 1)
    })
    .await;
    let late = lock.read().acquire_nowait().await.unwrap_err();
    assert!(late.is_would_block(), "{late}");
    assert!(late.to_string().contains("doc"));
    first.release().await.unwrap();
    assert_eq!(granted.load(Ordering::SeqCst), 0, "one reader is still in");
    second.release().await.unwrap();
    eventually(&rt, "the writer is granted once the last reader left", || granted.load(Ordering::SeqCst) == 1).await;
    eventually_async(&rt, "the writer released", || async { lock.state().await.is_ok_and(|s| !s.writing) }).await;
    assert_eq!(lock.read().acquire_nowait().await.unwrap().generation(), FencingToken::new(1), "the last write");
}

pub async fn rw_a_nowait_writer_keeps_no_intent_and_a_timed_out_one_withdraws_it<R: Runtime>(rt: R) {
    let lock = rw(&rt, MemoryBackend::new(), "doc", ms(2000));
    let reader = lock.read().acquire().await.unwrap();
    assert!(lock.write().acquire_nowait().await.unwrap_err().is_would_block());
    assert_eq!(lock.state().await.unwrap().waiting_writers, 0, "no intent");
    let err = lock.write().acquire_timeout(ms(30)).await.unwrap_err();
    assert!(err.is_timeout(), "{err}");
    eventually_async(&rt, "the intent is withdrawn", || async {
        lock.state().await.is_ok_and(|s| s.waiting_writers == 0)
    })
    .await;
    lock.read().acquire_nowait().await.unwrap().release().await.unwrap();
    reader.release().await.unwrap();
}

pub async fn rw_generations_grow_per_write_and_an_extend_keeps_the_fence<R: Runtime>(rt: R) {
    let lock = rw(&rt, MemoryBackend::new(), "doc", ms(2000));
    let mut first = lock.write().acquire().await.unwrap();
    assert_eq!(first.fencing_token(), FencingToken::new(1));
    assert!(!first.poisoned());
    assert!(lock.write().acquire_nowait().await.unwrap_err().is_would_block(), "one writer");
    assert!(lock.read().acquire_nowait().await.unwrap_err().is_would_block(), "no reader beside it");
    first.extend().await.unwrap();
    assert_eq!(first.fencing_token(), FencingToken::new(1), "renewed, same fence");
    assert!(first.owned().await.unwrap());
    first.release().await.unwrap();
    let second = lock.write().acquire().await.unwrap();
    assert_eq!((second.fencing_token(), second.poisoned()), (FencingToken::new(2), false), "a clean release");
    second.release().await.unwrap();
    assert_eq!(lock.state().await.unwrap(), state(2, false, 0, 0));
}

pub async fn rw_an_expired_writer_poisons_the_next_grant<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let short = rw(&rt, backend.clone(), "doc", ms(30));
    let lock = rw(&rt, backend, "doc", ms(2000));
    let vanished = short.write().acquire().await.unwrap();
    std::mem::forget(vanished); // its process died: no release
    let next = lock.write().acquire().await.unwrap();
    assert_eq!(next.fencing_token(), FencingToken::new(2));
    assert!(next.poisoned(), "the writer before expired without releasing");
    next.release().await.unwrap();
    let clean = lock.write().acquire().await.unwrap();
    assert!(!clean.poisoned());
    clean.release().await.unwrap();
}

pub async fn rw_downgrade_keeps_writers_out_and_reads_the_write<R: Runtime>(rt: R) {
    let lock = rw(&rt, MemoryBackend::new(), "doc", ms(2000));
    let writing = lock.write().acquire().await.unwrap();
    let reading = writing.downgrade().await.unwrap();
    assert_eq!(reading.generation(), FencingToken::new(1));
    assert!(reading.owned().await.unwrap());
    assert_eq!(lock.state().await.unwrap(), state(1, false, 1, 0));
    assert!(lock.write().acquire_nowait().await.unwrap_err().is_would_block(), "the reader keeps writers out");
    lock.read().acquire_nowait().await.unwrap().release().await.unwrap();
    reading.release().await.unwrap();
    assert_eq!(lock.state().await.unwrap(), state(1, false, 0, 0));
    // The write side's holder writes again at its next acquisition.
    let again = lock.write().acquire().await.unwrap();
    assert_eq!(again.fencing_token(), FencingToken::new(2));
    again.release().await.unwrap();
}

pub async fn rw_a_downgrade_or_extend_without_the_lease_is_not_owned<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let short = rw(&rt, backend.clone(), "doc", ms(30));
    let lock = rw(&rt, backend, "doc", ms(2000));
    let writing = short.write().acquire().await.unwrap();
    writing.lost().await;
    let taken = lock.write().acquire().await.unwrap();
    assert!(matches!(writing.downgrade().await, Err(Error::NotOwned { .. })));
    taken.release().await.unwrap();
    let mut reading = short.read().acquire().await.unwrap();
    reading.lost().await;
    let writer = lock.write().acquire().await.unwrap();
    assert!(matches!(reading.extend().await, Err(Error::NotOwned { .. })), "the read lease was reaped");
    writer.release().await.unwrap();
}

pub async fn rw_a_release_wakes_a_waiting_writer_at_once<R: Runtime>(rt: R) {
    // With a 30 s retry interval only the push wake-up can let the writer in in time.
    let lock = ReadWriteLock::builder("doc", rt.clone())
        .backend(MemoryBackend::new())
        .retry_interval(Duration::from_secs(30))
        .env_load(false)
        .build()
        .unwrap();
    let reader = lock.read().acquire().await.unwrap();
    let granted = spawn_writer(&rt, &lock);
    sleep(&rt, ms(10)).await;
    reader.release().await.unwrap();
    eventually(&rt, "the writer acquired", || granted.load(Ordering::SeqCst) == 1).await;
}

pub async fn rw_a_kept_write_lease_outlives_its_lease_with_one_fence<R: Runtime>(rt: R) {
    let lock = rw(&rt, MemoryBackend::new(), "doc", ms(60));
    let kept = lock.write().acquire().await.unwrap().keep_alive(Duration::MAX);
    sleep(&rt, ms(200)).await;
    assert!(kept.ended().is_none(), "renewed all along");
    assert!(lock.read().acquire_nowait().await.unwrap_err().is_would_block());
    let guard = kept.stop();
    assert_eq!(guard.fencing_token(), FencingToken::new(1));
    guard.release().await.unwrap();
}

pub async fn rw_names_and_settings_come_from_their_own_variables<R: Runtime>(rt: R) {
    let vars: tenure::EnvVars = [("GREL_READWRITELOCK_DOC_LEASE_DURATION", "7")].into_iter().collect();
    let lock = ReadWriteLock::builder("doc", rt.clone())
        .backend(MemoryBackend::new())
        .env_vars(vars)
        .env_load(true)
        .build()
        .unwrap();
    assert_eq!(lock.config().lease_duration(), Duration::from_secs(7));
    assert!(ReadWriteLock::builder("bad name", rt.clone()).backend(MemoryBackend::new()).build().is_err());
    let missing = ReadWriteLock::builder("doc", rt).env_load(false).build().unwrap_err();
    assert!(matches!(missing, Error::OutOfContext { .. }) && missing.to_string().contains("ReadWriteLock('doc')"));
}

pub async fn rw_one_callers_holders_refuse_an_upgrade_and_a_second_lease<R: Runtime>(rt: R) {
    let lock = rw(&rt, MemoryBackend::new(), "doc", ms(2000));
    let caller = lock.holders();
    let reading = caller.acquire(false, None).await.unwrap();
    assert_eq!(caller.held(), Some(Access::Read));
    let upgrade = caller.acquire(true, Some(ms(50))).await.unwrap_err();
    assert!(matches!(upgrade, Error::Upgrade { ref name } if name == "doc"), "{upgrade}");
    assert_eq!(lock.state().await.unwrap().waiting_writers, 0, "refused before it asked the store");
    assert!(matches!(caller.acquire_nowait(false).await, Err(Error::Reentrant { .. })));
    // Another caller is another reader.
    lock.holders().acquire_nowait(false).await.unwrap().release().await.unwrap();
    reading.release().await.unwrap();
    assert_eq!(caller.held(), None, "released, it may ask again");
    let writing = caller.acquire(true, None).await.unwrap();
    assert!(matches!(caller.check(true), Err(Error::Reentrant { .. })));
    assert!(matches!(caller.check(false), Err(Error::Reentrant { .. })), "a writer does not also read");
    let mut downgraded = writing;
    downgraded.downgrade().await.unwrap();
    assert_eq!(caller.held(), Some(Access::Read), "a writer that downgraded reads");
    assert!(matches!(caller.check(true), Err(Error::Upgrade { .. })));
    downgraded.release().await.unwrap();
    assert!(caller.check(true).is_ok());
}

pub async fn rw_a_callers_lost_guard_keeps_its_side_until_released<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let (short, lock) = (rw(&rt, backend.clone(), "doc", ms(30)), rw(&rt, backend, "doc", ms(2000)));
    let caller = short.holders();
    let mut lapsed = caller.acquire(true, None).await.unwrap();
    lapsed.lost().await;
    let other = lock.write().acquire().await.unwrap();
    assert!(matches!(lapsed.extend().await, Err(Error::NotOwned { .. })), "another writer took it");
    let again = caller.acquire_nowait(true).await.unwrap_err();
    assert!(matches!(again, Error::Reentrant { .. }), "its guard is alive: {again}");
    drop(lapsed);
    other.release().await.unwrap();
    eventually_async(&rt, "the side is free once its guard is gone", || async {
        caller.acquire_nowait(true).await.map(drop).is_ok()
    })
    .await;
}
