//! Fenced semaphores on etcd, in Tenure's own layout (grelmicro has no etcd store, and etcd's
//! `concurrency` package no semaphore). The keys of `semaphore:<name>` live under
//! `<prefix>semaphore:<name>/`:
//!
//! - `c`: the stored permit count; `f`: the last fencing token issued; `a`: the last arrival
//!   number given (decimal, no lease);
//! - `h.<hex token>`: a holder, on an etcd lease of its duration, valued `<ttl> <fencing token>`;
//! - `w.<hex token>`: a waiter keeping a place, on a lease of the place's length, valued
//!   `<ttl> <arrival>`.
//!
//! A call reads every key of the name, decides as the store model does, and writes in one guarded
//! transaction (see [`crate::txn`]). An expired lease deletes its key; the watch on the store's
//! prefix pushes every deletion — a release, a place given up, an expiry — to the name's waiters.

use std::collections::BTreeMap;
use std::time::Duration;

use tenure::backend::{SemaphoreOperations, Wakeup};
use tenure::{Holding, SharedState, Side};
use tenure_core::{BackendError, BackendErrorKind, FencingToken, HolderDetails, PermitAnswer, SemState};
use tenure_store::Wake;

use crate::EtcdBackend;
use crate::txn::{KeysView, Leased, LeasedPut, Plan, hex, unhex};

/// Every key of one semaphore: the stored count, the last fence and arrival, the holders (with
/// their fencing tokens) and the waiters (with their arrival numbers).
#[derive(Debug, Default)]
struct View {
    permits: Option<u32>,
    fence: u64,
    arrivals: u64,
    holders: BTreeMap<String, (Leased, u64)>,
    waiters: BTreeMap<String, (Leased, u64)>,
}

fn malformed(name: &str, what: &str) -> BackendError {
    BackendError::new(BackendErrorKind::MalformedRecord, format!("etcd: the semaphore {name} has {what}"))
}

impl KeysView for View {
    fn read<'a>(name: &str, kvs: impl IntoIterator<Item = (&'a str, &'a str, i64)>) -> Result<Self, BackendError> {
        let mut view = Self::default();
        for (key, value, lease) in kvs {
            let count =
                |what: &str| value.parse::<u64>().map_err(|_| malformed(name, &format!("{what} that is not a count")));
            let entry = || {
                let leased = Leased::of(value, lease).ok_or_else(|| malformed(name, "a key without its lease"))?;
                let number = value.split_once(' ').and_then(|(_, n)| n.parse::<u64>().ok());
                Ok::<_, BackendError>((leased, number.ok_or_else(|| malformed(name, "an entry without its number"))?))
            };
            let token = |hexed: &str| unhex(hexed).ok_or_else(|| malformed(name, "a key whose token is not hex"));
            match key.split_once('.') {
                None if key == "c" => {
                    let permits = count("a permit count")?;
                    view.permits = Some(u32::try_from(permits).map_err(|_| malformed(name, "too many permits"))?);
                }
                None if key == "f" => view.fence = count("a fence")?,
                None if key == "a" => view.arrivals = count("an arrival")?,
                Some(("h", t)) => drop(view.holders.insert(token(t)?, entry()?)),
                Some(("w", t)) => drop(view.waiters.insert(token(t)?, entry()?)),
                _ => return Err(malformed(name, &format!("a key {key:?} of no semaphore"))),
            }
        }
        Ok(view)
    }
}

impl View {
    /// The count a call asking `permits` is judged by: its own when nobody holds or waits.
    fn stored(&self, name: &str, permits: u32) -> Result<u32, BackendError> {
        if self.holders.is_empty() && self.waiters.is_empty() {
            return Ok(permits);
        }
        self.permits.ok_or_else(|| malformed(name, "holders but no permit count"))
    }
}

impl EtcdBackend {
    /// What `tenure exporter` shows of the semaphore `name`, or `None` if it has no key.
    pub(crate) async fn sem_shared_state(&self, name: &str) -> Result<Option<SharedState>, BackendError> {
        let view: View = self.view(name).await?;
        if view.fence == 0 && view.permits.is_none() && view.holders.is_empty() && view.waiters.is_empty() {
            return Ok(None);
        }
        let mut told = self.held_details(name).await?;
        let mut holders = Vec::new();
        for (token, (leased, _)) in &view.holders {
            if let Some(expires_at) = self.lease_end(leased.lease).await? {
                let details = told.remove(token);
                holders.push(Holding { token: token.clone(), side: Side::Permit, expires_at, details });
            }
        }
        let mut waiters: Vec<(u64, String)> = view.waiters.into_iter().map(|(t, (_, arrival))| (arrival, t)).collect();
        waiters.sort();
        Ok(Some(SharedState {
            key: name.to_owned(),
            fence: (view.fence > 0).then(|| FencingToken::new(view.fence)),
            holders,
            waiters: waiters.into_iter().map(|(_, t)| t).collect(),
            permits: view.permits,
        }))
    }
}

impl SemaphoreOperations for EtcdBackend {
    async fn acquire(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        permits: u32,
        wait: Option<Duration>,
    ) -> Result<PermitAnswer, BackendError> {
        self.acquire_with_details(name, token, (lease, permits, wait), None).await
    }

