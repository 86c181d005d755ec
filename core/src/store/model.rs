//! The reference lease store (spec §5.1–5.4, §6.1), judged by a clock passed in.
//!
//! Boundaries, exactly as the spec has them: a lock lease is live up to and including its expiry
//! instant; a leader record is expired at exactly `renewed_at + lease`; a schedule claim wins only
//! with a strictly later `due`. Fencing counters start at 1, only grow, and survive release and
//! [`StoreModel::vacate_expired`] (unlike grelmicro's memory adapter, which resets them on close).

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use super::queue::Waiter;
use super::{StoreOp, StoreReply};
use crate::ids::{FencingToken, Key, Token};
use crate::record::{LeaderRecord, Metadata};
use crate::time::{Timestamp, WallTime};

/// A key as the model accepts it: a [`Key`] (whose text is shared, not copied) or a plain `str`
/// already carrying its prefix, as backends receive names (`"lock:cart"`).
pub trait StoreKey {
    /// The key text.
    fn text(&self) -> &str;
    /// The key text to keep in a new entry.
    fn shared(&self) -> Arc<str>;
}

impl StoreKey for Key {
    fn text(&self) -> &str {
        self.as_str()
    }

    fn shared(&self) -> Arc<str> {
        Key::shared(self).clone()
    }
}

impl StoreKey for str {
    fn text(&self) -> &str {
        self
    }

    fn shared(&self) -> Arc<str> {
        Arc::from(self)
    }
}

/// A lock lease as the model holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockLease {
    /// The holder.
    pub token: Token,
    /// The last instant at which the lease is live.
    pub expires_at: Timestamp,
}

#[derive(Clone, Debug)]
pub(super) struct LockEntry {
    /// The last fencing token issued for the name.
    pub(super) fence: FencingToken,
    pub(super) lease: Option<LockLease>,
    /// Waiters of queued acquires, oldest first ([`super::queue`]).
    pub(super) queue: VecDeque<Waiter>,
    /// The details of the last grant whose holder gave any ([`super::details`]).
    pub(super) details: Option<super::GrantDetails>,
}

#[derive(Clone, Debug)]
struct LeaderEntry {
    holder: Token,
    lease: Duration,
    acquired_at: Timestamp,
    renewed_at: Timestamp,
    transitions: u64,
    metadata: Arc<Metadata>,
    fence: FencingToken,
}

impl LeaderEntry {
    fn is_live(&self, now: Timestamp) -> bool {
        now < self.renewed_at + self.lease
    }
}

/// The reference semantics of a lease store: a lock table with per-name fencing counters,
/// leader records and schedule claims.
#[derive(Clone, Debug)]
pub struct StoreModel {
    pub(super) locks: BTreeMap<Arc<str>, LockEntry>,
    leaders: BTreeMap<Arc<str>, LeaderEntry>,
    /// The last term's fence of each election, kept when its record goes (as lock fences are).
    leader_fences: BTreeMap<Arc<str>, FencingToken>,
    /// The details of each term's leader, by key: those given with the call that began it.
    pub(super) leader_details: BTreeMap<Arc<str>, super::GrantDetails>,
    schedules: BTreeMap<Arc<str>, f64>,
    pub(super) rwlocks: super::rw::RwLocks,
    pub(super) semaphores: super::sem::Semaphores,
    wall_at_zero: WallTime,
    #[cfg(feature = "bug-injection")]
    pub(super) bugs: crate::bugs::Bugs,
}

impl StoreModel {
    /// An empty store whose clock reads `wall_at_zero` at [`Timestamp::ZERO`]; leader records
    /// report calendar times from it, while every liveness decision uses the monotonic clock.
    pub fn new(wall_at_zero: WallTime) -> Self {
        Self {
            locks: BTreeMap::new(),
            leaders: BTreeMap::new(),
            leader_fences: BTreeMap::new(),
            leader_details: BTreeMap::new(),
            schedules: BTreeMap::new(),
            rwlocks: BTreeMap::new(),
            semaphores: BTreeMap::new(),
            wall_at_zero,
            #[cfg(feature = "bug-injection")]
            bugs: crate::bugs::Bugs::NONE,
        }
    }

