//! Progress: a client that stops being granted while the others go on (a lock that keeps
//! refusing its own process, a worker stuck after a fault). Not a safety anomaly: what a user
//! sees as a hang, which the safety checkers cannot see.

use std::collections::BTreeSet;

use crate::history::{F, Op, Outcome};
use crate::{Anomaly, Verdict};

/// How many grants the other clients may get after a client's last one before it counts as
/// starved: far beyond chance (a client losing 50 races in a row to three others: (3/4)^50).
pub const STARVED_AFTER: usize = 50;

/// `starved`: a client (a process, with the ones started again in its place: process numbers
/// `n`, `n + 100`, …) granted nothing from some point of the run on while the other clients
/// were granted at least [`STARVED_AFTER`] times.
pub fn check(ops: &[Op]) -> Verdict {
    let mut verdict = Verdict::default();
    // (when, client, index) of every grant, in completion order
    let mut grants: Vec<(u64, u32, usize)> = ops
        .iter()
        .enumerate()
        .filter(|(_, op)| op.f == F::Acquire && op.outcome == Outcome::Ok)
        .map(|(i, op)| (op.completed.unwrap_or(op.invoked), op.process % 100, i))
        .collect();
    grants.sort_unstable();
    verdict.checked = grants.len();
    let clients: BTreeSet<u32> = ops.iter().filter(|op| op.f == F::Acquire).map(|op| op.process % 100).collect();
    for client in clients {
        let last = grants.iter().filter(|g| g.1 == client).map(|g| g.0).max();
        let after: Vec<&(u64, u32, usize)> =
            grants.iter().filter(|g| g.1 != client && last.is_none_or(|last| g.0 > last)).collect();
        if let Some(first) = after.first().filter(|_| after.len() >= STARVED_AFTER) {
            let since = if last.is_some() { "after its last grant" } else { "in the whole run" };
            let message = format!(
                "client process {client} was granted nothing {since}, while the others were granted {} times",
                after.len()
            );
            verdict.anomalies.push(Anomaly { kind: "starved", ops: vec![first.2], message });
        }
    }
    verdict
}
