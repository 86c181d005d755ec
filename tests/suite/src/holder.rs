//! Who holds a lock (`Lock::state`, `TaskLock::state`): the holder's worker, fence, lease end,
//! host, pid, program and purpose, as a Rust user reads them; never a token.

use tenure::{Lock, MemoryBackend, Runtime, TaskLock};

use crate::support::ms;

pub async fn lock_state_names_the_holder_and_its_purpose<R: Runtime>(rt: R) {
    let store = MemoryBackend::new();
    let lock = Lock::builder("cart", rt.clone())
        .backend(store.clone())
        .worker(tenure::WorkerId::new("checkout-1").unwrap())
        .purpose("nightly export")
        .build()
        .unwrap();
    let free = lock.state().await.unwrap();
    assert!(!free.held() && free.fencing_token.is_none() && free.details.is_none(), "{free:?}");

    let guard = lock.acquire().await.unwrap();
    let state = Lock::builder("cart", rt.clone()).backend(store.clone()).build().unwrap().state().await.unwrap();
    assert_eq!((state.name.as_str(), state.worker.as_deref()), ("cart", Some("checkout-1")));
    assert_eq!(state.fencing_token, Some(guard.handle().fencing_token));
    let details = state.details.clone().expect("the holder told who it is");
    assert_eq!((details.pid, details.purpose.as_deref()), (std::process::id(), Some("nightly export")));
    assert!(!details.host.is_empty() && !details.program.is_empty(), "{details:?}");
    assert!(state.expires_at.expect("a live lease") > details.acquired_at, "{state:?}");
    assert!(!format!("{state:?}").contains(guard.handle().token.as_str()), "no token: {state:?}");
    // (the memory store's waiters are woken by each release, none keeps a place: no line; the
    // stores that keep one list it, `inspect::holder_details_follow_a_hand_off` and each front
    // end's state tests)
    assert_eq!(state.waiting, None);
    guard.release().await.unwrap();
    let released = lock.state().await.unwrap();
    assert!(!released.held() && released.details.is_none(), "{released:?}");
    assert_eq!(released.fencing_token, state.fencing_token, "the fence stays");

    // A purpose may change between acquisitions, and is checked.
    lock.set_purpose(None).unwrap();
    let guard = lock.acquire().await.unwrap();
    assert_eq!(lock.state().await.unwrap().details.and_then(|d| d.purpose), None);
    guard.release().await.unwrap();
    let err = lock.set_purpose(Some(&"x".repeat(10_000))).unwrap_err();
    assert!(err.to_string().contains("256"), "{err}");
    let Err(err) = Lock::builder("cart", rt).backend(store).purpose("a\nb").build() else { panic!("a bad purpose") };
    assert!(err.to_string().contains("purpose"), "{err}");
}

pub async fn task_lock_state_names_the_run<R: Runtime>(rt: R) {
    let store = MemoryBackend::new();
    let task = TaskLock::builder("report", rt.clone())
        .backend(store)
        .min_hold_duration(ms(10))
        .lease_duration(ms(60_000))
        .purpose("weekly report")
        .build()
        .unwrap();
    let run = task.enter().await.unwrap();
    let state = task.state().await.unwrap();
    assert_eq!(state.fencing_token, Some(run.fencing_token()));
    assert_eq!(state.details.and_then(|d| d.purpose).as_deref(), Some("weekly report"));
    run.exit().await.unwrap();
}

/// A read-write lock's readers and writer and a semaphore's permit holders tell the store who
/// they are and what for, as a lock's holder does: a Rust user's purpose, read back as
/// `tenure locks` reads it (the store's listing, which shows people workers, not tokens).
pub async fn shared_holders_name_themselves_and_their_purpose<R: Runtime>(rt: R) {
    use tenure::{Inspect, ReadWriteLock, Semaphore, Side};
    static FILES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = FILES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let path = std::env::temp_dir().join(format!("tenure-suite-shared-details-{}-{n}.db", std::process::id()));
    let store = tenure_sqlite::SqliteBackend::open(&path).await.unwrap();
    let pool = Semaphore::builder("exports", 2, rt.clone()).backend(store.clone()).purpose("export").build().unwrap();
    let lock = ReadWriteLock::builder("catalog", rt.clone()).backend(store.clone()).purpose("rebuild").build().unwrap();
    assert_eq!((pool.purpose().as_deref(), lock.purpose().as_deref()), (Some("export"), Some("rebuild")));
    let permit = pool.acquire().await.unwrap();
    let writing = lock.write().acquire().await.unwrap();
    let listed = store.shared_states(Vec::new()).await.unwrap();
    let told: Vec<_> = listed
        .iter()
        .flat_map(|s| s.holders.iter().map(move |h| (s.key.as_str(), h.side, h.details.clone())))
        .map(|(key, side, details)| {
            let details = details.expect("a holder's details");
            assert_eq!(details.pid, std::process::id());
            assert!(!details.host.is_empty() && !details.program.is_empty(), "{details:?}");
            (key, side, details.purpose)
        })
        .collect();
    assert_eq!(
        told,
        [
            ("rwlock:catalog", Side::Write, Some("rebuild".to_owned())),
            ("semaphore:exports", Side::Permit, Some("export".to_owned()))
        ]
    );
    let reading = writing.downgrade().await.unwrap();
    let listed = store.shared_states(vec!["rwlock:catalog".into()]).await.unwrap();
    let reader = &listed[0].holders[0];
    assert_eq!(
        (reader.side, reader.details.as_ref().and_then(|d| d.purpose.as_deref())),
        (Side::Read, Some("rebuild"))
    );
    reading.release().await.unwrap();
    permit.release().await.unwrap();
    // A purpose is checked as a lock's is.
    let Err(err) = Semaphore::builder("exports", 2, rt.clone()).backend(store.clone()).purpose("a\nb").build() else {
        panic!("a bad purpose")
    };
    assert!(err.to_string().contains("purpose"), "{err}");
    assert!(lock.set_purpose(Some(&"x".repeat(10_000))).unwrap_err().to_string().contains("256"));

    // A leader tells the store as a lock's holder does, with the call that begins its term.
    let election = tenure::LeaderElection::builder("scheduler", rt.clone())
        .backend(store.clone())
        .worker(tenure::WorkerId::new("sched-1").unwrap())
        .purpose("nightly schedule")
        .build()
        .unwrap();
    assert_eq!(election.purpose().as_deref(), Some("nightly schedule"));
    election.start();
    election.wait_for_leader().await;
    let leaders = store.leader_states(Vec::new()).await.unwrap();
    let details = leaders[0].details.clone().expect("the leader's details");
    assert_eq!((leaders[0].record.holder.as_str(), details.pid), ("sched-1", std::process::id()));
    assert_eq!(details.purpose.as_deref(), Some("nightly schedule"));
    election.stop().await;
    assert!(election.set_purpose(Some("a\u{7}")).unwrap_err().to_string().contains("purpose"));
    store.close().await.unwrap();
    for suffix in ["", "-wal", "-shm"] {
        std::fs::remove_file(format!("{}{suffix}", path.display())).ok();
    }
}