    /// Switches on deliberate defects, for the simulator to catch.
    #[cfg(feature = "bug-injection")]
    pub fn inject(&mut self, bugs: crate::bugs::Bugs) {
        self.bugs = bugs;
    }

    /// Runs `op` at `now`.
    pub fn apply(&mut self, op: &StoreOp, now: Timestamp) -> StoreReply {
        match op {
            // (an acquire refused by a revocation's placeholder is told so: StoreReply::Revoked)
            StoreOp::LockAcquire { key, token, lease, details } => match self.lock_acquire(key, token, *lease, now) {
                None => self.lock_revoked(key, now).unwrap_or(StoreReply::Fence(None)),
                Some(fence) => {
                    self.note_details(key, fence, details.as_ref(), now);
                    StoreReply::Fence(Some(fence))
                }
            },
            // The model pushes nothing: a grant it hands over reaches its waiter at the waiter's
            // next attempt (which renews it).
            StoreOp::LockAcquireQueued { key, token, lease, wait, details } => {
                match self.lock_acquire_queued(key, token, (*lease, *wait), (0, details.as_ref()), now).0 {
                    None => self.lock_revoked(key, now).unwrap_or(StoreReply::Fence(None)),
                    granted => StoreReply::Fence(granted),
                }
            }
            StoreOp::LockRevoke { key, reason } => StoreReply::Revocation(self.lock_revoke(key, reason, now)),
            StoreOp::LockRelease { key, token } => StoreReply::Flag(self.lock_release(key, token, now)),
            StoreOp::LockLocked { key } => StoreReply::Flag(self.lock_locked(key, now)),
            StoreOp::LockOwned { key, token } => StoreReply::Flag(self.lock_owned(key, token, now)),
            StoreOp::LeaderAcquireOrRenew { key, token, lease, metadata, details } => {
                let record = self.leader_acquire_or_renew(key, token, *lease, metadata, now);
                if let (true, Some(fence)) = (record.holder == token.as_str(), record.fence) {
                    self.note_leader_details(key, fence, details.as_ref(), now);
                }
                StoreReply::Leader(record)
            }
            StoreOp::LeaderRelease { key, token } => StoreReply::Flag(self.leader_release(key, token, now)),
            StoreOp::LeaderGet { key } => StoreReply::MaybeLeader(self.leader_get(key, now)),
            StoreOp::ScheduleClaim { key, due } => StoreReply::Flag(self.schedule_claim(key, *due)),
            StoreOp::ScheduleLastFired { key } => StoreReply::LastFired(self.schedule_last_fired(key)),
            StoreOp::RwAcquireRead { key, token, lease, details } => {
                let generation = self.rw_acquire_read(key, token, *lease, now);
                if generation.is_some() {
                    self.note_held_details(key, token, details.as_ref(), now);
                }
                StoreReply::Fence(generation)
            }
            StoreOp::RwAcquireWrite { key, token, lease, intent, details } => {
                let grant = self.rw_acquire_write(key, token, *lease, *intent, now);
                if grant.is_some() {
                    self.note_held_details(key, token, details.as_ref(), now);
                }
                StoreReply::Write(grant)
            }
            StoreOp::RwReleaseRead { key, token } => StoreReply::Flag(self.rw_release_read(key, token, now)),
            StoreOp::RwReleaseWrite { key, token } => StoreReply::Flag(self.rw_release_write(key, token, now)),
            StoreOp::RwCancelIntent { key, token } => StoreReply::Flag(self.rw_cancel_intent(key, token, now)),
            StoreOp::RwDowngrade { key, token, lease } => StoreReply::Fence(self.rw_downgrade(key, token, *lease, now)),
            StoreOp::RwState { key } => StoreReply::Rw(self.rw_state(key, now)),
            StoreOp::RwOwnedRead { key, token } => StoreReply::Flag(self.rw_owned_read(key, token, now)),
            StoreOp::RwOwnedWrite { key, token } => StoreReply::Flag(self.rw_owned_write(key, token, now)),
            StoreOp::SemAcquire { key, token, lease, permits, wait, details } => {
                let answer = self.sem_acquire(key, token, *lease, *permits, *wait, now);
                if answer.fence.is_some() {
                    self.note_held_details(key, token, details.as_ref(), now);
                }
                StoreReply::Permit(answer)
            }
            StoreOp::SemRelease { key, token } => StoreReply::Flag(self.sem_release(key, token, now)),
            StoreOp::SemOwned { key, token } => StoreReply::Flag(self.sem_owned(key, token, now)),
            StoreOp::SemState { key } => StoreReply::Sem(self.sem_state(key, now)),
        }
    }

