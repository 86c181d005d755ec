//! What a store shows `tenure status`, written once for every store that can list its holders.

use std::time::Duration;

use tenure::backend::{LeaderElectionBackend, LockBackend};
use tenure::backend::{LeaderElectionCalls, LockCalls};
use tenure::{Inspect, Metadata};

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
