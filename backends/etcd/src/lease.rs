//! etcd leases as the store uses them: one per contender's key, for whole seconds. A grant and a
//! revoke are writes (a consensus round and an fsync); a refresh (`LeaseKeepAlive`) is answered by
//! the cluster's leader without one. So a holder renewing for as long as before refreshes its
//! lease in place, and a lease whose key is gone (released, or never put by a refused attempt) is
//! kept spare for this store's next attempt, which refreshes it instead of granting one.
//!
//! A spare lease never carries a key: it is put back only once its key's deletion was confirmed,
//! or when no key was put on it. A refreshed lease ends no earlier than the refresh's arrival
//! plus its TTL, so a holder counting its validity from before the call never outlives it.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use tenure_core::BackendError;

use crate::EtcdBackend;
use crate::call::tokio_handle;

/// Spare leases kept at most per store; more are revoked.
const SPARES: usize = 32;

/// A lease the store granted: its id, TTL in seconds, and when it was last granted or
/// refreshed (the request's send: it lives at least `ttl` from then).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Leased {
    pub(crate) id: i64,
    pub(crate) ttl: i64,
    pub(crate) since: Instant,
}

impl Leased {
    fn until(&self) -> Instant {
        self.since + Duration::from_secs(u64::try_from(self.ttl).unwrap_or(0))
    }
}

/// The spare leases of a store, without keys.
#[derive(Default)]
pub(crate) struct Spares(Mutex<Vec<Leased>>);

impl Spares {
    /// A spare of `ttl` that may still live, the freshest first.
    pub(crate) fn take(&self, ttl: i64) -> Option<Leased> {
        let mut spares = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        spares.retain(|s| s.until() > now);
        let at = spares.iter().rposition(|s| s.ttl == ttl)?;
        Some(spares.swap_remove(at))
    }

    /// Keeps `lease` (keyless); false if there are enough already.
    fn put(&self, lease: Leased) -> bool {
        let mut spares = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if spares.len() >= SPARES {
            return false;
        }
        spares.push(lease);
        true
    }

    /// Every spare, for revoking at close.
    pub(crate) fn drain(&self) -> Vec<Leased> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }
}

/// etcd's TTL for `lease`: whole seconds, rounded up, at least 1 (the cluster may raise it to
/// its minimum).
pub(crate) fn ttl_of(lease: Duration) -> i64 {
    i64::try_from(lease.as_nanos().div_ceil(1_000_000_000)).unwrap_or(i64::MAX).max(1)
}

impl EtcdBackend {
    /// A keyless lease living at least `lease` from now: a spare refreshed, else a new grant.
    pub(crate) async fn lease_for(&self, lease: Duration, about: &str) -> Result<Leased, BackendError> {
        let ttl = ttl_of(lease);
        // A few spares at most: one that ended is skipped, one whose refresh failed is left to
        // end by itself, and a new lease is granted instead.
        for _ in 0..3 {
            let Some(spare) = self.state.spares.take(ttl) else { break };
            match self.refresh(spare.id, ttl, about).await {
                Ok(Some(refreshed)) => return Ok(refreshed),
                Ok(None) => {}
                Err(e) => {
                    tracing::debug!(error = %e, "etcd: a spare lease was not refreshed; granting one");
                    break;
                }
            }
        }
        let since = Instant::now();
        let id =
            self.run("granting a lease", about, move |client| async move { client.lease_grant(ttl).await }).await?;
        Ok(Leased { id, ttl, since })
    }

    /// Refreshes lease `id` of `ttl` to its whole TTL; none if it ended.
    pub(crate) async fn refresh(&self, id: i64, ttl: i64, about: &str) -> Result<Option<Leased>, BackendError> {
        let since = Instant::now();
        let alive = self
            .run("refreshing a lease", about, move |client| async move { client.lease_keep_alive(id).await })
            .await?;
        Ok(alive.then_some(Leased { id, ttl, since }))
    }

    /// `lease`, whose key is gone or was never put, as a spare; revoked if there are enough.
    pub(crate) fn give_back(&self, lease: Leased) {
        if self.watch.is_stopped() || !self.state.spares.put(lease) {
            self.revoke_later(lease.id);
        }
    }

    /// Revokes lease `id` in the background: only waste if it fails (it ends by itself).
    pub(crate) fn revoke_later(&self, id: i64) {
        let client = crate::client::Client::clone(&self.client);
        tokio_handle().spawn(async move {
            if let Err(e) = client.lease_revoke(id).await {
                tracing::debug!(error = %e, "etcd: a lease no longer used was not revoked (it ends by itself)");
            }
        });
    }

    /// A guard that revokes `id` (and so deletes its key) in the background if it is dropped
    /// armed: for a key nobody believes in yet, whose caller may be dropped mid-way.
    pub(crate) fn until_settled(&self, id: i64) -> Unsettled<'_> {
        Unsettled { store: self, id: Some(id) }
    }

    /// Revokes `id` now (its keys go with it); false if it had ended already.
    pub(crate) async fn revoke(&self, id: i64, about: &str) -> Result<bool, BackendError> {
        self.run("revoking a lease", about, move |client| async move { client.lease_revoke(id).await }).await
    }
}

/// See [`EtcdBackend::until_settled`].
pub(crate) struct Unsettled<'a> {
    store: &'a EtcdBackend,
    id: Option<i64>,
}

impl Unsettled<'_> {
    /// The outcome reached its caller: nothing to undo.
    pub(crate) fn settled(mut self) {
        self.id = None;
    }
}

impl Drop for Unsettled<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            self.store.revoke_later(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leased(id: i64, ttl: i64, age: Duration) -> Leased {
        Leased { id, ttl, since: Instant::now().checked_sub(age).expect("a past instant") }
    }

    #[test]
    fn a_spare_is_taken_for_its_ttl_only_the_freshest_first_and_never_once_it_may_have_ended() {
        let spares = Spares::default();
        assert!(spares.put(leased(1, 5, Duration::from_secs(3))));
        assert!(spares.put(leased(2, 5, Duration::ZERO)));
        assert!(spares.put(leased(3, 2, Duration::from_secs(3)))); // ended a second ago
        assert_eq!(spares.take(5).map(|l| l.id), Some(2));
        assert_eq!(spares.take(2), None, "an ended spare");
        assert_eq!(spares.take(7), None, "another TTL");
        assert_eq!(spares.take(5).map(|l| l.id), Some(1));
        assert_eq!(spares.take(5), None);
    }

    #[test]
    fn spares_are_bounded_and_drained_at_close() {
        let spares = Spares::default();
        for id in 0..64 {
            let kept = spares.put(leased(id, 10, Duration::ZERO));
            assert_eq!(kept, id < 32, "spare {id}");
        }
        assert_eq!(spares.drain().len(), 32);
        assert_eq!(spares.take(10), None);
    }

    #[test]
    fn ttls_are_whole_seconds_rounded_up() {
        assert_eq!(ttl_of(Duration::from_millis(1)), 1);
        assert_eq!(ttl_of(Duration::from_millis(1000)), 1);
        assert_eq!(ttl_of(Duration::from_millis(1001)), 2);
        assert_eq!(ttl_of(Duration::ZERO), 1);
        assert_eq!(ttl_of(Duration::MAX), i64::MAX);
    }
}
