//! What changed between two reads of a store, as lines for people: a lock granted, handed over,
//! released, expired or revoked, a waiter joining the line, a leader elected or gone. Workers are
//! shown, never tokens.

use std::collections::BTreeMap;

use tenure::backend::holder_worker;

use crate::listing::{Snapshot, split};

/// The placeholder holder a revocation leaves until the revoked lease would have ended.
pub(crate) const REVOKED: &str = "tenure-revoked";

/// One name's holders (by token), fence and line, as one read saw them.
#[derive(Clone, Debug, Default, PartialEq)]
struct Name {
    exclusive: bool,
    fence: Option<u64>,
    /// token → (side, lease end in µs).
    holders: BTreeMap<String, (&'static str, i64)>,
    waiters: Vec<String>,
}

/// An election's leader, as one read saw it.
#[derive(Clone, Debug, PartialEq)]
struct Leader {
    holder: String,
    fence: Option<u64>,
    term: u64,
    end: i64,
}

/// Everything one read saw, keyed by the store's key.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct View {
    names: BTreeMap<String, Name>,
    leaders: BTreeMap<String, Leader>,
}

impl View {
    pub(crate) fn of(s: &Snapshot) -> Self {
        let mut names = BTreeMap::new();
        for l in &s.locks {
            let mut holders = BTreeMap::new();
            if let (Some(token), Some(end)) = (&l.holder, l.expires_at) {
                holders.insert(token.clone(), ("exclusive", end.as_unix_micros()));
            }
            let fence = l.fence.map(|f| f.get());
            let waiters = l.waiting.iter().flatten().map(|w| w.token.clone()).collect();
            names.insert(l.key.clone(), Name { exclusive: true, fence, holders, waiters });
        }
        for sh in &s.shared {
            let holders = sh
                .holders
                .iter()
                .map(|h| (h.token.clone(), (h.side.as_str(), h.expires_at.as_unix_micros())))
                .collect();
            let fence = sh.fence.map(|f| f.get());
            names.insert(sh.key.clone(), Name { exclusive: false, fence, holders, waiters: sh.waiters.clone() });
        }
        let leaders = s
            .leaders
            .iter()
            .map(|l| {
                let r = &l.record;
                let leader = Leader {
                    holder: r.holder.clone(),
                    fence: r.fence.map(|f| f.get()),
                    term: r.transitions,
                    end: r.expires_at().as_unix_micros(),
                };
                (l.key.clone(), leader)
            })
            .collect();
        Self { names, leaders }
    }
}

/// The lines that tell what happened between `before` and `after` (read at `now`, µs).
pub(crate) fn changes(before: &View, after: &View, now: i64) -> Vec<String> {
    let empty = Name::default();
    let mut out = Vec::new();
    let keys: std::collections::BTreeSet<&String> = before.names.keys().chain(after.names.keys()).collect();
    for key in keys {
        let (b, a) = (before.names.get(key).unwrap_or(&empty), after.names.get(key).unwrap_or(&empty));
        name_changes(key, b, a, now, &mut out);
    }
    let keys: std::collections::BTreeSet<&String> = before.leaders.keys().chain(after.leaders.keys()).collect();
    for key in keys {
        let name = split(key).1;
        match (before.leaders.get(key), after.leaders.get(key)) {
            (None, Some(l)) => out.push(format!("election {name}: {} elected{}", l.holder, term(l))),
            (Some(l), None) if l.end <= now => out.push(format!("election {name}: {}'s lease ran out", l.holder)),
            (Some(l), None) => out.push(format!("election {name}: {} stepped down", l.holder)),
            (Some(b), Some(a)) if b.holder != a.holder => {
                out.push(format!("election {name}: leadership passed from {} to {}{}", b.holder, a.holder, term(a)));
            }
            (Some(b), Some(a)) if b.fence != a.fence || b.term != a.term => {
                out.push(format!("election {name}: {} elected again{}", a.holder, term(a)));
            }
            _ => {}
        }
    }
    out
}

fn term(l: &Leader) -> String {
    match l.fence {
        Some(f) => format!(" (term {}, fence {f})", l.term),
        None => format!(" (term {})", l.term),
    }
}

