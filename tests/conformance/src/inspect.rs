//! What a store shows `tenure status` and `tenure exporter`, written once for every store that can list its holders.

use std::time::Duration;

use tenure::backend::{LeaderElectionBackend, LockBackend, ReadWriteLockBackend, SemaphoreBackend};
use tenure::backend::{LeaderElectionCalls, LockCalls, ReadWriteCalls, SemaphoreCalls};
use tenure::{Inspect, Metadata, Side};
use tenure_core::{HolderDetails, Key, StoreOp, StoreReply, Token};

/// A held lock, a released task lock (its fence kept) and a leader are listed, each with what
/// it is; asking for names lists only those the store knows.
pub async fn inspection_lists_holders_and_leaders<B>(store: &B)
where
    B: Inspect + LockBackend + LeaderElectionBackend,
{
    LockCalls::acquire(store, "lock:a", "w1:task:0.1", Duration::from_secs(30)).await.expect("a");
    LockCalls::acquire(store, "tasklock:b", "w2:task:0.2", Duration::from_secs(30)).await.expect("b");
    LockCalls::release(store, "tasklock:b", "w2:task:0.2").await.expect("release b");
    LeaderElectionCalls::acquire_or_renew(store, "leader:svc", "w3", Duration::from_secs(30), &Metadata::new())
        .await
        .expect("leader");
    let locks = store.lock_states(Vec::new()).await.expect("locks");
    let keys: Vec<_> = locks.iter().map(|s| (s.key.as_str(), s.fence.map(|f| f.get()), s.holder.as_deref())).collect();
    assert_eq!(keys, [("lock:a", Some(1), Some("w1:task:0.1")), ("tasklock:b", Some(1), None)]);
    assert!(locks[0].expires_at.is_some() && locks[1].expires_at.is_none());
    let one = store.lock_states(vec!["lock:a".into(), "lock:never".into()]).await.expect("one");
    assert_eq!(one.len(), 1);
    let leaders = store.leader_states(Vec::new()).await.expect("leaders");
    assert_eq!(leaders.len(), 1);
    assert_eq!((leaders[0].key.as_str(), leaders[0].record.holder.as_str()), ("leader:svc", "w3"));
}

/// A read-write lock with two readers and a writer waiting, and a semaphore of two permits with
/// both held and a third waiting, are listed with their fences, leases and lines; asking for
/// names lists only those the store knows.
pub async fn inspection_lists_read_write_locks_and_semaphores<B>(store: &B)
where
    B: Inspect + ReadWriteLockBackend + SemaphoreBackend,
{
    let lease = Duration::from_secs(30);
    let write = ReadWriteCalls::acquire_write(store, "rwlock:doc", "w1:task:0.1", lease, false).await.expect("write");
    assert_eq!(write.map(|g| g.fence.get()), Some(1));
    assert!(ReadWriteCalls::release_write(store, "rwlock:doc", "w1:task:0.1").await.expect("release write"));
    for reader in ["r1:task:0.1", "r2:task:0.2"] {
        ReadWriteCalls::acquire_read(store, "rwlock:doc", reader, lease).await.expect("read").expect("a read lease");
    }
    let refused = ReadWriteCalls::acquire_write(store, "rwlock:doc", "w2:task:0.2", lease, true).await.expect("intent");
    assert!(refused.is_none(), "readers hold the lock");
    for holder in ["a:task:0.1", "b:task:0.2", "c:task:0.3"] {
        SemaphoreCalls::acquire(store, "semaphore:pool", holder, lease, 2, Some(lease)).await.expect("permit");
    }
    let states = store.shared_states(Vec::new()).await.expect("shared");
    let shown: Vec<_> = states
        .iter()
        .map(|s| {
            let holders: Vec<_> = s.holders.iter().map(|h| (h.token.as_str(), h.side)).collect();
            (s.key.as_str(), s.fence.map(|f| f.get()), holders, s.waiters.clone(), s.permits)
        })
        .collect();
    assert_eq!(
        shown,
        [
            (
                "rwlock:doc",
                Some(1),
                vec![("r1:task:0.1", Side::Read), ("r2:task:0.2", Side::Read)],
                vec!["w2:task:0.2".to_owned()],
                None
            ),
            (
                "semaphore:pool",
                Some(2),
                vec![("a:task:0.1", Side::Permit), ("b:task:0.2", Side::Permit)],
                vec!["c:task:0.3".to_owned()],
                Some(2)
            ),
        ]
    );
    assert!(states.iter().flat_map(|s| &s.holders).all(|h| h.expires_at.as_unix_micros() > 0));
    let one = store.shared_states(vec!["semaphore:pool".into(), "rwlock:never".into()]).await.expect("one");
    assert_eq!(one.iter().map(|s| s.key.as_str()).collect::<Vec<_>>(), ["semaphore:pool"]);
    // Names that end as another name's parts end in some stores' layouts (Redis: `…:r`, `…:w`).
    ReadWriteCalls::acquire_read(store, "rwlock:x:r", "r3:task:0.3", lease).await.expect("read").expect("a lease");
    SemaphoreCalls::acquire(store, "semaphore:db:w", "d:task:0.4", lease, 1, None).await.expect("permit");
    let all = store.shared_states(Vec::new()).await.expect("all");
    let keys: Vec<_> = all.iter().map(|s| (s.key.as_str(), s.holders.len())).collect();
    assert_eq!(keys, [("rwlock:doc", 2), ("rwlock:x:r", 1), ("semaphore:db:w", 1), ("semaphore:pool", 2)]);
}

