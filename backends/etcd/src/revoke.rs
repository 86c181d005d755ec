//! Revoking a lock on etcd (`tenure revoke`; the semantics are the core's `store::revoke`). The
//! holder's key keeps its place (its create revision) but becomes a placeholder, moved onto a new
//! lease that lives as long as the holder's had left; then the holder's own lease is revoked, so
//! its renewals fail and an `etcdctl lock` holder's session ends. The fence the revocation
//! advances to is the revision of its write: every later holder's key is created after it.

use std::time::Duration;

use tenure::backend::holder_worker;
use tenure_core::{BackendError, BackendErrorKind, Revocation, RevokeReason};

use crate::client::{Compare, CompareOp, PutOptions, Txn, TxnOp};
use crate::{EtcdBackend, fence};

impl EtcdBackend {
    pub(crate) async fn lock_revoke(
        &self,
        name: &str,
        reason: &RevokeReason,
    ) -> Result<Option<Revocation>, BackendError> {
        let contenders = self.contenders(self.contenders_prefix(name), name).await?;
        let Some(holder) = contenders.first() else { return Ok(None) };
        let value = String::from_utf8_lossy(holder.value()).into_owned();
        let lease = holder.lease();
        let remaining = self
            .run("reading a lease", name, move |client| async move { Ok(client.lease_time_to_live(lease).await?.ttl) })
            .await?;
        if remaining < 0 {
            return Ok(None); // its lease ended: the key is going
        }
        // (etcd counts whole seconds: one more, so the placeholder never ends first)
        let ttl = remaining + 1;
        let left = Duration::from_secs(u64::try_from(ttl).unwrap_or(1));
        if let Some((revoked_fence, _)) = RevokeReason::of_placeholder(&value) {
            let (holder, fence) = (holder_worker(&value).to_owned(), fence(holder.mod_revision())?);
            return Ok(Some(Revocation { holder, revoked_fence, fence, left, already: true }));
        }
        let revoked_fence = fence(holder.create_revision())?;
        let placeholder = reason.placeholder(revoked_fence);
        let id = self.run("granting a lease", name, move |client| async move { client.lease_grant(ttl).await }).await?;
        let key = holder.key().to_vec();
        let txn = Txn::new()
            .when([Compare::mod_revision(key.clone(), CompareOp::Equal, holder.mod_revision())])
            .and_then([TxnOp::put(key, placeholder, Some(PutOptions::new().with_lease(id)))]);
        let written = self.run("revoking", name, move |client| async move { client.txn(txn).await }).await;
        let response = match written {
            Ok(response) if response.succeeded() => response,
            other => {
                self.revoke_later(id);
                other?;
                return Err(BackendError::new(
                    BackendErrorKind::Rejected,
                    format!("{name}: the holder changed while it was being revoked; revoke it again"),
                ));
            }
        };
        // The key is on the new lease now: ending the old one deletes nothing of it.
        if let Err(e) = self.revoke(lease, name).await {
            tracing::debug!(name, error = %e, "etcd: the revoked holder's lease was not ended; it ends by itself");
        }
        let holder = holder_worker(&value).to_owned();
        Ok(Some(Revocation { holder, revoked_fence, fence: fence(response.revision())?, left, already: false }))
    }
}
