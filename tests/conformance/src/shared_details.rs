//! Holder details of shared names (`tenure_core::store::details`): each reader, writer and permit
//! holder of a read-write lock or a semaphore is listed with what it told the store with its
//! grant, written once for every store that can list its holders.

use std::time::Duration;

use tenure::backend::{ReadWriteCalls, ReadWriteLockBackend, SemaphoreBackend, SemaphoreCalls};
use tenure::{HolderInfo, Inspect, Side};
use tenure_core::{HolderDetails, Key, StoreOp, StoreReply, Token};

const LEASE: Duration = Duration::from_secs(30);

fn told(purpose: &str) -> Option<HolderDetails> {
    let text = format!(r#"{{"host":"h1","pid":41,"program":"node server.mjs","purpose":"{purpose}"}}"#);
    Some(HolderDetails::new(&text).expect("details"))
}

fn op(name: &str, token: &str, make: impl FnOnce(Key, Token) -> StoreOp) -> StoreOp {
    make(Key::parse(name).expect("key"), Token::new(token).expect("token"))
}

/// The holders of `name` as listed: token, side, purpose told.
async fn shown<B: Inspect>(store: &B, name: &str) -> Vec<(String, Side, Option<String>)> {
    let states = store.shared_states(vec![name.to_owned()]).await.expect("shared states");
    let holders = states.into_iter().next().map(|s| s.holders).unwrap_or_default();
    holders.into_iter().map(|h| (h.token, h.side, h.details.and_then(|d| d.purpose))).collect()
}

/// The details listed for `token` on `name`.
async fn details_of<B: Inspect>(store: &B, name: &str, token: &str) -> Option<HolderInfo> {
    let states = store.shared_states(vec![name.to_owned()]).await.expect("shared states");
    let holders = states.into_iter().next().map(|s| s.holders).unwrap_or_default();
    holders.into_iter().find(|h| h.token == token).and_then(|h| h.details)
}

/// Readers and a writer show what they told with their grants; a renewal keeps it; a downgrade
/// keeps the writer's for its read; a holder that told nothing (a grelmicro process) shows none;
/// a release forgets them.
pub async fn read_write_holders_show_their_details<B>(store: &B)
where
    B: Inspect + ReadWriteLockBackend,
{
    let name = "rwlock:report";
    let read = |token: &str, details| {
        op(name, token, |key, token| StoreOp::RwAcquireRead { key, token, lease: LEASE, details })
    };
    let write = |token: &str, details| {
        op(name, token, |key, token| StoreOp::RwAcquireWrite { key, token, lease: LEASE, intent: true, details })
    };
    let granted = store.execute(write("w:task:0.1", told("rebuild"))).await.expect("write");
    assert!(matches!(granted, StoreReply::Write(Some(_))), "{granted:?}");
    let first = details_of(store, name, "w:task:0.1").await.expect("the writer's details");
    assert_eq!((first.host.as_str(), first.pid, first.program.as_str()), ("h1", 41, "node server.mjs"));
    assert_eq!(first.purpose.as_deref(), Some("rebuild"));
    store.execute(write("w:task:0.1", None)).await.expect("renewal");
    assert_eq!(details_of(store, name, "w:task:0.1").await.as_ref(), Some(&first), "a renewal keeps them");
    let refused = store.execute(write("w2:task:0.2", told("second writer"))).await.expect("refused write");
    assert_eq!(refused, StoreReply::Write(None));
    let down = ReadWriteCalls::downgrade(store, name, "w:task:0.1", LEASE).await.expect("downgrade");
    assert!(down.is_some(), "the writer reads now");
    assert!(ReadWriteCalls::cancel_intent(store, name, "w2:task:0.2").await.expect("withdraw"));
    store.execute(read("r1:task:0.1", told("report"))).await.expect("read");
    store.execute(read("g:task:0.2", None)).await.expect("a reader telling nothing");
    assert_eq!(
        shown(store, name).await,
        [
            ("g:task:0.2".to_owned(), Side::Read, None),
            ("r1:task:0.1".to_owned(), Side::Read, Some("report".to_owned())),
            ("w:task:0.1".to_owned(), Side::Read, Some("rebuild".to_owned())),
        ],
        "the refused writer kept nothing; the downgraded writer reads with its details"
    );
    for reader in ["g:task:0.2", "r1:task:0.1", "w:task:0.1"] {
        assert!(ReadWriteCalls::release_read(store, name, reader).await.expect("release"));
    }
    let granted = store.execute(write("w2:task:0.2", told("second writer"))).await.expect("write");
    assert!(matches!(granted, StoreReply::Write(Some(_))), "{granted:?}");
    store.execute(read("r1:task:0.1", told("late"))).await.expect("refused read");
    assert_eq!(shown(store, name).await, [("w2:task:0.2".to_owned(), Side::Write, Some("second writer".to_owned()))]);
    assert!(ReadWriteCalls::release_write(store, name, "w2:task:0.2").await.expect("release"));
    let again = store.execute(read("r1:task:0.1", None)).await.expect("read without details");
    assert!(matches!(again, StoreReply::Fence(Some(_))), "{again:?}");
    assert_eq!(shown(store, name).await, [("r1:task:0.1".to_owned(), Side::Read, None)], "a release forgot them");
    assert!(ReadWriteCalls::release_read(store, name, "r1:task:0.1").await.expect("release"));
}

/// Each permit's holder shows what it told with its grant; a waiter's place shows nothing until
/// it is granted; a release forgets them.
pub async fn permit_holders_show_their_details<B>(store: &B)
where
    B: Inspect + SemaphoreBackend,
{
    let name = "semaphore:exports";
    let acquire = |token: &str, details| {
        op(name, token, |key, token| StoreOp::SemAcquire {
            key,
            token,
            lease: LEASE,
            permits: 1,
            wait: Some(LEASE),
            details,
        })
    };
    let granted = store.execute(acquire("a:task:0.1", told("export 1"))).await.expect("permit");
    assert!(matches!(granted, StoreReply::Permit(p) if p.fence.is_some()), "{granted:?}");
    store.execute(acquire("b:task:0.2", told("export 2"))).await.expect("a place");
    store.execute(acquire("a:task:0.1", None)).await.expect("renewal");
    assert_eq!(shown(store, name).await, [("a:task:0.1".to_owned(), Side::Permit, Some("export 1".to_owned()))]);
    assert!(SemaphoreCalls::release(store, name, "a:task:0.1").await.expect("release"));
    let granted = store.execute(acquire("b:task:0.2", told("export 2"))).await.expect("permit");
    assert!(matches!(granted, StoreReply::Permit(p) if p.fence.is_some()), "{granted:?}");
    let b = details_of(store, name, "b:task:0.2").await.expect("the second holder's details");
    assert_eq!(b.purpose.as_deref(), Some("export 2"));
    assert!(SemaphoreCalls::release(store, name, "b:task:0.2").await.expect("release"));
    store.execute(acquire("a:task:0.1", None)).await.expect("a holder telling nothing");
    assert_eq!(shown(store, name).await, [("a:task:0.1".to_owned(), Side::Permit, None)], "a release forgot them");
    assert!(SemaphoreCalls::release(store, name, "a:task:0.1").await.expect("release"));
}

/// An election's leader shows what it told with the call that began its term; a renewal keeps
/// it; a leader that told nothing (a grelmicro process) shows none; the next term shows its own.
pub async fn leaders_show_their_details<B>(store: &B)
where
    B: Inspect + tenure::backend::LeaderElectionBackend,
{
    use std::sync::Arc;
    use tenure::backend::LeaderElectionCalls;
    let name = "leader:scheduler";
    let attempt = |token: &str, details| {
        let metadata = Arc::new(tenure::Metadata::new());
        op(name, token, |key, token| StoreOp::LeaderAcquireOrRenew { key, token, lease: LEASE, metadata, details })
    };
    let shown = || async {
        let states = store.leader_states(vec![name.to_owned()]).await.expect("leader states");
        states.into_iter().next().map(|s| (s.record.holder, s.details.and_then(|d| d.purpose)))
    };
    let led = store.execute(attempt("w1", told("schedule"))).await.expect("a term");
    assert!(matches!(&led, StoreReply::Leader(r) if r.holder == "w1"), "{led:?}");
    assert_eq!(shown().await, Some(("w1".to_owned(), Some("schedule".to_owned()))));
    let first = store.leader_states(vec![name.to_owned()]).await.expect("states").remove(0).details;
    store.execute(attempt("w1", None)).await.expect("a renewal");
    let renewed = store.leader_states(vec![name.to_owned()]).await.expect("states").remove(0).details;
    assert_eq!(renewed, first, "a renewal keeps the term's details");
    let refused = store.execute(attempt("w2", told("other"))).await.expect("a follower's attempt");
    assert!(matches!(&refused, StoreReply::Leader(r) if r.holder == "w1"), "{refused:?}");
    assert_eq!(shown().await, Some(("w1".to_owned(), Some("schedule".to_owned()))), "a follower changes nothing");
    assert!(LeaderElectionCalls::release(store, name, "w1").await.expect("release"));
    store.execute(attempt("g", None)).await.expect("a leader telling nothing");
    assert_eq!(shown().await, Some(("g".to_owned(), None)), "a term whose leader told nothing shows none");
    assert!(LeaderElectionCalls::release(store, name, "g").await.expect("release"));
    store.execute(attempt("w2", told("next term"))).await.expect("the next term");
    assert_eq!(shown().await, Some(("w2".to_owned(), Some("next term".to_owned()))));
    assert!(LeaderElectionCalls::release(store, name, "w2").await.expect("release"));
}