    async fn acquire_with_details(
        &self,
        name: &str,
        token: &str,
        (lease, permits, wait): (Duration, u32, Option<Duration>),
        details: Option<&HolderDetails>,
    ) -> Result<PermitAnswer, BackendError> {
        let beside = self.held_beside(name, token, details);
        self.txn_call(name, |view: &View, prefix| {
            let stored = view.stored(name, permits)?;
            if stored != permits {
                return Ok(Plan::answer(PermitAnswer { fence: None, permits: stored }));
            }
            let holder_key = format!("{prefix}h.{}", hex(token));
            if let Some(&(held, fence)) = view.holders.get(token) {
                let renewal = LeasedPut::new(holder_key, Some(held), lease).carrying(fence);
                let answer = PermitAnswer { fence: Some(FencingToken::new(fence)), permits };
                return Ok(Plan { leased: Some(renewal), ..Plan::answer(answer) });
            }
            let place = view.waiters.get(token).copied();
            let ahead = match place {
                Some((_, mine)) => view.waiters.values().filter(|(_, arrival)| *arrival < mine).count(),
                None => view.waiters.len(),
            };
            if view.holders.len().saturating_add(ahead) < usize::try_from(permits).unwrap_or(usize::MAX) {
                let fence = view.fence.checked_add(1).ok_or_else(|| malformed(name, "no fencing token left"))?;
                let answer = PermitAnswer { fence: Some(FencingToken::new(fence)), permits };
                let mut plan = Plan {
                    leased: Some(LeasedPut::new(holder_key, None, lease).carrying(fence).with_beside(beside.clone())),
                    ..Plan::answer(answer)
                };
                plan.puts.push((format!("{prefix}f"), fence.to_string()));
                if view.permits != Some(permits) {
                    plan.puts.push((format!("{prefix}c"), permits.to_string()));
                }
                if let Some((placed, _)) = place {
                    plan.deletes.push(format!("{prefix}w.{}", hex(token)));
                    plan.retired.push(placed.lease);
                }
                return Ok(plan);
            }
            let mut plan = Plan::answer(PermitAnswer { fence: None, permits });
            if let Some(wait) = wait {
                let arrival = match place {
                    Some((_, arrival)) => arrival,
                    None => {
                        let next = view.arrivals.checked_add(1).ok_or_else(|| malformed(name, "no arrival left"))?;
                        plan.puts.push((format!("{prefix}a"), next.to_string()));
                        next
                    }
                };
                let key = format!("{prefix}w.{}", hex(token));
                plan.leased = Some(LeasedPut::new(key, place.map(|(placed, _)| placed), wait).carrying(arrival));
            }
            Ok(plan)
        })
        .await
    }

    async fn release(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        self.txn_call(name, |view: &View, prefix| {
            let mut plan = Plan::answer(false);
            for (kind, entry) in [("h", view.holders.get(token)), ("w", view.waiters.get(token))] {
                if let Some((leased, _)) = entry {
                    plan.deletes.push(format!("{prefix}{kind}.{}", hex(token)));
                    plan.retired.push(leased.lease);
                    plan.answer |= kind == "h";
                }
            }
            Ok(plan)
        })
        .await
    }

    async fn owned(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        Ok(self.view::<View>(name).await?.holders.contains_key(token))
    }

    async fn state(&self, name: &str) -> Result<SemState, BackendError> {
        let view = self.view::<View>(name).await?;
        let (holders, waiting) = (view.holders.len(), view.waiters.len());
        let permits = if holders == 0 && waiting == 0 { 0 } else { view.stored(name, 0)? };
        Ok(SemState { permits, holders, waiting, fence: view.fence })
    }

    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        Some(self.watch.queues.wakeup(name, Wake::All))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_reads_its_keys_and_refuses_malformed_ones() {
        let keys = [
            ("c".to_owned(), "2", 0),
            ("f".to_owned(), "7", 0),
            ("a".to_owned(), "3", 0),
            (format!("h.{}", hex("t1")), "5 7", 11),
            (format!("w.{}", hex("t2")), "5 3", 12),
        ];
        let view = View::read("semaphore:a", keys.iter().map(|(k, v, l)| (k.as_str(), *v, *l))).expect("a view");
        assert_eq!((view.permits, view.fence, view.arrivals), (Some(2), 7, 3));
        assert_eq!(view.holders.get("t1").map(|(_, f)| *f), Some(7));
        assert_eq!(view.waiters.get("t2").map(|(_, a)| *a), Some(3));
        for bad in [("c", "x", 0), ("h.zz", "5 1", 7), ("h.6131", "5", 7), ("h.6131", "5 1", 0), ("q", "1", 0)] {
            let err = View::read("semaphore:a", [bad]).expect_err("malformed");
            assert_eq!(err.kind(), BackendErrorKind::MalformedRecord);
        }
        let held = View::read("semaphore:a", [(format!("h.{}", hex("t1")).as_str(), "5 1", 7)]).expect("a view");
        assert!(held.stored("semaphore:a", 2).is_err(), "holders without a count are malformed");
    }
}
