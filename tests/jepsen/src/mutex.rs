//! The fenced, owner-aware mutex (Hazelcast's `FencedMutex` model, Kleppmann's fencing token):
//! what the lock granted, and what the fenced resource it guards accepted.

use std::collections::{HashMap, HashSet};

use crate::history::{F, Op, Outcome};
use crate::{Anomaly, Verdict};

/// Judges the acquires and releases of every lock name:
/// - `stale-fence`: an acquire granted a fencing token not greater than one granted to an acquire
///   that completed before it was invoked (acquires of unknown outcome bind nothing);
/// - `duplicate-fence`: two granted acquires of one name with one fencing token;
/// - `foreign-release`: a release that succeeded in a process that held nothing (no acquire
///   granted, or of unknown outcome, since its last release).
pub fn check(ops: &[Op]) -> Verdict {
    check_grants(ops, false)
}

/// [`check`] for the terms of an election: a process granted the fence of its own last term again
/// (it stopped, its release failed, and its next start renewed the lease the store kept) is in
/// the same term, not a stale or duplicate one.
pub fn check_terms(ops: &[Op]) -> Verdict {
    check_grants(ops, true)
}

fn check_grants(ops: &[Op], terms: bool) -> Verdict {
    let mut verdict = Verdict::default();
    let same_term = |a: &Op, b: &Op| terms && a.process == b.process && fence(a) == fence(b);
    for (name, granted) in by_name(ops, &[F::Acquire]) {
        verdict.checked += granted.len();
        for (before, after) in out_of_order(ops, &granted, true) {
            let (a, b) = (&ops[before], &ops[after]);
            if same_term(a, b) {
                continue;
            }
            let message = format!(
                "{name}: process {} was granted fencing token {} after process {} had been granted {}",
                b.process,
                fence(b),
                a.process,
                fence(a)
            );
            verdict.anomalies.push(Anomaly { kind: "stale-fence", ops: vec![before, after], message });
        }
        let mut seen: HashMap<u64, usize> = HashMap::new();
        for &i in &granted {
            if let Some(&first) = seen.get(&fence(&ops[i])).filter(|&&first| !same_term(&ops[first], &ops[i])) {
                let message = format!("{name}: fencing token {} was granted twice", fence(&ops[i]));
                verdict.anomalies.push(Anomaly { kind: "duplicate-fence", ops: vec![first, i], message });
            }
            seen.entry(fence(&ops[i])).or_insert(i);
        }
    }
    let mut holding: HashSet<(u32, &str)> = HashSet::new();
    for (i, op) in ops.iter().enumerate() {
        let key = (op.process, op.name.as_str());
        match (op.f, op.outcome) {
            (F::Acquire, Outcome::Ok | Outcome::Info) => drop(holding.insert(key)),
            (F::Release, outcome) => {
                let held = holding.remove(&key);
                if outcome == Outcome::Ok && !held {
                    let message = format!("{}: process {} released a lock it did not hold", op.name, op.process);
                    verdict.anomalies.push(Anomaly { kind: "foreign-release", ops: vec![i], message });
                }
                if outcome == Outcome::Info {
                    holding.insert(key); // it may still hold
                }
            }
            _ => {}
        }
    }
    verdict
}

/// Judges the writes the fenced resource of a lock accepted (`write` or `add` ok) or refused
/// (`fail`): [`owners`], and
/// - `accepted-stale`: a write accepted under a fencing token lower than one accepted before it
///   was sent (the resource broke its own rule).
pub fn check_resource(ops: &[Op]) -> Verdict {
    let mut verdict = owners(ops);
    for (name, accepted) in by_name(ops, &[F::Write, F::Add]) {
        for (before, after) in out_of_order(ops, &accepted, false) {
            let message = format!(
                "{name}: the resource accepted fencing token {} after it had accepted {}",
                fence(&ops[after]),
                fence(&ops[before])
            );
            verdict.anomalies.push(Anomaly { kind: "accepted-stale", ops: vec![before, after], message });
        }
    }
    verdict
}

/// Judges whose writes a fenced resource accepted (of a lock or of a semaphore's permits):
/// - `shared-fence`: writes of two processes accepted under one fencing token of a name;
/// - `ungranted-fence`: a write accepted under a fencing token its process was not granted.
pub fn owners(ops: &[Op]) -> Verdict {
    let mut verdict = Verdict::default();
    let granted: HashSet<(u32, &str, u64)> = ops
        .iter()
        .filter(|op| op.f == F::Acquire && op.outcome == Outcome::Ok)
        .filter_map(|op| Some((op.process, op.name.as_str(), op.fence?)))
        .collect();
    for (name, accepted) in by_name(ops, &[F::Write, F::Add]) {
        verdict.checked += accepted.len();
        let mut writer: HashMap<u64, usize> = HashMap::new();
        for &i in &accepted {
            let op = &ops[i];
            match writer.get(&fence(op)) {
                Some(&first) if ops[first].process != op.process => {
                    let message = format!(
                        "{name}: the resource accepted fencing token {} from processes {} and {}",
                        fence(op),
                        ops[first].process,
                        op.process
                    );
                    verdict.anomalies.push(Anomaly { kind: "shared-fence", ops: vec![first, i], message });
                }
                _ => drop(writer.insert(fence(op), i)),
            }
            if !granted.contains(&(op.process, name, fence(op))) {
                let message = format!(
                    "{name}: process {} wrote under fencing token {}, which it was not granted",
                    op.process,
                    fence(op)
                );
                verdict.anomalies.push(Anomaly { kind: "ungranted-fence", ops: vec![i], message });
            }
        }
    }
    verdict
}

/// The operations of one of `fs` that succeeded with a fencing token, per name (names in
/// first-seen order).
fn by_name<'a>(ops: &'a [Op], fs: &[F]) -> Vec<(&'a str, Vec<usize>)> {
    let mut names: Vec<(&str, Vec<usize>)> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        if !fs.contains(&op.f) || op.outcome != Outcome::Ok || op.fence.is_none() {
            continue;
        }
        match names.iter_mut().find(|(n, _)| *n == op.name) {
            Some((_, list)) => list.push(i),
            None => names.push((op.name.as_str(), vec![i])),
        }
    }
    names
}

/// Pairs `(a, b)` of `ok` operations where `a` completed before `b` was invoked and `b`'s fence
/// is not greater (`strict`) or lower (not `strict`) than `a`'s: against the highest fence of
/// those that completed before, once per `b`.
fn out_of_order(ops: &[Op], oks: &[usize], strict: bool) -> Vec<(usize, usize)> {
    let mut by_invoke = oks.to_vec();
    by_invoke.sort_by_key(|&i| ops[i].invoked);
    let mut by_completion = oks.to_vec();
    by_completion.sort_by_key(|&i| ops[i].completed);
    let (mut next, mut highest): (usize, Option<usize>) = (0, None);
    let mut found = Vec::new();
    for b in by_invoke {
        while let Some(&a) = by_completion.get(next).filter(|&&a| ops[a].precedes(&ops[b])) {
            if highest.is_none_or(|h| fence(&ops[a]) > fence(&ops[h])) {
                highest = Some(a);
            }
            next += 1;
        }
        if let Some(a) = highest {
            let (was, is) = (fence(&ops[a]), fence(&ops[b]));
            if if strict { is <= was } else { is < was } {
                found.push((a, b));
            }
        }
    }
    found
}

/// The fencing token of an operation the caller filtered for having one.
fn fence(op: &Op) -> u64 {
    op.fence.unwrap_or_default()
}
