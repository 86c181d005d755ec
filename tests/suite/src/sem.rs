//! `Semaphore` behaviours, on the memory backend: at most N holders, fencing tokens across
//! permits, waiters in arrival order, the stored permit count, keep-alive and settings.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tenure::{Error, FencingToken, MemoryBackend, Runtime, SemState, Semaphore};

use crate::support::{eventually, eventually_async, ms, sleep};

/// A semaphore of `permits` with `lease`, 5 ms retries and the environment ignored.
pub fn sem<R: Runtime>(rt: &R, backend: MemoryBackend, permits: u32, lease: Duration) -> Semaphore<R> {
    Semaphore::builder("pool", permits, rt.clone())
        .backend(backend)
        .lease_duration(lease)
        .retry_interval(ms(5))
        .backend_timeout(ms(200))
        .env_load(false)
        .build()
        .unwrap()
}

/// A task that waits for a permit, notes `label` and its fencing token, and releases.
fn spawn_waiter<R: Runtime>(
    rt: &R,
    pool: &Semaphore<R>,
    label: &'static str,
    log: &Arc<Mutex<Vec<(&'static str, u64)>>>,
) {
    let (pool, log) = (pool.clone(), log.clone());
    rt.spawn(async move {
        let permit = pool.acquire().await.unwrap();
        log.lock().unwrap().push((label, permit.fencing_token().get()));
        permit.release().await.unwrap();
    });
}

pub async fn sem_admits_up_to_its_permits_each_with_a_greater_fencing_token<R: Runtime>(rt: R) {
    let pool = sem(&rt, MemoryBackend::new(), 3, ms(2000));
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(pool.acquire().await.unwrap());
    }
    let fences: Vec<u64> = held.iter().map(|g| g.fencing_token().get()).collect();
    assert_eq!(fences, vec![1, 2, 3]);
    assert_eq!(pool.state().await.unwrap(), SemState { permits: 3, holders: 3, waiting: 0, fence: 3 });
    let full = pool.acquire_nowait().await.unwrap_err();
    assert!(full.is_would_block() && full.to_string().contains("pool"), "{full}");
    assert!(matches!(pool.acquire_timeout(ms(30)).await, Err(Error::Timeout { .. })));
    assert_eq!(pool.state().await.unwrap().waiting, 0, "the timed-out waiter gave its place up");
    held.remove(1).release().await.unwrap();
    let next = pool.acquire_nowait().await.unwrap();
    assert_eq!(next.fencing_token(), FencingToken::new(4), "a permit given back is granted anew, with a new token");
    assert!(next.owned().await.unwrap());
    for guard in held.into_iter().chain([next]) {
        guard.release().await.unwrap();
    }
    assert_eq!(pool.state().await.unwrap(), SemState { permits: 0, holders: 0, waiting: 0, fence: 4 });
}

pub async fn sem_waiters_are_served_in_arrival_order<R: Runtime>(rt: R) {
    let pool = sem(&rt, MemoryBackend::new(), 1, ms(2000));
    let holder = pool.acquire().await.unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    for (ahead, label) in ["first", "second", "third"].into_iter().enumerate() {
        spawn_waiter(&rt, &pool, label, &log);
        eventually_async(&rt, "the waiter took its place in line", || async {
            pool.state().await.is_ok_and(|s| s.waiting == ahead + 1)
        })
        .await;
    }
    holder.release().await.unwrap();
    eventually(&rt, "every waiter had its turn", || log.lock().unwrap().len() == 3).await;
    let order: Vec<&str> = log.lock().unwrap().iter().map(|(label, _)| *label).collect();
    assert_eq!(order, ["first", "second", "third"]);
}

pub async fn sem_another_permit_count_is_refused_while_the_name_is_in_use<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let four = sem(&rt, backend.clone(), 4, ms(2000));
    let six = sem(&rt, backend, 6, ms(2000));
    let held = four.acquire().await.unwrap();
    let error = six.acquire_timeout(ms(50)).await.unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, Error::Settings(_)) && text.contains("4 permits") && text.contains("asks for 6"), "{text}");
    held.release().await.unwrap();
    let taken = six.acquire_nowait().await.unwrap();
    assert_eq!(six.state().await.unwrap().permits, 6, "an unused name takes the new count");
    taken.release().await.unwrap();
}

pub async fn sem_an_expired_permit_frees_its_place_and_a_kept_one_does_not<R: Runtime>(rt: R) {
    // Renewed every 100 ms: a loaded 2-core machine may delay one by a lease's two thirds.
    let pool = sem(&rt, MemoryBackend::new(), 1, ms(300));
    let kept = pool.acquire().await.unwrap().keep_alive(Duration::MAX);
    sleep(&rt, ms(1_000)).await;
    assert!(kept.ended().is_none(), "renewed all along");
    assert!(pool.acquire_nowait().await.unwrap_err().is_would_block());
    let guard = kept.stop();
    assert_eq!(guard.fencing_token(), FencingToken::new(1), "renewals keep the token");
    let mut lapsing = guard;
    lapsing.lost().await;
    let next = pool.acquire().await.unwrap();
    assert_eq!(next.fencing_token(), FencingToken::new(2));
    assert!(matches!(lapsing.extend().await, Err(Error::NotOwned { .. })), "its permit went to another");
    next.release().await.unwrap();
}

pub async fn sem_names_counts_and_settings_are_checked<R: Runtime>(rt: R) {
    let vars: tenure::EnvVars = [("GREL_SEMAPHORE_POOL_LEASE_DURATION", "7")].into_iter().collect();
    let pool = Semaphore::builder("pool", 2, rt.clone())
        .backend(MemoryBackend::new())
        .env_vars(vars)
        .env_load(true)
        .build()
        .unwrap();
    assert_eq!((pool.config().lease_duration(), pool.permits()), (Duration::from_secs(7), 2));
    let zero = Semaphore::builder("pool", 0, rt.clone()).backend(MemoryBackend::new()).build().unwrap_err();
    assert!(matches!(zero, Error::Settings(_)) && zero.to_string().contains("permit"), "{zero}");
    assert!(Semaphore::builder("bad name", 2, rt.clone()).backend(MemoryBackend::new()).build().is_err());
    let missing = Semaphore::builder("pool", 2, rt.clone()).env_load(false).build().unwrap_err();
    assert!(matches!(missing, Error::OutOfContext { .. }) && missing.to_string().contains("Semaphore('pool')"));
    let coordination = tenure::Coordination::memory(rt);
    let from_slot = coordination.semaphore("pool", 2).unwrap().env_load(false).build().unwrap();
    from_slot.acquire().await.unwrap().release().await.unwrap();
}
