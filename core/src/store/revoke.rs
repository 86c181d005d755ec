//! Revoking a lock (`tenure revoke`): the holder's lease is taken away and the fence advanced, so
//! that a resource checking fences refuses the revoked holder's writes at once.
//!
//! A revocation puts a **placeholder** in the holder's place — the token
//! `tenure-revoked:<revoked fence>:<reason>`, under the next fence, until the revoked lease would
//! have ended. Every renewal of the revoked holder is refused meanwhile (grelmicro's renewals
//! take a free lock again, so the lock cannot simply be freed), and the revoked holder's own
//! validity runs out no later than the placeholder does: nobody else holds the lock while the
//! revoked holder may still count on it. A store answers the revoked holder's renewal (and any
//! acquire refused by a placeholder) with [`StoreReply::Revoked`], naming the revoked fence, so
//! the holder whose fence it is sees a loss caused by the revocation, with its reason.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::model::{LockLease, StoreModel};
use super::{StoreKey, StoreReply};
use crate::error::{Error, SettingsError};
use crate::ids::{FencingToken, Token};
use crate::time::Timestamp;

/// What a placeholder token starts with; listings show its holder as `tenure-revoked`.
pub const REVOKED_PREFIX: &str = "tenure-revoked:";

/// The most bytes of a revocation's reason.
pub const MAX_REASON_BYTES: usize = 256;

/// Why an operator revoked a lease: 1 to 256 bytes, no control characters (it is stored in the
/// placeholder token and shown to the revoked holder).
#[derive(Clone, PartialEq, Eq)]
pub struct RevokeReason(Arc<str>);

impl RevokeReason {
    /// The reason given when none is.
    pub const DEFAULT: &str = "revoked by an operator";

    /// Validates `reason`.
    pub fn new(reason: &str) -> Result<Self, Error> {
        if reason.trim().is_empty() || reason.len() > MAX_REASON_BYTES || reason.chars().any(char::is_control) {
            return Err(SettingsError::field(
                "reason",
                format!(
                    "a revocation's reason has 1 to {MAX_REASON_BYTES} bytes (this one has {}) and no control \
                     characters (no newline or tab); the default is {:?}",
                    reason.len(),
                    Self::DEFAULT
                ),
            )
            .into());
        }
        Ok(Self(reason.into()))
    }

    /// The reason's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The placeholder token put in the place of the holder of `fence`.
    pub fn placeholder(&self, fence: FencingToken) -> String {
        format!("{REVOKED_PREFIX}{}:{}", fence.get(), self.0)
    }

    /// The revoked fence and the reason of a placeholder token, or `None` for any other token.
    pub fn of_placeholder(token: &str) -> Option<(FencingToken, Self)> {
        let (fence, reason) = token.strip_prefix(REVOKED_PREFIX)?.split_once(':')?;
        let fence = FencingToken::new(fence.parse().ok().filter(|&f| f > 0)?);
        Some((fence, Self::new(reason).ok()?))
    }
}

impl Default for RevokeReason {
    fn default() -> Self {
        Self(Self::DEFAULT.into())
    }
}

impl fmt::Debug for RevokeReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for RevokeReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a revocation did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Revocation {
    /// The revoked holder's worker (the part of its token before the first `:`), never its token;
    /// `tenure-revoked` when the lease was a placeholder already (nothing was done).
    pub holder: String,
    /// The revoked lease's fence.
    pub revoked_fence: FencingToken,
    /// The fence the placeholder holds: the last one issued for the name. The next holder's is
    /// above it.
    pub fence: FencingToken,
    /// How long until the placeholder ends and the lock is free again.
    pub left: Duration,
    /// Whether the lease was a placeholder already (an earlier revocation): nothing changed.
    pub already: bool,
}

impl StoreModel {
    /// Revokes the live lease of lock `key`: a placeholder of the next fence takes its place until
    /// it would have ended. `None` when no lease is live.
    pub fn lock_revoke(
        &mut self,
        key: &(impl StoreKey + ?Sized),
        reason: &RevokeReason,
        now: Timestamp,
    ) -> Option<Revocation> {
        let entry = self.locks.get_mut(key.text())?;
        let held = entry.lease.as_mut().filter(|held| held.expires_at >= now)?;
        let left = held.expires_at.saturating_duration_since(now);
        if let Some((revoked_fence, _)) = RevokeReason::of_placeholder(held.token.as_str()) {
            let holder = REVOKED_PREFIX.trim_end_matches(':').to_owned();
            return Some(Revocation { holder, revoked_fence, fence: entry.fence, left, already: true });
        }
        let revoked_fence = entry.fence;
        let holder = crate::ids::holder_worker(held.token.as_str()).to_owned();
        entry.fence = entry.fence.next();
        // (a placeholder is a valid token: at most 15 + 20 + 1 + 256 bytes, no control characters)
        let placeholder = Token::new(&reason.placeholder(revoked_fence)).ok()?;
        *held = LockLease { token: placeholder, expires_at: held.expires_at };
        Some(Revocation { holder, revoked_fence, fence: entry.fence, left, already: false })
    }

    /// The answer to a refused acquire of `key` when a live placeholder refuses it: the revoked
    /// fence and the reason. `None` when no placeholder holds the lock.
    pub(super) fn lock_revoked(&self, key: &(impl StoreKey + ?Sized), now: Timestamp) -> Option<StoreReply> {
        let held = self.locks.get(key.text())?.lease.as_ref().filter(|held| held.expires_at >= now)?;
        let (fence, reason) = RevokeReason::of_placeholder(held.token.as_str())?;
        Some(StoreReply::Revoked { fence, reason })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_bounded_and_placeholders_read_back() {
        assert!(RevokeReason::new("").is_err());
        assert!(RevokeReason::new("  ").is_err());
        assert!(RevokeReason::new("a\nb").is_err());
        let long = "x".repeat(MAX_REASON_BYTES + 1);
        let e = RevokeReason::new(&long).expect_err("too long").to_string();
        assert!(e.contains("257") && e.contains("256") && e.contains(RevokeReason::DEFAULT), "{e}");
        let reason = RevokeReason::new("stuck: job 42").expect("a reason");
        let placeholder = reason.placeholder(FencingToken::new(7));
        assert_eq!(placeholder, "tenure-revoked:7:stuck: job 42");
        let (fence, back) = RevokeReason::of_placeholder(&placeholder).expect("a placeholder");
        assert_eq!((fence.get(), back), (7, reason));
        assert!(RevokeReason::of_placeholder("worker:task:1.ab").is_none());
        assert!(RevokeReason::of_placeholder("tenure-revoked:x:y").is_none());
    }
}