/// Holder details (`tenure_core::store::details`): kept beside a new grant with when it was
/// made, unchanged by a renewal, never shown for a lease whose holder gave none (a grelmicro
/// process), and written again by the next holder that gives some.
pub async fn holder_details_are_kept_beside_each_grant<B>(store: &B)
where
    B: Inspect + LockBackend,
{
    let lease = Duration::from_secs(30);
    let details = |purpose: &str| {
        let text = format!(r#"{{"host":"h1","pid":41,"program":"python3 worker.py","purpose":"{purpose}"}}"#);
        Some(HolderDetails::new(&text).expect("details"))
    };
    let acquire = |name: &str, token: &str, details: Option<HolderDetails>| {
        let (key, token) = (Key::parse(name).expect("key"), Token::new(token).expect("token"));
        store.execute(StoreOp::LockAcquire { key, token, lease, details })
    };
    let shown = |name: &'static str| async move {
        let states = store.lock_states(vec![name.to_owned()]).await.expect("states");
        states.into_iter().next().and_then(|s| s.details)
    };
    let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock");
    let before = i64::try_from(since_epoch.as_micros()).expect("micros");
    for name in ["lock:d", "tasklock:d"] {
        let fence = acquire(name, "w1:task:0.1", details("nightly export")).await.expect("grant");
        assert!(matches!(fence, StoreReply::Fence(Some(_))), "{name}: {fence:?}");
        let first = shown(name).await.unwrap_or_else(|| panic!("{name}: details kept with the grant"));
        assert_eq!(
            (first.host.as_str(), first.pid, first.program.as_str(), first.purpose.as_deref()),
            ("h1", 41, "python3 worker.py", Some("nightly export")),
            "{name}"
        );
        // (a store's clock may differ from this process's: within a minute of it)
        let at = first.acquired_at.as_unix_micros();
        assert!((at - before).abs() < 60_000_000, "{name}: acquired at {at}, test started at {before}");
        acquire(name, "w1:task:0.1", details("a renewal")).await.expect("renewal");
        assert_eq!(shown(name).await.as_ref(), Some(&first), "{name}: a renewal keeps the grant's details");
        assert!(LockCalls::release(store, name, "w1:task:0.1").await.expect("release"));
        assert_eq!(shown(name).await, None, "{name}: no details without a live lease");
        acquire(name, "g:task:0.2", None).await.expect("a holder giving none");
        assert_eq!(shown(name).await, None, "{name}: a holder that gave none shows none");
        assert!(LockCalls::release(store, name, "g:task:0.2").await.expect("release"));
        acquire(name, "w3:task:0.3", details("next")).await.expect("next");
        let next = shown(name).await.expect("the next holder's details");
        assert_eq!(next.purpose.as_deref(), Some("next"), "{name}");
        assert!(LockCalls::release(store, name, "w3:task:0.3").await.expect("release"));
    }
}

