//! The Prometheus text format (version 0.0.4) of what a store holds: one family per quantity,
//! the name (without its kind prefix) and the kind as labels, workers and never tokens.

use std::fmt::Write;

use tenure::backend::holder_worker;
use tenure::core::WallTime;
use tenure::{LeaderState, LockState, SharedState};

/// What one read of the store found, already filtered by the prefix and capped.
pub(crate) struct Snapshot {
    pub(crate) locks: Vec<LockState>,
    pub(crate) shared: Vec<SharedState>,
    pub(crate) leaders: Vec<LeaderState>,
    /// Names past the cap, not shown.
    pub(crate) omitted: usize,
}

/// One metric family being written: its header once, then its samples.
struct Family<'a> {
    out: &'a mut String,
}

impl Family<'_> {
    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        let _ = write!(self.out, "{name}");
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (key, text)) in labels.iter().enumerate() {
                let sep = if i == 0 { "" } else { "," };
                let _ = write!(self.out, "{sep}{key}=\"{}\"", escape(text));
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {}", number(value));
    }
}

fn family<'a>(out: &'a mut String, name: &str, help: &str) -> Family<'a> {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
    Family { out }
}

/// The exposition of `snapshot` read at `now` (µs since the epoch, this machine's clock), or of a
/// failed read (`None`).
pub(crate) fn render(snapshot: Option<&Snapshot>, read_seconds: f64, now: i64) -> String {
    let mut out = String::new();
    family(&mut out, "tenure_store_up", "Whether the last read of the store answered (1) or failed (0).").sample(
        "tenure_store_up",
        &[],
        if snapshot.is_some() { 1.0 } else { 0.0 },
    );
    family(&mut out, "tenure_store_read_duration_seconds", "How long the last read of the store took.").sample(
        "tenure_store_read_duration_seconds",
        &[],
        read_seconds,
    );
    let Some(s) = snapshot else { return out };
    family(&mut out, "tenure_store_names_omitted", "Names past --max-names, not shown.").sample(
        "tenure_store_names_omitted",
        &[],
        count(s.omitted),
    );
    locks(&mut out, s, now);
    leaders(&mut out, s, now);
    out
}

/// Locks, task locks, read-write locks and semaphores: held, holders, waiters, fence, lease left,
/// who holds, and a semaphore's permits.
fn locks(out: &mut String, s: &Snapshot, now: i64) {
    let rows: Vec<Row<'_>> = s.locks.iter().map(Row::of_lock).chain(s.shared.iter().map(Row::of_shared)).collect();
    let mut f = family(out, "tenure_store_lock_held", "Whether a live lease holds the name (1) or not (0).");
    for r in &rows {
        f.sample("tenure_store_lock_held", &r.labels(), if r.holders.is_empty() { 0.0 } else { 1.0 });
    }
    let mut f = family(out, "tenure_store_lock_holders", "Live leases on the name (readers, permits: each one).");
    for r in &rows {
        f.sample("tenure_store_lock_holders", &r.labels(), count(r.holders.len()));
    }
    let mut f = family(
        out,
        "tenure_store_lock_waiters",
        "Waiters keeping a place in the store's line (read-write locks' writers, semaphores).",
    );
    for r in rows.iter().filter(|r| r.waiters.is_some()) {
        f.sample("tenure_store_lock_waiters", &r.labels(), count(r.waiters.unwrap_or(0)));
    }
    let mut f = family(out, "tenure_store_lock_fence", "The last fencing token issued for the name.");
    for r in rows.iter().filter(|r| r.fence.is_some()) {
        f.sample("tenure_store_lock_fence", &r.labels(), fence(r.fence.unwrap_or(0)));
    }
    let mut f = family(
        out,
        "tenure_store_lock_lease_left_seconds",
        "Until the first live lease on the name ends, by this machine's clock.",
    );
    for r in &rows {
        if let Some(end) = r.holders.iter().map(|h| h.1).min() {
            f.sample("tenure_store_lock_lease_left_seconds", &r.labels(), seconds_until(end, now));
        }
    }
    let mut f = family(out, "tenure_store_lock_holder_info", "Who holds the name: the worker and the side it holds.");
    for r in &rows {
        for (worker, _, side) in &r.holders {
            let mut labels = r.labels();
            labels.extend([("worker", *worker), ("side", *side)]);
            f.sample("tenure_store_lock_holder_info", &labels, 1.0);
        }
    }
    let mut f = family(out, "tenure_store_semaphore_permits", "A semaphore's permit count, as stored.");
    for st in &s.shared {
        if let Some(p) = st.permits {
            let (kind, name) = split(&st.key);
            f.sample("tenure_store_semaphore_permits", &[("kind", kind), ("name", name)], f64::from(p));
        }
    }
}

