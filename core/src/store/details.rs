//! Holder details: who holds a lease, for people — the holder's host, pid, program and purpose,
//! as text its driver writes once per holder ([`HolderDetails`]) — kept by a store beside a
//! grant, with the fence it was granted under and when ([`GrantDetails`]).
//!
//! grelmicro 0.44's layouts stay as they are: a store keeps the details in a record of its own,
//! written in the grant's atomic step and only when the fence is new (a renewal writes nothing; a
//! lock handed over from a queue gets its waiter's). A listing shows them only while the lease of
//! that fence is live, so a lease a grelmicro process took (which writes no details) never shows
//! another's.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use super::StoreKey;
use super::model::StoreModel;
use crate::error::{Error, SettingsError};
use crate::ids::{FencingToken, Token};
use crate::time::Timestamp;

/// The most bytes of a holder's details as stored.
pub const MAX_DETAILS_BYTES: usize = 2048;

/// The most bytes of a purpose.
pub const MAX_PURPOSE_BYTES: usize = 256;

/// A holder's details as a store keeps them: opaque text (the driver writes JSON), 1 to
/// [`MAX_DETAILS_BYTES`] bytes, no control characters.
#[derive(Clone, PartialEq, Eq)]
pub struct HolderDetails(Arc<str>);

impl HolderDetails {
    /// Validates `text`.
    pub fn new(text: &str) -> Result<Self, Error> {
        if text.is_empty() || text.len() > MAX_DETAILS_BYTES || text.chars().any(char::is_control) {
            return Err(SettingsError::field(
                "details",
                format!("holder details must have 1 to {MAX_DETAILS_BYTES} bytes and no control characters"),
            )
            .into());
        }
        Ok(Self(text.into()))
    }

    /// The text as stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for HolderDetails {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HolderDetails({:?})", &*self.0)
    }
}

/// Validates a purpose a user gives a holder ("nightly export"): 1 to [`MAX_PURPOSE_BYTES`]
/// bytes, not blank, no control characters.
pub fn check_purpose(purpose: &str) -> Result<(), Error> {
    if purpose.trim().is_empty() || purpose.len() > MAX_PURPOSE_BYTES || purpose.chars().any(char::is_control) {
        return Err(SettingsError::field(
            "purpose",
            format!(
                "purpose must have 1 to {MAX_PURPOSE_BYTES} bytes, not all blank, and no control characters \
                 (got {} bytes)",
                purpose.len()
            ),
        )
        .into());
    }
    Ok(())
}

/// The details of a shared name's holders (a read-write lock's readers and writer, a semaphore's
/// permits), by token: what a grant carrying details kept, and when. A renewal sends none and
/// keeps them; a grant that carries them replaces the token's; they go with the token's lease.
pub(super) type HeldDetails = BTreeMap<Token, (Timestamp, HolderDetails)>;

/// The details a store keeps for the grant of `fence`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrantDetails {
    /// The fence of the grant they describe.
    pub fence: FencingToken,
    /// When the store granted it.
    pub granted_at: Timestamp,
    /// Who holds.
    pub details: HolderDetails,
}

impl StoreModel {
    /// Keeps `details` for the grant of `fence` on `key` at `now`, unless that fence's are kept
    /// already (a renewal): what a store keeps is the details given with the first answer
    /// granting a fence.
    pub(super) fn note_details(
        &mut self,
        key: &(impl StoreKey + ?Sized),
        fence: FencingToken,
        details: Option<&HolderDetails>,
        now: Timestamp,
    ) {
        let Some(entry) = self.locks.get_mut(key.text()) else { return };
        if entry.details.as_ref().is_some_and(|kept| kept.fence == fence) {
            return;
        }
        entry.details = details.map(|details| GrantDetails { fence, granted_at: now, details: details.clone() });
    }

    /// Keeps `details` for `token`'s grant on the read-write lock or semaphore `key` at `now`
    /// (called after a grant; nothing when `details` is `None`, a renewal).
    pub(super) fn note_held_details(
        &mut self,
        key: &(impl StoreKey + ?Sized),
        token: &Token,
        details: Option<&HolderDetails>,
        now: Timestamp,
    ) {
        let Some(details) = details else { return };
        let kept = if let Some(entry) = self.rwlocks.get_mut(key.text()) {
            entry.details_mut()
        } else if let Some(entry) = self.semaphores.get_mut(key.text()) {
            entry.details_mut()
        } else {
            return;
        };
        kept.insert(token.clone(), (now, details.clone()));
    }

    /// The details `token` gave with its live lease on the read-write lock or semaphore `key`,
    /// with when it was granted.
    pub fn held_details(&self, key: &(impl StoreKey + ?Sized), token: &Token) -> Option<(Timestamp, &HolderDetails)> {
        let kept = match self.rwlocks.get(key.text()) {
            Some(entry) => entry.details(),
            None => self.semaphores.get(key.text())?.details(),
        };
        kept.get(token).map(|(at, details)| (*at, details))
    }

    /// Keeps `details` for the term of `fence` on the election `key` at `now`, unless that
    /// term's are kept already (a renewal): a term keeps what the call that began it gave.
    pub(super) fn note_leader_details(
        &mut self,
        key: &(impl StoreKey + ?Sized),
        fence: FencingToken,
        details: Option<&HolderDetails>,
        now: Timestamp,
    ) {
        if self.leader_details.get(key.text()).is_some_and(|kept| kept.fence == fence) {
            return;
        }
        match details {
            Some(details) => {
                let kept = GrantDetails { fence, granted_at: now, details: details.clone() };
                self.leader_details.insert(key.shared(), kept);
            }
            None => drop(self.leader_details.remove(key.text())),
        }
    }

    /// The details of the live leader of `key`, if it gave any with the call that began its term.
    pub fn leader_details(&self, key: &(impl StoreKey + ?Sized), now: Timestamp) -> Option<&GrantDetails> {
        let fence = self.leader_get(key, now)?.fence?;
        self.leader_details.get(key.text()).filter(|kept| kept.fence == fence)
    }

    /// The details of the live lease on `key`, if its holder gave any.
    pub fn lock_details(&self, key: &(impl StoreKey + ?Sized), now: Timestamp) -> Option<&GrantDetails> {
        let entry = self.locks.get(key.text())?;
        entry.lease.as_ref().filter(|lease| lease.expires_at >= now)?;
        entry.details.as_ref().filter(|kept| kept.fence == entry.fence)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_and_purposes_are_bounded() {
        assert!(HolderDetails::new("").is_err());
        assert!(HolderDetails::new("a\nb").is_err());
        assert!(HolderDetails::new(&"x".repeat(MAX_DETAILS_BYTES + 1)).is_err());
        assert_eq!(HolderDetails::new("{\"pid\":1}").expect("details").as_str(), "{\"pid\":1}");
        assert!(check_purpose("nightly export").is_ok());
        assert!(check_purpose(" ").is_err());
        assert!(check_purpose("a\u{7}").is_err());
        let long = check_purpose(&"p".repeat(10_000)).expect_err("too long").to_string();
        assert!(long.contains("256") && long.contains("10000"), "{long}");
    }
}