/// A waiter's details wait with its place: a store that hands the lock over from its queue
/// keeps them beside the grant (one without a queue grants the waiter's next attempt). A store
/// that `keeps_places` lists its line in turn order, with when each place was taken and what each
/// waiter told it; one that does not lists none.
pub async fn holder_details_follow_a_hand_off<B>(store: &B, keeps_places: bool)
where
    B: Inspect + LockBackend,
{
    let (lease, wait) = (Duration::from_secs(30), Duration::from_secs(30));
    let queued = |token: &str, purpose: &str| {
        let text = format!(r#"{{"host":"h","pid":7,"program":"node server.mjs","purpose":"{purpose}"}}"#);
        let details = Some(HolderDetails::new(&text).expect("details"));
        let (key, token) = (Key::parse("lock:line").expect("key"), Token::new(token).expect("token"));
        store.execute(StoreOp::LockAcquireQueued { key, token, lease, wait, details })
    };
    let line = || async {
        let state = store.lock_states(vec!["lock:line".into()]).await.expect("states").into_iter().next();
        let waiting = state.and_then(|s| s.waiting).unwrap_or_default();
        waiting.into_iter().map(|w| (w.token, w.since, w.details.and_then(|d| d.purpose))).collect::<Vec<_>>()
    };
    assert!(matches!(queued("w1:task:0.1", "first").await.expect("w1"), StoreReply::Fence(Some(_))));
    let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock");
    let before = i64::try_from(since_epoch.as_micros()).expect("micros");
    assert_eq!(queued("w2:task:0.2", "second").await.expect("w2 waits"), StoreReply::Fence(None));
    assert_eq!(queued("w3:task:0.3", "third").await.expect("w3 waits"), StoreReply::Fence(None));
    assert_eq!(queued("w2:task:0.2", "second").await.expect("w2 waits on"), StoreReply::Fence(None));
    let waiting = line().await;
    if keeps_places {
        let shown: Vec<_> = waiting.iter().map(|(t, _, p)| (t.as_str(), p.as_deref())).collect();
        assert_eq!(shown, [("w2:task:0.2", Some("second")), ("w3:task:0.3", Some("third"))], "in turn order");
        for (token, since, _) in &waiting {
            // (a store's clock may differ from this process's: within a minute of it; a renewed
            // place keeps when it was first taken)
            let since = since.unwrap_or_else(|| panic!("{token}: no time")).as_unix_micros();
            assert!((since - before).abs() < 60_000_000, "{token}: since {since}, test at {before}");
        }
    } else {
        assert!(waiting.is_empty(), "a store that keeps no places lists none: {waiting:?}");
    }
    assert!(LockCalls::release(store, "lock:line", "w1:task:0.1").await.expect("release"));
    // (a store may list a free name, or not at all)
    let handed = store.lock_states(vec!["lock:line".into()]).await.expect("states").into_iter().next();
    if handed.and_then(|s| s.holder).is_none() {
        queued("w2:task:0.2", "second").await.expect("w2 takes it");
    }
    let state = store.lock_states(vec!["lock:line".into()]).await.expect("states").remove(0);
    assert_eq!(state.holder.as_deref(), Some("w2:task:0.2"));
    assert_eq!(state.details.and_then(|d| d.purpose).as_deref(), Some("second"), "the waiter's details");
    if keeps_places {
        let left: Vec<_> = line().await.into_iter().map(|(t, ..)| t).collect();
        assert_eq!(left, ["w3:task:0.3"], "the rest of the line");
    }
    assert!(LockCalls::release(store, "lock:line", "w2:task:0.2").await.expect("release"));
}