/// Elections: the leader, its term (the record's transitions) and fence, and its lease left.
fn leaders(out: &mut String, s: &Snapshot, now: i64) {
    let mut f = family(out, "tenure_store_leader_info", "The live leader of the election: its worker.");
    for l in &s.leaders {
        let name = split(&l.key).1;
        f.sample("tenure_store_leader_info", &[("name", name), ("worker", holder_worker(&l.record.holder))], 1.0);
    }
    let mut f = family(out, "tenure_store_leader_term", "Hand-overs of the election so far (grelmicro's transitions).");
    for l in &s.leaders {
        f.sample("tenure_store_leader_term", &[("name", split(&l.key).1)], count_u64(l.record.transitions));
    }
    let mut f = family(out, "tenure_store_leader_fence", "The fencing token of the leader's term.");
    for l in &s.leaders {
        if let Some(token) = l.record.fence {
            f.sample("tenure_store_leader_fence", &[("name", split(&l.key).1)], fence(token.get()));
        }
    }
    let mut f = family(out, "tenure_store_leader_lease_left_seconds", "Until the leader's lease ends, unless renewed.");
    for l in &s.leaders {
        f.sample(
            "tenure_store_leader_lease_left_seconds",
            &[("name", split(&l.key).1)],
            seconds_until(l.record.expires_at(), now),
        );
    }
}

/// One name of any kind, as the lock families show it.
struct Row<'a> {
    kind: &'a str,
    name: &'a str,
    fence: Option<u64>,
    /// `(worker, lease end, side)`.
    holders: Vec<(&'a str, WallTime, &'static str)>,
    /// `None` where the store keeps no line for the kind.
    waiters: Option<usize>,
}

impl<'a> Row<'a> {
    fn of_lock(l: &'a LockState) -> Self {
        let (kind, name) = split(&l.key);
        let holders = match (&l.holder, l.expires_at) {
            (Some(token), Some(end)) => vec![(holder_worker(token), end, "exclusive")],
            _ => Vec::new(),
        };
        Self { kind, name, fence: l.fence.map(|f| f.get()), holders, waiters: None }
    }

    fn of_shared(s: &'a SharedState) -> Self {
        let (kind, name) = split(&s.key);
        let holders = s.holders.iter().map(|h| (holder_worker(&h.token), h.expires_at, h.side.as_str())).collect();
        Self { kind, name, fence: s.fence.map(|f| f.get()), holders, waiters: Some(s.waiters.len()) }
    }

    fn labels(&self) -> Vec<(&'a str, &'a str)> {
        vec![("kind", self.kind), ("name", self.name)]
    }
}

/// `lock:cart` → `("lock", "cart")`.
pub(crate) fn split(key: &str) -> (&str, &str) {
    key.split_once(':').unwrap_or(("", key))
}

/// A label value escaped as the text format asks (backslash, quote, newline).
fn escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn number(value: f64) -> String {
    if value.is_finite() && value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{value:.0}")
    } else {
        value.to_string()
    }
}

fn seconds_until(t: WallTime, now: i64) -> f64 {
    // Lossless for any span a lease can have (< 2^53 µs).
    #[allow(clippy::cast_precision_loss)]
    let secs = (t.as_unix_micros() - now) as f64 / 1e6;
    secs
}

#[allow(clippy::cast_precision_loss)] // counts and fences below 2^53
fn count(n: usize) -> f64 {
    n as f64
}

#[allow(clippy::cast_precision_loss)]
fn count_u64(n: u64) -> f64 {
    n as f64
}

fn fence(n: u64) -> f64 {
    count_u64(n)
}
