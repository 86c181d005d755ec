//! A semaphore of N permits (Hazelcast's acquired-permits model, judged by what a fenced resource
//! accepted): each holder writes to the resource when it enters and when it leaves, under its
//! permit's fencing token; the resource refuses a token older than the oldest of the N highest it
//! has seen.

use std::collections::HashMap;

use crate::history::{F, Op, Outcome};
use crate::{Anomaly, Verdict};

/// A holder (its process and token) and when it was inside: its first and last accepted write,
/// and those writes.
type Spans<'a> = HashMap<&'a str, HashMap<(u32, u64), (u64, u64, Vec<usize>)>>;

/// `over-capacity`: at some instant more than `permits` holders were inside the resource, a
/// holder counting as inside from its first accepted write to its last (under one token).
pub fn check(ops: &[Op], permits: usize) -> Verdict {
    let mut verdict = Verdict::default();
    // Per name, per (process, token): the first and last accepted write.
    let mut spans: Spans<'_> = HashMap::new();
    for (i, op) in ops.iter().enumerate() {
        let (F::Write, Outcome::Ok, Some(fence), Some(at)) = (op.f, op.outcome, op.fence, op.completed) else {
            continue;
        };
        verdict.checked += 1;
        let span = spans.entry(&op.name).or_default().entry((op.process, fence)).or_insert((at, at, Vec::new()));
        span.0 = span.0.min(at);
        span.1 = span.1.max(at);
        span.2.push(i);
    }
    let mut names: Vec<&&str> = spans.keys().collect();
    names.sort();
    for name in names {
        // Sweep: entries before exits at one instant count together (both were inside then).
        let mut edges: Vec<(u64, i8, (u32, u64))> = Vec::new();
        for (&holder, &(from, to, _)) in &spans[*name] {
            edges.push((from, 0, holder));
            edges.push((to, 1, holder));
        }
        edges.sort_unstable();
        let mut inside: Vec<(u32, u64)> = Vec::new();
        for (_, edge, holder) in edges {
            if edge == 1 {
                inside.retain(|h| *h != holder);
                continue;
            }
            inside.push(holder);
            if inside.len() > permits {
                let tokens: Vec<String> = inside.iter().map(|(p, f)| format!("{f} (process {p})")).collect();
                let message = format!(
                    "{name}: {} holders inside at once, of {permits} permits: {}",
                    inside.len(),
                    tokens.join(", ")
                );
                let involved = inside.iter().flat_map(|h| spans[*name][h].2.clone()).collect();
                verdict.anomalies.push(Anomaly { kind: "over-capacity", ops: involved, message });
            }
        }
    }
    verdict
}
