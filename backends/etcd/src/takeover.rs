//! Taking over an election without reading first, when the store's watch saw its leader go.
//!
//! A follower's attempt reads the candidates and the count of transitions, then (if nobody
//! leads) writes. After a clean release or an expiry that read is mostly wasted: the follower
//! read the count at its last refused attempt, and the watch tells it the moment the leader's key
//! (and, after a clean release, the count) was deleted. So a follower remembers what its last
//! refused attempt read, and the watch remembers the last deletions it saw per name; an attempt
//! that finds a deletion of a candidate since its read goes straight to the guarded write (no
//! candidate under the prefix, the count unchanged since it was read, or gone). Every outcome is
//! still decided by that write's guards: a hint that is wrong costs the attempt what it cost
//! before (the write's other branch reads what the read would have), never a wrong leader.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::election::Last;

/// Names kept at most; past it everything is forgotten at once (a forgotten name costs its next
/// takeover one read).
const LIMIT: usize = 4096;

/// What a follower's last refused attempt read of a name.
pub(crate) struct Standing {
    /// The count of transitions then, and its key's revision (0: none).
    pub(crate) last: Option<Last>,
    pub(crate) revision: i64,
    /// The store's revision the read saw.
    pub(crate) read_at: i64,
}

/// The last deletions the store's watch saw, per name: of a candidate's key, and of the count.
#[derive(Default)]
pub(crate) struct Deletions(Mutex<Seen>);

#[derive(Default)]
struct Seen {
    candidates: HashMap<String, i64>,
    counts: HashMap<String, i64>,
}

impl Deletions {
    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A key of `name`'s candidates (or a lock's contenders) was deleted at `revision`.
    pub(crate) fn candidate(&self, name: &str, revision: i64) {
        remember(&mut self.seen().candidates, name, revision);
    }

    /// `name`'s count of transitions was deleted at `revision` (a clean release).
    pub(crate) fn count(&self, name: &str, revision: i64) {
        remember(&mut self.seen().counts, name, revision);
    }

    /// If a candidate of `name` went after `standing` was read: the count as it is now, by what
    /// the watch saw (gone, or as read) with its key's revision.
    pub(crate) fn since(&self, name: &str, standing: Standing) -> Option<(Option<Last>, i64)> {
        let seen = self.seen();
        let after = |map: &HashMap<String, i64>| map.get(name).is_some_and(|at| *at > standing.read_at);
        if !after(&seen.candidates) {
            return None;
        }
        Some(if after(&seen.counts) { (None, 0) } else { (standing.last, standing.revision) })
    }
}

fn remember(map: &mut HashMap<String, i64>, name: &str, revision: i64) {
    if map.len() >= LIMIT && !map.contains_key(name) {
        map.clear();
    }
    let at = map.entry(name.to_owned()).or_insert(revision);
    *at = (*at).max(revision);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_at(read_at: i64) -> Standing {
        Standing { last: Some(Last { holder: "a".into(), transitions: 3 }), revision: 7, read_at }
    }

    #[test]
    fn only_a_deletion_after_the_read_is_a_hint_and_a_count_deleted_after_it_is_gone() {
        let deletions = Deletions::default();
        assert!(deletions.since("leader:x", read_at(10)).is_none(), "nothing seen");
        deletions.candidate("leader:x", 10);
        assert!(deletions.since("leader:x", read_at(10)).is_none(), "seen by the read already");
        deletions.candidate("leader:x", 12);
        let (last, revision) = deletions.since("leader:x", read_at(10)).expect("a hint");
        assert_eq!((last.map(|l| l.transitions), revision), (Some(3), 7), "the count as read");
        deletions.count("leader:x", 12);
        let (last, revision) = deletions.since("leader:x", read_at(10)).expect("a hint");
        assert!(last.is_none() && revision == 0, "a clean release deleted the count");
        assert!(deletions.since("leader:y", read_at(0)).is_none(), "another name");
    }

    #[test]
    fn the_latest_deletion_is_kept_and_the_maps_are_bounded() {
        let deletions = Deletions::default();
        deletions.candidate("n", 9);
        deletions.candidate("n", 5);
        assert!(deletions.since("n", read_at(8)).is_some());
        for i in 0..=LIMIT {
            deletions.candidate(&format!("m{i}"), 1);
        }
        assert!(deletions.seen().candidates.len() <= LIMIT);
    }
}
