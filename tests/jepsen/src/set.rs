//! Jepsen's `set` checker (one final read; `set-full` would judge every read) for a set a lock
//! guards, kept outside the store: each holder reads it, adds its element and writes it back
//! under its fencing token.

use std::collections::{HashMap, HashSet};

use crate::history::{F, Op, Outcome};
use crate::{Anomaly, Verdict};

/// Judges the adds against the last successful read of each set:
/// - `lost`: an add acknowledged before that read was invoked is not in it (a lost update: the
///   expected failure of a set guarded without fencing);
/// - `phantom`: the read holds an element nobody tried to add;
/// - `duplicate`: the read holds an element twice;
/// - `unread`: adds were made to a set no read succeeded on (nothing can be judged).
pub fn check(ops: &[Op]) -> Verdict {
    let mut verdict = Verdict::default();
    let mut names: Vec<&str> = Vec::new();
    for op in ops.iter().filter(|op| op.f == F::Add) {
        if !names.contains(&op.name.as_str()) {
            names.push(&op.name);
        }
    }
    for name in names {
        let adds: Vec<usize> = (0..ops.len()).filter(|&i| ops[i].f == F::Add && ops[i].name == name).collect();
        let read = (0..ops.len())
            .filter(|&i| ops[i].f == F::Read && ops[i].name == name && ops[i].outcome == Outcome::Ok)
            .max_by_key(|&i| ops[i].invoked);
        let Some(read) = read else {
            let message = format!("{name}: {} adds and no successful read", adds.len());
            verdict.anomalies.push(Anomaly { kind: "unread", ops: adds, message });
            continue;
        };
        verdict.checked += adds.len() + 1;
        let values = ops[read].values.clone().unwrap_or_default();
        let mut count: HashMap<u64, usize> = HashMap::new();
        for &v in &values {
            *count.entry(v).or_default() += 1;
        }
        let tried: HashSet<u64> = adds.iter().filter_map(|&i| ops[i].value).collect();
        for &i in &adds {
            let op = &ops[i];
            let Some(v) = op.value else { continue };
            if op.outcome == Outcome::Ok && op.precedes(&ops[read]) && !count.contains_key(&v) {
                let message =
                    format!("{name}: element {v}, acknowledged to process {}, is not in the final read", op.process);
                verdict.anomalies.push(Anomaly { kind: "lost", ops: vec![i, read], message });
            }
        }
        let mut values = count.into_iter().collect::<Vec<_>>();
        values.sort_unstable();
        for (v, n) in values {
            if !tried.contains(&v) {
                let message = format!("{name}: the final read holds element {v}, which nobody added");
                verdict.anomalies.push(Anomaly { kind: "phantom", ops: vec![read], message });
            }
            if n > 1 {
                let message = format!("{name}: the final read holds element {v} {n} times");
                verdict.anomalies.push(Anomaly { kind: "duplicate", ops: vec![read], message });
            }
        }
    }
    verdict
}
