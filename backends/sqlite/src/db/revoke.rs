//! Revoking a lock (`tenure revoke`; the semantics are the core's `store::revoke`): in one
//! `BEGIN IMMEDIATE`, the live lease's token becomes a placeholder under the next fence, its
//! expiry kept. An acquire refused by a placeholder is answered `Revoked`, so that the revoked
//! holder is told why it lost its lease.

use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};
use tenure::backend::{holder_worker, refused};
use tenure_core::{BackendError, HolderDetails, Revocation, RevokeReason, StoreReply};

use super::{Db, error, fence_of};
use crate::time;

/// The statements, with the configured table name.
pub(super) struct Statements {
    live: String,
    revoke: String,
}

impl Statements {
    pub(super) fn new(locks: &str) -> Self {
        Self {
            live: format!(
                "SELECT token, fence, expire_at FROM {locks} WHERE name = ?1 AND token IS NOT NULL AND {} >= ?2",
                expiry!("expire_at")
            ),
            revoke: format!("UPDATE {locks} SET token = ?2, fence = fence + 1 WHERE name = ?1 RETURNING fence"),
        }
    }
}

/// The live lease of `name` at `now`: its token, fence and expiry.
fn live(
    conn: &Connection,
    sql: &Statements,
    name: &str,
    now: &str,
) -> Result<Option<(String, i64, String)>, BackendError> {
    conn.prepare_cached(&sql.live)
        .and_then(|mut s| s.query_row(params![name, now], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).optional())
        .map_err(|e| error("lock revoke", e))
}

impl Db {
    /// grelmicro's acquire; a refusal by a revocation's placeholder is answered `Revoked`.
    pub(crate) fn lock_acquire_answer(
        &mut self,
        name: &str,
        token: &str,
        lease: Duration,
        details: Option<&HolderDetails>,
    ) -> Result<StoreReply, BackendError> {
        self.immediate("lock acquire", |conn, sql, now| {
            let expire = time::to_text(super::expire_after(now, lease));
            let now = time::to_text(now);
            let fence: Option<i64> = conn
                .prepare_cached(&sql.lock_acquire)
                .and_then(|mut s| s.query_row(params![name, token, expire, now], |r| r.get(0)).optional())
                .map_err(|e| error("lock acquire", e))?;
            match fence {
                Some(f) => {
                    super::details::keep(conn, &sql.details, (name, f), &now, details)?;
                    Ok(StoreReply::Fence(Some(fence_of(name, f)?)))
                }
                // (refused: read only then, whether a placeholder refused it)
                None => Ok(refused(live(conn, &sql.revoke, name, &now)?.map(|(t, ..)| t).as_deref())),
            }
        })
    }

    pub(crate) fn lock_revoke(
        &mut self,
        name: &str,
        reason: &RevokeReason,
    ) -> Result<Option<Revocation>, BackendError> {
        self.immediate("lock revoke", |conn, sql, now| {
            let Some((token, fence, expire)) = live(conn, &sql.revoke, name, &time::to_text(now))? else {
                return Ok(None);
            };
            let ends = time::from_text(&expire, "expire_at")?;
            let left = Duration::from_micros(
                u64::try_from(ends.as_unix_micros().saturating_sub(now.as_unix_micros())).unwrap_or(0),
            );
            let current = fence_of(name, fence)?;
            let holder = holder_worker(&token).to_owned();
            if let Some((revoked_fence, _)) = RevokeReason::of_placeholder(&token) {
                return Ok(Some(Revocation { holder, revoked_fence, fence: current, left, already: true }));
            }
            let revoked_fence = current;
            let placeholder = reason.placeholder(revoked_fence);
            let fence: i64 = conn
                .prepare_cached(&sql.revoke.revoke)
                .and_then(|mut s| s.query_row(params![name, placeholder], |r| r.get(0)))
                .map_err(|e| error("lock revoke", e))?;
            Ok(Some(Revocation { holder, revoked_fence, fence: fence_of(name, fence)?, left, already: false }))
        })
    }
}