fn name_changes(key: &str, b: &Name, a: &Name, now: i64, out: &mut Vec<String>) {
    let what = key.replacen(':', " ", 1);
    let gone: Vec<(&String, &(&str, i64))> = b.holders.iter().filter(|(t, _)| !a.holders.contains_key(*t)).collect();
    let came: Vec<(&String, &(&str, i64))> = a.holders.iter().filter(|(t, _)| !b.holders.contains_key(*t)).collect();
    let fence = a.fence.map_or_else(String::new, |f| format!(" (fence {f})"));
    let ended = |end: i64| if end <= now { "'s lease expired" } else { "" };
    // A revocation: the placeholder took the place of the revoked holder.
    if let Some((_, _)) = came.iter().find(|(t, _)| holder_worker(t) == REVOKED) {
        let from: Vec<&str> = gone.iter().map(|(t, _)| holder_worker(t)).collect();
        let from = if from.is_empty() { String::new() } else { format!(" from {}", from.join(", ")) };
        out.push(format!("{what}: revoked{from}{fence}"));
        return;
    }
    if a.exclusive && gone.len() == 1 && came.len() == 1 {
        let (old, new) = (holder_worker(gone[0].0), holder_worker(came[0].0));
        if holder_worker(gone[0].0) == REVOKED {
            out.push(format!("{what}: granted to {new} after the revocation{fence}"));
        } else if gone[0].1.1 > now {
            out.push(format!("{what}: handed over from {old} to {new}{fence}"));
        } else {
            out.push(format!("{what}: {old}'s lease expired; granted to {new}{fence}"));
        }
        return;
    }
    for (token, (side, end)) in &gone {
        let who = holder_worker(token);
        if who == REVOKED {
            out.push(format!("{what}: free again after the revocation"));
        } else if ended(*end).is_empty() {
            out.push(format!("{what}: released by {who}{}", side_of(side)));
        } else {
            out.push(format!("{what}: {who}{}{}", ended(*end), side_of(side)));
        }
    }
    for (token, (side, _)) in &came {
        out.push(format!("{what}: granted to {}{}{fence}", holder_worker(token), side_of(side)));
    }
    for (place, token) in a.waiters.iter().enumerate() {
        if !b.waiters.contains(token) {
            out.push(format!("{what}: {} waits, {} in line", holder_worker(token), ordinal(place + 1)));
        }
    }
}

fn side_of(side: &str) -> String {
    if side == "exclusive" { String::new() } else { format!(" ({side})") }
}

fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock(holders: &[(&str, i64)], fence: u64) -> Name {
        Name {
            exclusive: true,
            fence: Some(fence),
            holders: holders.iter().map(|(t, end)| ((*t).to_owned(), ("exclusive", *end))).collect(),
            waiters: Vec::new(),
        }
    }

    fn view(key: &str, name: Name) -> View {
        View { names: [(key.to_owned(), name)].into(), leaders: BTreeMap::new() }
    }

    #[test]
    fn a_lock_granted_handed_over_revoked_and_expired_reads_in_order() {
        let now = 1_000;
        let free = View::default();
        let a = view("lock:cart", lock(&[("wa:task:1.aa", 5_000)], 1));
        let b = view("lock:cart", lock(&[("wb:task:1.bb", 6_000)], 2));
        let revoked = view("lock:cart", lock(&[("tenure-revoked:3:x", 6_000)], 3));
        let c = view("lock:cart", lock(&[("wc:task:1.cc", 9_000)], 4));
        assert_eq!(changes(&free, &a, now), ["lock cart: granted to wa (fence 1)"]);
        assert_eq!(changes(&a, &b, now), ["lock cart: handed over from wa to wb (fence 2)"]);
        assert_eq!(changes(&a, &b, 5_000), ["lock cart: wa's lease expired; granted to wb (fence 2)"]);
        assert_eq!(changes(&b, &revoked, now), ["lock cart: revoked from wb (fence 3)"]);
        assert_eq!(changes(&revoked, &c, 7_000), ["lock cart: granted to wc after the revocation (fence 4)"]);
        assert_eq!(changes(&c, &free, now), ["lock cart: released by wc"]);
        assert_eq!(changes(&c, &free, 9_000), ["lock cart: wc's lease expired"]);
        assert!(changes(&c, &c, now).is_empty(), "a renewal is no event");
        assert!(
            changes(&c, &free, now).iter().chain(changes(&free, &a, now).iter()).all(|l| !l.contains("task:1")),
            "tokens are never shown"
        );
    }

    #[test]
    fn readers_permits_waiters_and_leaders_are_told() {
        let shared = |holders: &[(&str, &'static str)], waiters: &[&str]| Name {
            exclusive: false,
            fence: Some(7),
            holders: holders.iter().map(|(t, side)| ((*t).to_owned(), (*side, 5_000))).collect(),
            waiters: waiters.iter().map(|w| (*w).to_owned()).collect(),
        };
        let before = view("rwlock:doc", shared(&[("r1:task:1.a", "read")], &[]));
        let after = view("rwlock:doc", shared(&[("r1:task:1.a", "read"), ("r2:task:1.b", "read")], &["w:task:2.c"]));
        assert_eq!(
            changes(&before, &after, 0),
            ["rwlock doc: granted to r2 (read) (fence 7)", "rwlock doc: w waits, 1st in line"]
        );
        let leader = |holder: &str, fence: u64| Leader {
            holder: holder.to_owned(),
            fence: Some(fence),
            term: fence,
            end: 5_000,
        };
        let one = View { names: BTreeMap::new(), leaders: [("leader:jobs".to_owned(), leader("n1", 1))].into() };
        let two = View { names: BTreeMap::new(), leaders: [("leader:jobs".to_owned(), leader("n2", 2))].into() };
        assert_eq!(changes(&View::default(), &one, 0), ["election jobs: n1 elected (term 1, fence 1)"]);
        assert_eq!(changes(&one, &two, 0), ["election jobs: leadership passed from n1 to n2 (term 2, fence 2)"]);
        assert_eq!(changes(&two, &View::default(), 0), ["election jobs: n2 stepped down"]);
        assert_eq!(changes(&two, &View::default(), 5_000), ["election jobs: n2's lease ran out"]);
        assert_eq!(ordinal(2), "2nd");
        assert_eq!(ordinal(12), "12th");
    }
}
