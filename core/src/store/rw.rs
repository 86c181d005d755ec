//! Read-write locks in the reference store (spec §1.9, §5.4, §6.1): many readers or one writer,
//! writer-preferring through leased intents, a generation per name that grows with every write,
//! and `poisoned` grants after a writer that expired without releasing.
//!
//! Every call first reaps what expired before `now` (a lease is live up to and including its
//! expiry instant, as a lock's is): readers and intents are dropped, and an expired writer is
//! dropped *and remembered*, so the next write grant says the previous writer never released.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::StoreModel;
use super::details::HeldDetails;
use super::model::StoreKey;
use crate::ids::{FencingToken, Token};
use crate::time::Timestamp;

/// A write lease granted: its fencing token (the name's generation after this write began) and
/// whether the writer before it expired without releasing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WriteGrant {
    /// Strictly increasing per name, across every write.
    pub fence: FencingToken,
    /// The previous writer's lease ran out without a release: what it protected may be half
    /// written.
    pub poisoned: bool,
}

/// A point-in-time view of one read-write lock (`ReadWriteLockState`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RwState {
    /// The fencing token of the last write granted (0 for a name never written).
    pub generation: u64,
    /// A writer holds a live lease.
    pub writing: bool,
    /// How many readers hold live leases.
    pub readers: usize,
    /// How many writers wait with a live intent.
    pub waiting_writers: usize,
}

/// A writer's lease.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Writer {
    token: Token,
    expires_at: Timestamp,
}

/// One read-write lock as the model keeps it.
#[derive(Clone, Debug, Default)]
pub(super) struct RwEntry {
    generation: u64,
    writer: Option<Writer>,
    /// The last writer's lease ran out without a release (cleared by a release, a downgrade or
    /// the next grant).
    writer_expired: bool,
    readers: BTreeMap<Token, Timestamp>,
    intents: BTreeMap<Token, Timestamp>,
    /// What the readers and the writer told with their grants.
    details: HeldDetails,
}

impl RwEntry {
    /// Drops what expired before `now`.
    fn reap(&mut self, now: Timestamp) {
        if self.writer.as_ref().is_some_and(|w| w.expires_at < now) {
            self.writer = None;
            self.writer_expired = true;
        }
        self.readers.retain(|_, expires_at| *expires_at >= now);
        self.intents.retain(|_, expires_at| *expires_at >= now);
        self.forget_details();
    }

    /// Drops the details of tokens that hold nothing.
    fn forget_details(&mut self) {
        let (readers, writer) = (&self.readers, &self.writer);
        self.details
            .retain(|token, _| readers.contains_key(token) || writer.as_ref().is_some_and(|w| w.token == *token));
    }

    pub(super) fn details(&self) -> &HeldDetails {
        &self.details
    }

    pub(super) fn details_mut(&mut self) -> &mut HeldDetails {
        &mut self.details
    }

    fn writes(&self, token: &Token) -> bool {
        self.writer.as_ref().is_some_and(|w| w.token == *token)
    }

    fn state(&self) -> RwState {
        RwState {
            generation: self.generation,
            writing: self.writer.is_some(),
            readers: self.readers.len(),
            waiting_writers: self.intents.len(),
        }
    }
}

impl StoreModel {
    /// The entry of `key` with everything that expired before `now` reaped (made if absent).
    fn rw(&mut self, key: &(impl StoreKey + ?Sized), now: Timestamp) -> &mut RwEntry {
        if !self.rwlocks.contains_key(key.text()) {
            self.rwlocks.insert(key.shared(), RwEntry::default());
        }
        // (Looked up again rather than through `entry`, which would copy the key every call.)
        let entry = self.rwlocks.get_mut(key.text()).expect("the entry was made above if it was absent");
        entry.reap(now);
        entry
    }

    /// The entry of `key`, reaped at `now`, if the name was ever used (a question about an
    /// untouched name makes no entry).
    fn rw_known(&mut self, key: &(impl StoreKey + ?Sized), now: Timestamp) -> Option<&mut RwEntry> {
        let entry = self.rwlocks.get_mut(key.text())?;
        entry.reap(now);
        Some(entry)
    }

    /// A read lease for `token`, answering the generation it reads: renewed if `token` reads
    /// already (even while a writer waits); else refused (`None`) while a writer holds the lock
    /// or any writer waits with a live intent.
    pub fn rw_acquire_read(
        &mut self,
        key: &(impl StoreKey + ?Sized),
        token: &Token,
        lease: Duration,
        now: Timestamp,
    ) -> Option<FencingToken> {
        let entry = self.rw(key, now);
        if !entry.readers.contains_key(token) && (entry.writer.is_some() || !entry.intents.is_empty()) {
            return None;
        }
        entry.readers.insert(token.clone(), now + lease);
        Some(FencingToken::new(entry.generation))
    }

