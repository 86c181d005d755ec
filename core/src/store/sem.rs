//! Fenced semaphores in the reference store: at most `permits` holders of one name at once, each
//! with its own lease and a fencing token that strictly increases per name across every permit,
//! granted in arrival order among the waiters that keep a place.
//!
//! The permit count is part of the stored state: it is set by the first acquire of a name that
//! nobody holds or waits for, and an acquire asking another count while anyone holds or waits is
//! refused with the stored count (the caller reports the mismatch; a second, silent semaphore
//! under the same name would break the bound). Every call first reaps what expired before `now`
//! (a lease or a place is live up to and including its expiry instant, as a lock's is).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::StoreModel;
use super::details::HeldDetails;
use super::model::StoreKey;
use crate::ids::{FencingToken, Token};
use crate::time::Timestamp;

/// A store's answer to a semaphore acquire: the fencing token granted (`None`: every permit is
/// taken, or waiters ahead come first, or the counts differ) and the permit count the store keeps
/// for the name after the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PermitAnswer {
    /// The fencing token of the permit granted or renewed.
    pub fence: Option<FencingToken>,
    /// The permit count stored for the name (equal to the one asked unless it differs).
    pub permits: u32,
}

/// A point-in-time view of one semaphore.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SemState {
    /// The stored permit count (0 for a name nobody holds or waits for, whose count is not
    /// fixed).
    pub permits: u32,
    /// How many holders have live leases.
    pub holders: usize,
    /// How many waiters keep a live place.
    pub waiting: usize,
    /// The last fencing token issued for the name (0 if none was).
    pub fence: u64,
}

/// One semaphore as the model keeps it.
#[derive(Clone, Debug, Default)]
pub(super) struct SemEntry {
    permits: u32,
    fence: u64,
    /// Live holders: the end of each lease and its fencing token.
    holders: BTreeMap<Token, (Timestamp, FencingToken)>,
    /// Waiters keeping a place, oldest first, with the end of each place.
    waiters: Vec<(Token, Timestamp)>,
    /// What the holders told with their grants.
    details: HeldDetails,
}

impl SemEntry {
    fn reap(&mut self, now: Timestamp) {
        self.holders.retain(|_, (expires_at, _)| *expires_at >= now);
        self.waiters.retain(|(_, expires_at)| *expires_at >= now);
        self.details.retain(|token, _| self.holders.contains_key(token));
    }

    pub(super) fn details(&self) -> &HeldDetails {
        &self.details
    }

    pub(super) fn details_mut(&mut self) -> &mut HeldDetails {
        &mut self.details
    }

    fn state(&self) -> SemState {
        let permits = if self.holders.is_empty() && self.waiters.is_empty() { 0 } else { self.permits };
        SemState { permits, holders: self.holders.len(), waiting: self.waiters.len(), fence: self.fence }
    }
}

impl StoreModel {
    fn sem(&mut self, key: &(impl StoreKey + ?Sized), now: Timestamp) -> &mut SemEntry {
        if !self.semaphores.contains_key(key.text()) {
            self.semaphores.insert(key.shared(), SemEntry::default());
        }
        let entry = self.semaphores.get_mut(key.text()).expect("the entry was made above if it was absent");
        entry.reap(now);
        entry
    }

    fn sem_known(&mut self, key: &(impl StoreKey + ?Sized), now: Timestamp) -> Option<&mut SemEntry> {
        let entry = self.semaphores.get_mut(key.text())?;
        entry.reap(now);
        Some(entry)
    }

    /// A permit of `key` for `token`, for `lease`: renewed (same fencing token) if `token`
    /// holds one; granted with the next fencing token if a permit is free for it — fewer than
    /// `permits` holders and fewer free permits taken by the waiters ahead of it; else refused,
    /// keeping or refreshing `token`'s place in line for `wait` if one is given. Refused with
    /// the stored count if the name is held or waited for under another count.
    pub fn sem_acquire(
        &mut self,
        key: &(impl StoreKey + ?Sized),
        token: &Token,
        lease: Duration,
        permits: u32,
        wait: Option<Duration>,
        now: Timestamp,
    ) -> PermitAnswer {
        let over_grant = bug!(self, SEM_OVER_GRANT);
        let entry = self.sem(key, now);
        if entry.holders.is_empty() && entry.waiters.is_empty() {
            entry.permits = permits;
        }
        let refused = |entry: &SemEntry| PermitAnswer { fence: None, permits: entry.permits };
        if entry.permits != permits {
            return refused(entry);
        }
        let expires_at = now + lease;
        if let Some((held_until, fence)) = entry.holders.get_mut(token) {
            *held_until = expires_at;
            return PermitAnswer { fence: Some(*fence), permits };
        }
        let place = entry.waiters.iter().position(|(waiter, _)| waiter == token);
        let ahead = place.unwrap_or(entry.waiters.len());
        let taken = entry.holders.len().saturating_add(ahead);
        let free = usize::try_from(permits).unwrap_or(usize::MAX);
        if taken < free || (over_grant && taken == free) {
            if let Some(place) = place {
                entry.waiters.remove(place);
            }
            entry.fence = entry.fence.saturating_add(1);
            let fence = FencingToken::new(entry.fence);
            entry.holders.insert(token.clone(), (expires_at, fence));
            return PermitAnswer { fence: Some(fence), permits };
        }
        match (wait, place) {
            (Some(wait), Some(place)) => entry.waiters[place].1 = now + wait,
            (Some(wait), None) => entry.waiters.push((token.clone(), now + wait)),
            (None, _) => {}
        }
        refused(entry)
    }

    /// Drops `token`'s permit and its place in line; true iff it held a live permit.
    pub fn sem_release(&mut self, key: &(impl StoreKey + ?Sized), token: &Token, now: Timestamp) -> bool {
        let Some(entry) = self.sem_known(key, now) else { return false };
        entry.waiters.retain(|(waiter, _)| waiter != token);
        entry.details.remove(token);
        entry.holders.remove(token).is_some()
    }

    /// Whether `token` holds a live permit of `key`.
    pub fn sem_owned(&mut self, key: &(impl StoreKey + ?Sized), token: &Token, now: Timestamp) -> bool {
        self.sem_known(key, now).is_some_and(|entry| entry.holders.contains_key(token))
    }

    /// The semaphore's state at `now` (an untouched name: nothing held, no count fixed).
    pub fn sem_state(&mut self, key: &(impl StoreKey + ?Sized), now: Timestamp) -> SemState {
        self.sem_known(key, now).map_or_else(SemState::default, |entry| entry.state())
    }

    /// The live holders of `key` at `now` and their fencing tokens, without changing anything
    /// (for invariant checks).
    pub fn sem_holders(&self, key: &(impl StoreKey + ?Sized), now: Timestamp) -> Vec<(Token, FencingToken)> {
        let Some(entry) = self.semaphores.get(key.text()) else { return Vec::new() };
        entry.holders.iter().filter(|(_, (at, _))| *at >= now).map(|(t, (_, f))| (t.clone(), *f)).collect()
    }

    /// Reaps every semaphore at `now` (what the SQL stores' cleanup does on close).
    pub(super) fn sem_reap_all(&mut self, now: Timestamp) {
        for entry in self.semaphores.values_mut() {
            entry.reap(now);
        }
    }
}

/// The semaphores of a model, by key.
pub(super) type Semaphores = BTreeMap<Arc<str>, SemEntry>;
