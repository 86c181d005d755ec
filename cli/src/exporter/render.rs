//! The Prometheus text format (version 0.0.4) of what a store holds: one family per quantity,
//! the name (without its kind prefix) and the kind as labels, workers and never tokens.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::listing::{Row, Snapshot, seconds_until, split};

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
    let rows = Row::all(s);
    let mut f = family(out, "tenure_store_lock_held", "Whether a live lease holds the name (1) or not (0).");
    for r in &rows {
        f.sample("tenure_store_lock_held", &labels(r), if r.holders.is_empty() { 0.0 } else { 1.0 });
    }
    let mut f = family(out, "tenure_store_lock_holders", "Live leases on the name (readers, permits: each one).");
    for r in &rows {
        f.sample("tenure_store_lock_holders", &labels(r), count(r.holders.len()));
    }
    let mut f = family(
        out,
        "tenure_store_lock_waiters",
        "Waiters keeping a place in the store's line (queued locks, read-write locks' writers, semaphores).",
    );
    for r in &rows {
        if let Some(waiters) = &r.waiters {
            f.sample("tenure_store_lock_waiters", &labels(r), count(waiters.len()));
        }
    }
    let mut f = family(out, "tenure_store_lock_fence", "The last fencing token issued for the name.");
    for r in rows.iter().filter(|r| r.fence.is_some()) {
        f.sample("tenure_store_lock_fence", &labels(r), fence(r.fence.unwrap_or(0)));
    }
    let mut f = family(
        out,
        "tenure_store_lock_lease_left_seconds",
        "Until the first live lease on the name ends, by this machine's clock.",
    );
    for r in &rows {
        if let Some(end) = r.first_end() {
            f.sample("tenure_store_lock_lease_left_seconds", &labels(r), seconds_until(end, now));
        }
    }
    let mut f = family(
        out,
        "tenure_store_lock_holder_info",
        "Who holds the name: leases per worker and side (a worker may hold several reads or permits).",
    );
    for r in &rows {
        let mut held: BTreeMap<(&str, &str), usize> = BTreeMap::new();
        for h in &r.holders {
            *held.entry((h.worker, h.side)).or_default() += 1;
        }
        for ((worker, side), leases) in held {
            let mut labels = labels(r);
            labels.extend([("worker", worker), ("side", side)]);
            f.sample("tenure_store_lock_holder_info", &labels, count(leases));
        }
    }
    let mut f = family(out, "tenure_store_semaphore_permits", "A semaphore's permit count, as stored.");
    for r in &rows {
        if let Some(p) = r.permits {
            f.sample("tenure_store_semaphore_permits", &labels(r), f64::from(p));
        }
    }
}

/// Elections: the leader, its term (the record's transitions) and fence, and its lease left.
fn leaders(out: &mut String, s: &Snapshot, now: i64) {
    let mut f = family(out, "tenure_store_leader_info", "The live leader of the election: its worker.");
    for l in &s.leaders {
        let name = split(&l.key).1;
        // An election's holder is its worker's identity (grelmicro's layout), not a lock token.
        f.sample("tenure_store_leader_info", &[("name", name), ("worker", l.record.holder.as_str())], 1.0);
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

fn labels<'a>(r: &Row<'a>) -> Vec<(&'a str, &'a str)> {
    vec![("kind", r.kind), ("name", r.name)]
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

#[cfg(test)]
mod tests {
    use tenure::core::WallTime;
    use tenure::{Holding, LockState, SharedState, Side};

    use super::*;

    fn at(micros: i64) -> WallTime {
        WallTime::from_unix_micros(micros)
    }

    #[test]
    fn one_series_per_worker_and_side_counting_its_leases_and_no_token() {
        let reads = ["w1:task:1.aa", "w1:task:2.bb", "w2:task:1.cc"].map(|token| Holding {
            token: token.to_owned(),
            side: Side::Read,
            expires_at: at(5_000_000),
            details: None,
        });
        let snapshot = Snapshot {
            locks: vec![LockState {
                key: "lock:odd \"name\"".into(),
                fence: None,
                holder: Some("token-of-another-shape".into()),
                expires_at: Some(at(3_000_000)),
                details: None,
                waiting: None,
            }],
            shared: vec![SharedState {
                key: "rwlock:doc".into(),
                fence: None,
                holders: reads.to_vec(),
                waiters: vec!["w9:task:1.dd".into()],
                permits: None,
            }],
            leaders: Vec::new(),
            omitted: 0,
        };
        let text = render(Some(&snapshot), 0.5, 1_000_000);
        let holders: Vec<&str> = text.lines().filter(|l| l.starts_with("tenure_store_lock_holder_info{")).collect();
        assert_eq!(
            holders,
            [
                r#"tenure_store_lock_holder_info{kind="lock",name="odd \"name\"",worker="unknown",side="exclusive"} 1"#,
                r#"tenure_store_lock_holder_info{kind="rwlock",name="doc",worker="w1",side="read"} 2"#,
                r#"tenure_store_lock_holder_info{kind="rwlock",name="doc",worker="w2",side="read"} 1"#,
            ]
        );
        assert!(text.contains(r#"tenure_store_lock_waiters{kind="rwlock",name="doc"} 1"#), "{text}");
        assert!(text.contains(r#"tenure_store_lock_lease_left_seconds{kind="rwlock",name="doc"} 4"#), "{text}");
        assert!(!text.contains(":task:") && !text.contains("token-of-another-shape"), "{text}");
        let families = text.lines().filter(|l| l.starts_with("# TYPE ")).count();
        let helps = text.lines().filter(|l| l.starts_with("# HELP ")).count();
        assert_eq!(families, helps);
        assert_eq!(
            render(None, 0.1, 0).lines().filter(|l| !l.starts_with('#')).collect::<Vec<_>>(),
            ["tenure_store_up 0", "tenure_store_read_duration_seconds 0.1"]
        );
    }
}
