//! Revoking a lock (`tenure revoke`; the core's `store::revoke`), written once for every store.

use std::time::{Duration, Instant};

use tenure::KeepAliveEnd;
use tenure_core::{Key, LossCause, Revocation, RevokeReason, StoreOp, StoreReply};
use tenure_tokio::{Lock, Tokio};

use crate::{Harness, Store};

/// A resource that refuses a write under a fence below the highest it was told (a fenced
/// resource: spec §5.1's reason for fences).
#[derive(Default)]
struct Fenced {
    highest: u64,
}

impl Fenced {
    fn write(&mut self, fence: u64) -> bool {
        if fence < self.highest {
            return false;
        }
        self.highest = fence;
        true
    }
}

async fn revoke(store: &Store, key: &str, reason: &RevokeReason) -> Option<Revocation> {
    let op = StoreOp::LockRevoke { key: Key::parse(key).expect("a key"), reason: reason.clone() };
    match store.lock.execute(op).await {
        Ok(StoreReply::Revocation(revocation)) => revocation,
        other => panic!("{key}: a revocation was answered {other:?}"),
    }
}

fn lock(store: &Store, name: &str, lease: Duration) -> Lock {
    Lock::builder(name, Tokio::current())
        .shared_backend(store.lock.clone())
        .lease_duration(lease)
        .retry_interval(Duration::from_millis(50))
        .worker(tenure_core::WorkerId::new("alpha").expect("a worker"))
        .env_load(false)
        .build()
        .expect("a lock")
}

/// A revoked holder's next renewal finds its lease gone, told why; the fence advanced past its
/// own, so a fenced resource told the new fence refuses its writes; nobody holds the lock until
/// the revoked lease would have ended, then the next holder's fence is above the revocation's. A
/// second revocation changes nothing, and a free name has nothing to revoke. A lease kept alive
/// is lost at its next renewal with the cause `revoked` and the reason.
pub async fn a_revoked_lease_is_lost_fenced_out_and_held_until_it_would_have_ended(h: &Harness) {
    let store = h.store().await;
    let reason = RevokeReason::new("stuck on job 42").expect("a reason");
    assert_eq!(revoke(&store, "lock:nobody", &reason).await, None, "{}: nothing to revoke", h.name);

    let lease = Duration::from_secs(3);
    let mut held = lock(&store, "job", lease).acquire().await.expect("held");
    let fence = held.fencing_token().get();
    let mut resource = Fenced::default();
    assert!(resource.write(fence));
    let revoked = revoke(&store, "lock:job", &reason).await.expect("revoked");
    assert_eq!((revoked.holder.as_str(), revoked.revoked_fence.get(), revoked.already), ("alpha", fence, false));
    assert!(store.fences.next_after(fence, revoked.fence.get()), "{}: the fence advanced: {revoked:?}", h.name);
    assert!(revoked.left <= lease && revoked.left > Duration::ZERO, "{}: {revoked:?}", h.name);
    // (what a resource is told, or reads from the store, when a lease is revoked)
    assert!(resource.write(revoked.fence.get()) && !resource.write(fence), "the revoked holder is fenced out");

    let again = revoke(&store, "lock:job", &reason).await.expect("still the placeholder");
    assert!(again.already && again.holder == "tenure-revoked" && again.revoked_fence.get() == fence, "{again:?}");
    let rival = lock(&store, "job", lease);
    assert!(rival.acquire_nowait().await.is_err(), "{}: the placeholder holds the lock", h.name);

    let e = held.extend().await.expect_err("revoked");
    assert_eq!(e.loss_cause(), Some(LossCause::Revoked(reason.clone())), "{}: {e}", h.name);
    assert!(e.to_string().contains("stuck on job 42") && e.to_string().contains("revoked"), "{e}");

    // Free again once the revoked lease would have ended, under a fence above the revocation's.
    let start = Instant::now();
    let next = loop {
        match rival.acquire_nowait().await {
            Ok(next) => break next,
            Err(_) if start.elapsed() < Duration::from_secs(30) => h.advance(Duration::from_millis(50)).await,
            Err(e) => panic!("{}: the lock never came free after the revocation: {e}", h.name),
        }
    };
    assert!(next.fencing_token().get() > revoked.fence.get(), "{}", h.name);
    assert!(resource.write(next.fencing_token().get()), "the next holder writes");
    next.release().await.expect("released");

    // A kept lease: lost at its next renewal (a third of the lease), with the cause and reason.
    let kept = lock(&store, "kept", lease).acquire().await.expect("held").keep_alive(Duration::MAX);
    revoke(&store, "lock:kept", &reason).await.expect("revoked");
    tokio::time::timeout(Duration::from_secs(30), kept.lost()).await.expect("lost at the next renewal");
    assert_eq!(kept.ended(), Some(KeepAliveEnd::Revoked(reason)), "{}", h.name);
}