    /// Takes the lock if it is free (absent, released or expired before `now`) — with a new
    /// fencing token — or renews it if `token` holds it; `None` if another token holds it.
    pub fn lock_acquire(
        &mut self,
        key: &(impl StoreKey + ?Sized),
        token: &Token,
        lease: Duration,
        now: Timestamp,
    ) -> Option<FencingToken> {
        let expires_at = now + lease;
        let Some(entry) = self.locks.get_mut(key.text()) else {
            let lease = Some(LockLease { token: token.clone(), expires_at });
            self.locks.insert(
                key.shared(),
                LockEntry { fence: FencingToken::FIRST, lease, queue: VecDeque::new(), details: None },
            );
            return Some(FencingToken::FIRST);
        };
        match &mut entry.lease {
            Some(held) if held.expires_at >= now => {
                if held.token != *token {
                    return None;
                }
                held.expires_at = expires_at;
            }
            vacant => {
                entry.fence = entry.fence.next();
                *vacant = Some(LockLease { token: token.clone(), expires_at });
            }
        }
        Some(entry.fence)
    }

    /// Frees the lock if `token` holds a live lease; an expired lease is vacated too, but the
    /// answer is then false.
    pub fn lock_release(&mut self, key: &(impl StoreKey + ?Sized), token: &Token, now: Timestamp) -> bool {
        let Some(entry) = self.locks.get_mut(key.text()) else { return false };
        match &entry.lease {
            Some(held) if held.expires_at >= now => {
                if held.token != *token {
                    return false;
                }
                entry.lease = None;
                if bug!(self, FENCE_RESET_ON_RELEASE) {
                    self.locks.remove(key.text());
                }
                true
            }
            _ => {
                entry.lease = None;
                false
            }
        }
    }

    /// Whether any token holds a live lease.
    pub fn lock_locked(&self, key: &(impl StoreKey + ?Sized), now: Timestamp) -> bool {
        self.lock_lease(key, now).is_some()
    }

    /// Whether `token` holds a live lease.
    pub fn lock_owned(&self, key: &(impl StoreKey + ?Sized), token: &Token, now: Timestamp) -> bool {
        self.lock_lease(key, now).is_some_and(|lease| lease.token == *token)
    }

    /// The live lease on `key`, if any.
    pub fn lock_lease(&self, key: &(impl StoreKey + ?Sized), now: Timestamp) -> Option<&LockLease> {
        let entry = self.locks.get(key.text())?;
        entry.lease.as_ref().filter(|lease| lease.expires_at >= now)
    }

    /// The calendar time of `t` by this store's clock.
    pub fn wall_time(&self, t: Timestamp) -> WallTime {
        self.wall_at_zero.saturating_add(Duration::from_nanos(t.as_nanos()))
    }

    /// The last fencing token issued for `key`.
    pub fn last_fence(&self, key: &(impl StoreKey + ?Sized)) -> Option<FencingToken> {
        self.locks.get(key.text()).map(|e| e.fence)
    }

