//! Revoking a lock on PostgreSQL (`tenure revoke`; the semantics are the core's
//! `store::revoke`): one statement takes the next fence and puts a placeholder in the holder's
//! row, its expiry kept, so grelmicro's statements and Tenure's refuse the revoked holder until
//! then. The acquire statements answer a refusal by a placeholder with the placeholder.

use std::time::Duration;

use tenure::backend::holder_worker;
use tenure_core::{BackendError, REVOKED_PREFIX, Revocation, RevokeReason};

use crate::{PostgresBackend, record};
use tenure_store::record::fence;

/// Where a live placeholder is, in the row of `$1`, when `guard` holds (`FROM … WHERE …`), for
/// the acquire statements' refusals (measured with `EXPLAIN (ANALYZE, BUFFERS)`: with the guard `NOT EXISTS
/// (SELECT 1 FROM taken)` a grant or a renewal touches 8 buffers, as before revocations; a refusal
/// 9 instead of 6).
pub(crate) fn placeholder(locks: &str, guard: &str) -> String {
    format!(
        "FROM {locks} WHERE {guard} AND name = $1 AND expire_at >= NOW() \
         AND left(token, {}) = '{REVOKED_PREFIX}'",
        REVOKED_PREFIX.len()
    )
}

/// `$1` name, `$2` reason. No row if no lease is live; else the holder's token (read here, shown
/// only as its worker), its fence, the fence after the revocation (NULL if the lease was a
/// placeholder already, which is left alone) and the µs left.
pub(crate) fn revoke(locks: &str) -> String {
    format!(
        "WITH old AS ( \
             SELECT token, fence, expire_at FROM {locks} \
             WHERE name = $1 AND token IS NOT NULL AND expire_at >= NOW() FOR UPDATE), \
         revoked AS ( \
             UPDATE {locks} l SET token = '{REVOKED_PREFIX}' || o.fence || ':' || $2::text, fence = l.fence + 1 \
             FROM old o WHERE l.name = $1 AND left(o.token, {n}) <> '{REVOKED_PREFIX}' RETURNING l.fence) \
         SELECT o.token, o.fence, (SELECT fence FROM revoked), \
                GREATEST(0, floor(EXTRACT(EPOCH FROM (o.expire_at - NOW())) * 1000000))::bigint \
         FROM old o",
        n = REVOKED_PREFIX.len()
    )
}

impl PostgresBackend {
    pub(crate) async fn lock_revoke(
        &self,
        name: &str,
        reason: &RevokeReason,
    ) -> Result<Option<Revocation>, BackendError> {
        let session = self.session(name).await?;
        let text = revoke(&self.inner.options.lock_table);
        let reason = reason.as_str();
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 2] = [&name, &reason];
        let query = crate::connect::sent(session.client.query_opt(text.as_str(), &params));
        let Some(row) = self.bounded("lock revoke", name, query).await? else { return Ok(None) };
        let token: String = record::column(&row, 0, name, "token")?;
        let held: i64 = record::column(&row, 1, name, "fence")?;
        let after: Option<i64> = record::column(&row, 2, name, "fence")?;
        let left: i64 = record::column(&row, 3, name, "expiry")?;
        let left = Duration::from_micros(u64::try_from(left).unwrap_or(0));
        let (revoked_fence, already) = match RevokeReason::of_placeholder(&token) {
            Some((revoked, _)) => (revoked, true),
            None => (fence(name, held)?, false),
        };
        Ok(Some(Revocation {
            holder: holder_worker(&token).to_owned(),
            revoked_fence,
            fence: fence(name, after.unwrap_or(held))?,
            left,
            already,
        }))
    }
}