    /// The write lease for `token`: renewed (same fence, not poisoned) if `token` writes
    /// already; refused (`None`) while another writer or any reader holds a live lease — keeping
    /// or refreshing `token`'s intent for `lease` iff `intent`; else granted with the next
    /// generation, `token`'s intent withdrawn.
    pub fn rw_acquire_write(
        &mut self,
        key: &(impl StoreKey + ?Sized),
        token: &Token,
        lease: Duration,
        intent: bool,
        now: Timestamp,
    ) -> Option<WriteGrant> {
        let (beside_readers, forget_poison) = (bug!(self, RW_WRITE_BESIDE_READERS), bug!(self, RW_POISON_FORGOTTEN));
        let entry = self.rw(key, now);
        let expires_at = now + lease;
        if let Some(writer) = entry.writer.as_mut().filter(|w| w.token == *token) {
            writer.expires_at = expires_at;
            return Some(WriteGrant { fence: FencingToken::new(entry.generation), poisoned: false });
        }
        if entry.writer.is_some() || (!entry.readers.is_empty() && !beside_readers) {
            if intent {
                entry.intents.insert(token.clone(), expires_at);
            }
            return None;
        }
        entry.intents.remove(token);
        entry.generation = entry.generation.saturating_add(1);
        entry.writer = Some(Writer { token: token.clone(), expires_at });
        let poisoned = std::mem::take(&mut entry.writer_expired) && !forget_poison;
        Some(WriteGrant { fence: FencingToken::new(entry.generation), poisoned })
    }

    /// Drops `token`'s live read lease; false if it holds none.
    pub fn rw_release_read(&mut self, key: &(impl StoreKey + ?Sized), token: &Token, now: Timestamp) -> bool {
        let Some(entry) = self.rw_known(key, now) else { return false };
        let gone = entry.readers.remove(token).is_some();
        entry.forget_details();
        gone
    }

    /// Drops `token`'s live write lease, leaving the lock clean (not poisoned); false if it
    /// holds none. The generation stays.
    pub fn rw_release_write(&mut self, key: &(impl StoreKey + ?Sized), token: &Token, now: Timestamp) -> bool {
        let Some(entry) = self.rw_known(key, now).filter(|entry| entry.writes(token)) else { return false };
        entry.writer = None;
        entry.writer_expired = false;
        entry.forget_details();
        true
    }

    /// Withdraws `token`'s live intent; false if it has none.
    pub fn rw_cancel_intent(&mut self, key: &(impl StoreKey + ?Sized), token: &Token, now: Timestamp) -> bool {
        self.rw_known(key, now).is_some_and(|entry| entry.intents.remove(token).is_some())
    }

    /// Turns `token`'s live write lease into a read lease of `lease` in one step (no writer gets
    /// in between), answering the generation; `None` if it holds no write lease.
    pub fn rw_downgrade(
        &mut self,
        key: &(impl StoreKey + ?Sized),
        token: &Token,
        lease: Duration,
        now: Timestamp,
    ) -> Option<FencingToken> {
        let entry = self.rw_known(key, now).filter(|entry| entry.writes(token))?;
        entry.writer = None;
        entry.writer_expired = false;
        entry.readers.insert(token.clone(), now + lease);
        Some(FencingToken::new(entry.generation))
    }

    /// The lock's state at `now` (an untouched name: generation 0, free).
    pub fn rw_state(&mut self, key: &(impl StoreKey + ?Sized), now: Timestamp) -> RwState {
        self.rw_known(key, now).map_or_else(RwState::default, |entry| entry.state())
    }

    /// Whether `token` holds a live read lease.
    pub fn rw_owned_read(&mut self, key: &(impl StoreKey + ?Sized), token: &Token, now: Timestamp) -> bool {
        self.rw_known(key, now).is_some_and(|entry| entry.readers.contains_key(token))
    }

    /// Whether `token` holds the live write lease.
    pub fn rw_owned_write(&mut self, key: &(impl StoreKey + ?Sized), token: &Token, now: Timestamp) -> bool {
        self.rw_known(key, now).is_some_and(|entry| entry.writes(token))
    }

    /// The live holders of `key` at `now` without changing anything: the writer, and the
    /// readers (for invariant checks).
    pub fn rw_holders(&self, key: &(impl StoreKey + ?Sized), now: Timestamp) -> (Option<Token>, Vec<Token>) {
        let Some(entry) = self.rwlocks.get(key.text()) else { return (None, Vec::new()) };
        let writer = entry.writer.as_ref().filter(|w| w.expires_at >= now).map(|w| w.token.clone());
        let readers = entry.readers.iter().filter(|(_, at)| **at >= now).map(|(t, _)| t.clone()).collect();
        (writer, readers)
    }

    /// Reaps every read-write lock at `now` (what the SQL stores' cleanup does on close).
    pub(super) fn rw_reap_all(&mut self, now: Timestamp) {
        for entry in self.rwlocks.values_mut() {
            entry.reap(now);
        }
    }
}

/// The read-write locks of a model, by key.
pub(super) type RwLocks = BTreeMap<Arc<str>, RwEntry>;
