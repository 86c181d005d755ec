//! Queued acquires: fair turns and a hand-off inside the store (DESIGN §4.5's mode (a); in mode
//! (b) a woken waiter still needs a round trip of its own).
//!
//! A queued acquire that is refused leaves a [`Waiter`] in the lock's queue, with a place of its
//! own that lasts `wait` from that attempt (each later attempt renews it). A queued release
//! frees the lock **and hands it to the oldest waiter whose place is still live**, with the next
//! fencing token and the lease that waiter asked for, counted from the release: the store
//! already holds the lock for that waiter, and the backend pushes a [`Grant`] to its `route`. The
//! waiter counts the lease from when it sent its first attempt the store answered "queued" —
//! before the grant, so its belief never outlives the store's lease.
//!
//! Turns are fair: while a live waiter is queued, a queued acquire by anyone else finds the lock
//! taken even when it is free (after a lapse, or a plain release that hands nothing over); it
//! then hands the lock to that waiter itself. A waiter that vanished is skipped once its place
//! lapses, so it blocks the queue no longer than its own place — or, if it was handed the lock
//! before that, no longer than the lease it asked for, as any holder that vanishes.
//!
//! Plain acquires and releases (grelmicro's, [`StoreModel::lock_acquire`] and
//! [`StoreModel::lock_release`]) ignore the queue: a grelmicro process may take a free lock ahead
//! of the queue, never one handed over (the store holds it), and its release hands nothing over —
//! the queue then moves at its head's next attempt.

use std::time::Duration;

use super::model::{LockEntry, LockLease, StoreModel};
use super::{GrantDetails, HolderDetails, StoreKey};
use crate::ids::{FencingToken, Token};
use crate::time::Timestamp;

/// A queued acquire's place in a lock's queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waiter {
    /// Whose place it is.
    pub token: Token,
    /// The lease it asked for: the lock's lease if it is handed the lock.
    pub lease: Duration,
    /// The last instant its place is kept (`wait` after its latest attempt).
    pub expires_at: Timestamp,
    /// Where a grant is pushed (the waiter's process), opaque to the store.
    pub route: u64,
    /// Who waits: kept beside the grant if the lock is handed over ([`HolderDetails`]).
    pub details: Option<HolderDetails>,
    /// When the place was taken (a renewal keeps it): how long it has waited, for people.
    pub since: Timestamp,
}

/// The lock handed to the head of its queue: the store holds it for `token` until `expires_at`;
/// the backend pushes it to `route`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The waiter now holding the lock.
    pub token: Token,
    /// Its fencing token.
    pub fence: FencingToken,
    /// The end of its lease in the store.
    pub expires_at: Timestamp,
    /// Where to push the grant.
    pub route: u64,
}

impl StoreModel {
    /// A queued acquire: takes or renews the lock as [`StoreModel::lock_acquire`] does when no
    /// live waiter of another token is ahead; else queues `token` (or renews its place, which
    /// keeps its position) for `wait`, and answers `None`. Finding the lock free behind a live
    /// waiter, it hands the lock to that waiter (the [`Grant`] to push).
    pub fn lock_acquire_queued(
        &mut self,
        key: &(impl StoreKey + ?Sized),
        token: &Token,
        (lease, wait): (Duration, Duration),
        (route, details): (u64, Option<&HolderDetails>),
        now: Timestamp,
    ) -> (Option<FencingToken>, Option<Grant>) {
        let lapsed_kept = bug!(self, HAND_OVER_LAPSED);
        let Some(entry) = self.locks.get_mut(key.text()) else {
            let fence = self.lock_acquire(key, token, lease, now);
            fence.inspect(|fence| self.note_details(key, *fence, details, now));
            return (fence, None);
        };
        entry.queue.retain(|w| w.expires_at >= now || lapsed_kept);
        let held = entry.lease.as_ref().filter(|held| held.expires_at >= now).map(|held| held.token == *token);
        let grant = match held {
            Some(true) => {
                entry.queue.retain(|w| w.token != *token);
                return (Some(take(entry, token, (lease, details), now)), None);
            }
            Some(false) => None,
            None => match entry.queue.front() {
                Some(head) if head.token != *token => hand_over(entry, now),
                _ => {
                    entry.queue.retain(|w| w.token != *token);
                    return (Some(take(entry, token, (lease, details), now)), None);
                }
            },
        };
        let mut place = Waiter {
            token: token.clone(),
            lease,
            expires_at: now + wait,
            route,
            details: details.cloned(),
            since: now,
        };
        match entry.queue.iter_mut().find(|w| w.token == *token) {
            Some(queued) => {
                // (a renewed place keeps its turn, and when it was first taken)
                place.since = queued.since;
                *queued = place;
            }
            None => entry.queue.push_back(place),
        }
        (None, grant)
    }

    /// A queued release: frees the lock if `token` holds a live lease (true), takes `token` out
    /// of the queue (a waiter giving up), and hands a free lock to the oldest live waiter.
    pub fn lock_release_queued(
        &mut self,
        key: &(impl StoreKey + ?Sized),
        token: &Token,
        now: Timestamp,
    ) -> (bool, Option<Grant>) {
        let lapsed_kept = bug!(self, HAND_OVER_LAPSED);
        let Some(entry) = self.locks.get_mut(key.text()) else { return (false, None) };
        entry.queue.retain(|w| (w.expires_at >= now || lapsed_kept) && w.token != *token);
        let released = match &entry.lease {
            Some(held) if held.expires_at >= now => {
                if held.token != *token {
                    return (false, None);
                }
                true
            }
            _ => false,
        };
        entry.lease = None;
        (released, hand_over(entry, now))
    }

    /// The live waiters queued on `key`, oldest first.
    pub fn lock_queue(&self, key: &(impl StoreKey + ?Sized), now: Timestamp) -> Vec<Waiter> {
        let Some(entry) = self.locks.get(key.text()) else { return Vec::new() };
        entry.queue.iter().filter(|w| w.expires_at >= now).cloned().collect()
    }
}

/// Gives the free lock to `token` for `lease` (a new fencing token, with the holder's
/// `details`), or renews it if `token` holds it.
fn take(
    entry: &mut LockEntry,
    token: &Token,
    (lease, details): (Duration, Option<&HolderDetails>),
    now: Timestamp,
) -> FencingToken {
    match &mut entry.lease {
        Some(held) if held.expires_at >= now && held.token == *token => held.expires_at = now + lease,
        vacant => {
            entry.fence = entry.fence.next();
            *vacant = Some(LockLease { token: token.clone(), expires_at: now + lease });
            entry.details =
                details.map(|details| GrantDetails { fence: entry.fence, granted_at: now, details: details.clone() });
        }
    }
    entry.fence
}

/// Hands the free lock to the head of the (pruned) queue, if anyone waits.
fn hand_over(entry: &mut LockEntry, now: Timestamp) -> Option<Grant> {
    let head = entry.queue.pop_front()?;
    let fence = take(entry, &head.token, (head.lease, head.details.as_ref()), now);
    Some(Grant { token: head.token, fence, expires_at: now + head.lease, route: head.route })
}
