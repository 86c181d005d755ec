//! What a store shows `tenure status` and `tenure exporter`, written once for every store that can list its holders.

use std::time::Duration;

use tenure::backend::{LeaderElectionBackend, LockBackend, ReadWriteLockBackend, SemaphoreBackend};
use tenure::backend::{LeaderElectionCalls, LockCalls, ReadWriteCalls, SemaphoreCalls};
use tenure::{Inspect, Metadata, Side};

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