    /// Acquires or renews leadership (spec §5.2); the caller leads iff the returned record's
    /// holder is `token`.
    pub fn leader_acquire_or_renew(
        &mut self,
        key: &(impl StoreKey + ?Sized),
        token: &Token,
        lease: Duration,
        metadata: &Arc<Metadata>,
        now: Timestamp,
    ) -> LeaderRecord {
        // Every take (a new record, or one whose lease ran out) starts a term with the next fence.
        let fences = &mut self.leader_fences;
        let mut next_fence = || {
            let fence = fences.get(key.text()).map_or(FencingToken::FIRST, |f| f.next());
            fences.insert(key.shared(), fence);
            fence
        };
        let entry = match self.leaders.entry(key.shared()) {
            Entry::Vacant(vacant) => vacant.insert(LeaderEntry {
                holder: token.clone(),
                lease,
                acquired_at: now,
                renewed_at: now,
                transitions: 0,
                metadata: metadata.clone(),
                fence: next_fence(),
            }),
            Entry::Occupied(occupied) => {
                let entry = occupied.into_mut();
                if entry.is_live(now) {
                    if entry.holder != *token {
                        return record(self.wall_at_zero, entry);
                    }
                } else {
                    if entry.holder != *token {
                        entry.transitions = entry.transitions.saturating_add(1);
                        entry.holder = token.clone();
                    }
                    entry.acquired_at = now;
                    entry.fence = next_fence();
                }
                entry.renewed_at = now;
                entry.lease = lease;
                entry.metadata = metadata.clone();
                entry
            }
        };
        record(self.wall_at_zero, entry)
    }

    /// Deletes the record if `token` holds a live lease.
    pub fn leader_release(&mut self, key: &(impl StoreKey + ?Sized), token: &Token, now: Timestamp) -> bool {
        let held = self.leaders.get(key.text()).is_some_and(|e| e.holder == *token && e.is_live(now));
        if held {
            self.leaders.remove(key.text());
        }
        held
    }

    /// The live leader record, if any.
    pub fn leader_get(&self, key: &(impl StoreKey + ?Sized), now: Timestamp) -> Option<LeaderRecord> {
        let entry = self.leaders.get(key.text()).filter(|e| e.is_live(now))?;
        Some(record(self.wall_at_zero, entry))
    }

    /// Stores `due` iff nothing is stored or the stored value is strictly earlier; true iff this
    /// call wrote. A non-finite `due` never wins.
    pub fn schedule_claim(&mut self, key: &(impl StoreKey + ?Sized), due: f64) -> bool {
        if !due.is_finite() {
            return false;
        }
        match self.schedules.get_mut(key.text()) {
            Some(stored) if *stored >= due => false,
            Some(stored) => {
                *stored = due;
                true
            }
            None => {
                self.schedules.insert(key.shared(), due);
                true
            }
        }
    }

    /// The last claimed fire time.
    pub fn schedule_last_fired(&self, key: &(impl StoreKey + ?Sized)) -> Option<f64> {
        self.schedules.get(key.text()).copied()
    }

    /// Vacates every lock lease that expired before `now`, keeping fencing counters (the
    /// cleanup the SQL backends run on close), and forgets waiters whose place lapsed.
    pub fn vacate_expired(&mut self, now: Timestamp) {
        for entry in self.locks.values_mut() {
            if entry.lease.as_ref().is_some_and(|lease| lease.expires_at < now) {
                entry.lease = None;
            }
            entry.queue.retain(|waiter| waiter.expires_at >= now);
        }
        self.rw_reap_all(now);
        self.sem_reap_all(now);
    }

    /// How many lock names the store remembers (held or not).
    pub fn lock_names(&self) -> usize {
        self.locks.len()
    }
}

fn record(wall_at_zero: WallTime, entry: &LeaderEntry) -> LeaderRecord {
    let wall = |t: Timestamp| wall_at_zero.saturating_add(Duration::from_nanos(t.as_nanos()));
    LeaderRecord {
        holder: entry.holder.as_str().to_owned(),
        lease_duration: entry.lease,
        acquired_at: wall(entry.acquired_at),
        renewed_at: wall(entry.renewed_at),
        transitions: entry.transitions,
        metadata: (*entry.metadata).clone(),
        fence: Some(entry.fence),
    }
}
