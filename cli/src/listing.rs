//! One read of everything a store holds under a prefix — locks, task locks, read-write locks,
//! semaphores and elections — bounded in names, for `tenure locks` and `tenure exporter`; and each
//! name as one row (kind, name, fence, holders by worker and side, waiters), tokens never whole.

use tenure::backend::Waiting;
use tenure::backend::holder_worker;
use tenure::core::WallTime;
use tenure::{HolderInfo, Inspect, LeaderState, LockState, SharedState};

/// What one read of the store found, filtered by the prefix and capped.
pub(crate) struct Snapshot {
    pub(crate) locks: Vec<LockState>,
    pub(crate) shared: Vec<SharedState>,
    pub(crate) leaders: Vec<LeaderState>,
    /// Names past the cap, not shown.
    pub(crate) omitted: usize,
}

/// Reads every name whose part after its kind starts with `prefix`; at most `max` names, elections
/// first (the fewest, and what an operator looks at first), then locks, then the rest.
pub(crate) async fn read(inspect: &dyn Inspect, prefix: &str, max: usize) -> Result<Snapshot, String> {
    let mut locks = inspect.lock_states(Vec::new()).await.map_err(|e| format!("reading locks: {e}"))?;
    let mut shared =
        inspect.shared_states(Vec::new()).await.map_err(|e| format!("reading read-write locks and semaphores: {e}"))?;
    let mut leaders = inspect.leader_states(Vec::new()).await.map_err(|e| format!("reading elections: {e}"))?;
    let wanted = |key: &str| split(key).1.starts_with(prefix);
    locks.retain(|l| wanted(&l.key));
    shared.retain(|s| wanted(&s.key));
    leaders.retain(|l| wanted(&l.key));
    let found = locks.len() + shared.len() + leaders.len();
    let mut room = max;
    let mut keep = |n: usize| {
        let kept = n.min(room);
        room -= kept;
        kept
    };
    leaders.truncate(keep(leaders.len()));
    locks.truncate(keep(locks.len()));
    shared.truncate(keep(shared.len()));
    let shown = locks.len() + shared.len() + leaders.len();
    Ok(Snapshot { locks, shared, leaders, omitted: found - shown })
}

/// One lock, task lock, read-write lock or semaphore, as people and Prometheus are shown it.
pub(crate) struct Row<'a> {
    pub(crate) kind: &'a str,
    pub(crate) name: &'a str,
    pub(crate) fence: Option<u64>,
    /// The live leases, never a token.
    pub(crate) holders: Vec<Held<'a>>,
    /// The waiters' workers, first in line first; `None` where the store keeps no line (SQLite's
    /// locks).
    pub(crate) waiters: Option<Vec<&'a str>>,
    /// A semaphore's permit count.
    pub(crate) permits: Option<u32>,
    /// A lock's line as the store keeps it (since when, what each waiter told); empty otherwise.
    pub(crate) line: &'a [Waiting],
}

/// One live lease of a [`Row`].
pub(crate) struct Held<'a> {
    pub(crate) worker: &'a str,
    pub(crate) end: WallTime,
    /// `exclusive`, `read`, `write` or `permit`.
    pub(crate) side: &'static str,
    /// Who holds it (host, pid, program, purpose, since when), if its holder told the store.
    pub(crate) details: Option<&'a HolderInfo>,
}

impl<'a> Row<'a> {
    pub(crate) fn of_lock(l: &'a LockState) -> Self {
        let (kind, name) = split(&l.key);
        let holders = match (&l.holder, l.expires_at) {
            (Some(token), Some(end)) => {
                vec![Held { worker: holder_worker(token), end, side: "exclusive", details: l.details.as_ref() }]
            }
            _ => Vec::new(),
        };
        let line = l.waiting.as_deref().unwrap_or_default();
        let waiters = l.waiting.as_ref().map(|w| w.iter().map(|w| holder_worker(&w.token)).collect());
        Self { kind, name, fence: l.fence.map(|f| f.get()), holders, waiters, permits: None, line }
    }

    pub(crate) fn of_shared(s: &'a SharedState) -> Self {
        let (kind, name) = split(&s.key);
        let holders = s
            .holders
            .iter()
            .map(|h| Held {
                worker: holder_worker(&h.token),
                end: h.expires_at,
                side: h.side.as_str(),
                details: h.details.as_ref(),
            })
            .collect();
        let waiters = Some(s.waiters.iter().map(|t| holder_worker(t)).collect());
        let (fence, permits) = (s.fence.map(|f| f.get()), s.permits);
        Self { kind, name, fence, holders, waiters, permits, line: &[] }
    }

    /// Every lock-like name of `snapshot`, in the store's order.
    pub(crate) fn all(snapshot: &'a Snapshot) -> Vec<Self> {
        snapshot.locks.iter().map(Row::of_lock).chain(snapshot.shared.iter().map(Row::of_shared)).collect()
    }

    /// When the first live lease ends.
    pub(crate) fn first_end(&self) -> Option<WallTime> {
        self.holders.iter().map(|h| h.end).min()
    }
}

/// `lock:cart` → `("lock", "cart")`.
pub(crate) fn split(key: &str) -> (&str, &str) {
    key.split_once(':').unwrap_or(("", key))
}

/// Seconds from `now` (µs since the epoch, this machine's clock) until `t`.
pub(crate) fn seconds_until(t: WallTime, now: i64) -> f64 {
    // Lossless for any span a lease can have (< 2^53 µs).
    #[allow(clippy::cast_precision_loss)]
    let secs = (t.as_unix_micros() - now) as f64 / 1e6;
    secs
}

/// What a holder told the store, as JSON fields: host, pid, program, purpose, when acquired.
pub(crate) fn details_json(d: &HolderInfo, now: i64) -> serde_json::Map<String, serde_json::Value> {
    let mut fields = serde_json::Map::new();
    fields.insert("host".into(), d.host.clone().into());
    fields.insert("pid".into(), d.pid.into());
    fields.insert("program".into(), d.program.clone().into());
    fields.insert("purpose".into(), d.purpose.clone().into());
    fields.insert("acquired_at".into(), d.acquired_at.to_string().into());
    fields.insert("held_for_s".into(), (-seconds_until(d.acquired_at, now)).into());
    fields
}
