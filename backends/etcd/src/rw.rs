//! Read-write locks on etcd, in Tenure's own layout (grelmicro has no etcd store, and etcd's
//! `concurrency` package no read-write lock). The keys of `rwlock:<name>` live under
//! `<prefix>rwlock:<name>/`:
//!
//! - `g`: the generation, the fencing token of the last write (decimal, no lease);
//! - `w.<hex token>`: the writer, on an etcd lease of its duration;
//! - `wl`: the last writer's token, without a lease: put with the writer, deleted by its release
//!   or downgrade, so a write grant that finds it (and no `w.`) follows a writer that expired
//!   without releasing — `poisoned`;
//! - `r.<hex token>`: a reader, and `i.<hex token>`: a waiting writer's intent, each on a lease.
//!
//! A call reads every key of the name, decides as the store model does, and writes in one
//! guarded transaction (see [`crate::txn`]). An expired lease deletes its key (etcd's own
//! reaping), and the watch on the store's prefix pushes every deletion — a release, a withdrawn
//! intent, a downgrade, an expiry — to the name's waiters.
//!
//! Leases are whole seconds, as the locks' are (see the crate's docs): the store holds at least
//! as long as the holder believes.

use std::collections::BTreeMap;
use std::time::Duration;

use tenure::backend::{ReadWriteOperations, Wakeup};
use tenure::{Holding, SharedState, Side};
use tenure_core::{BackendError, BackendErrorKind, FencingToken, HolderDetails, RwState, WriteGrant};
use tenure_store::Wake;

use crate::EtcdBackend;
use crate::txn::{KeysView, Leased, LeasedPut, Plan, hex, unhex};

/// Every key of one read-write lock, as read at `revision`.
#[derive(Debug, Default)]
struct View {
    generation: u64,
    writer: Option<(String, Leased)>,
    /// `wl` is there: a writer holds, or the last one expired without releasing.
    last_writer: bool,
    readers: BTreeMap<String, Leased>,
    intents: BTreeMap<String, Leased>,
}

fn malformed(name: &str, what: &str) -> BackendError {
    BackendError::new(BackendErrorKind::MalformedRecord, format!("etcd: the read-write lock {name} has {what}"))
}

impl KeysView for View {
    fn read<'a>(name: &str, kvs: impl IntoIterator<Item = (&'a str, &'a str, i64)>) -> Result<Self, BackendError> {
        let mut view = Self::default();
        for (key, value, lease) in kvs {
            let leased = || Leased::of(value, lease).ok_or_else(|| malformed(name, "a key without its lease"));
            let token = |hexed: &str| unhex(hexed).ok_or_else(|| malformed(name, "a key whose token is not hex"));
            match key.split_once('.') {
                None if key == "g" => {
                    view.generation = value.parse().map_err(|_| malformed(name, "a generation that is not a count"))?;
                }
                None if key == "wl" => view.last_writer = true,
                Some(("w", t)) => view.writer = Some((token(t)?, leased()?)),
                Some(("r", t)) => drop(view.readers.insert(token(t)?, leased()?)),
                Some(("i", t)) => drop(view.intents.insert(token(t)?, leased()?)),
                _ => return Err(malformed(name, &format!("a key {key:?} of no read-write lock"))),
            }
        }
        Ok(view)
    }
}

impl View {
    fn writes(&self, token: &str) -> Option<Leased> {
        self.writer.as_ref().filter(|(t, _)| t == token).map(|(_, l)| *l)
    }
}

impl EtcdBackend {
    /// What `tenure exporter` shows of the read-write lock `name`, or `None` if it has no key.
    pub(crate) async fn rw_shared_state(&self, name: &str) -> Result<Option<SharedState>, BackendError> {
        let view: View = self.view(name).await?;
        if view.generation == 0 && view.writer.is_none() && view.readers.is_empty() && view.intents.is_empty() {
            return Ok(None);
        }
        let mut told = self.held_details(name).await?;
        let mut holders = Vec::new();
        let leases = view.writer.iter().map(|(t, l)| (t, l, Side::Write));
        for (token, leased, side) in leases.chain(view.readers.iter().map(|(t, l)| (t, l, Side::Read))) {
            if let Some(expires_at) = self.lease_end(leased.lease).await? {
                let details = told.remove(token);
                holders.push(Holding { token: token.clone(), side, expires_at, details });
            }
        }
        holders.sort_by(|a, b| a.token.cmp(&b.token));
        let fence = (view.generation > 0).then(|| FencingToken::new(view.generation));
        Ok(Some(SharedState {
            key: name.to_owned(),
            fence,
            holders,
            waiters: view.intents.into_keys().collect(),
            permits: None,
        }))
    }
    /// A release-like call: deletes `keys` if `holds` finds the caller's lease, answering
    /// whether it did.
    async fn rw_let_go(
        &self,
        name: &str,
        holds: impl Fn(&View) -> Option<Leased>,
        keys: impl Fn(&str) -> Vec<String>,
    ) -> Result<bool, BackendError> {
        self.txn_call(name, |view: &View, prefix| {
            let Some(held) = holds(view) else { return Ok(Plan::answer(false)) };
            Ok(Plan { deletes: keys(prefix), retired: vec![held.lease], ..Plan::answer(true) })
        })
        .await
    }
}

impl ReadWriteOperations for EtcdBackend {
    async fn acquire_read(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
    ) -> Result<Option<FencingToken>, BackendError> {
        self.acquire_read_with_details(name, token, lease, None).await
    }

    async fn acquire_read_with_details(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        details: Option<&HolderDetails>,
    ) -> Result<Option<FencingToken>, BackendError> {
        let beside = self.held_beside(name, token, details);
        self.txn_call(name, |view: &View, prefix| {
            let generation = Some(FencingToken::new(view.generation));
            let reads = view.readers.get(token).copied();
            if reads.is_none() && (view.writer.is_some() || !view.intents.is_empty()) {
                return Ok(Plan::answer(None));
            }
            let key = format!("{prefix}r.{}", hex(token));
            let leased = LeasedPut::new(key, reads, lease).with_beside(beside.clone());
            Ok(Plan { leased: Some(leased), ..Plan::answer(generation) })
        })
        .await
    }

    async fn acquire_write(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        intent: bool,
    ) -> Result<Option<WriteGrant>, BackendError> {
        self.acquire_write_with_details(name, token, (lease, intent), None).await
    }

    async fn acquire_write_with_details(
        &self,
        name: &str,
        token: &str,
        (lease, intent): (Duration, bool),
        details: Option<&HolderDetails>,
    ) -> Result<Option<WriteGrant>, BackendError> {
        let beside = self.held_beside(name, token, details);
        self.txn_call(name, |view: &View, prefix| {
            let key = format!("{prefix}w.{}", hex(token));
            if let Some(writes) = view.writes(token) {
                let grant = WriteGrant { fence: FencingToken::new(view.generation), poisoned: false };
                return Ok(Plan {
                    leased: Some(LeasedPut::new(key, Some(writes), lease)),
                    ..Plan::answer(Some(grant))
                });
            }
            if view.writer.is_some() || !view.readers.is_empty() {
                let intent_key = format!("{prefix}i.{}", hex(token));
                let leased = intent.then(|| LeasedPut::new(intent_key, view.intents.get(token).copied(), lease));
                return Ok(Plan { leased, ..Plan::answer(None) });
            }
            let generation = view.generation.checked_add(1).ok_or_else(|| malformed(name, "no generation left"))?;
            let grant = WriteGrant { fence: FencingToken::new(generation), poisoned: view.last_writer };
            let leased = LeasedPut::new(key, None, lease).with_beside(beside.clone());
            let mut plan = Plan { leased: Some(leased), ..Plan::answer(Some(grant)) };
            plan.puts = vec![(format!("{prefix}g"), generation.to_string()), (format!("{prefix}wl"), token.to_owned())];
            if let Some(withdrawn) = view.intents.get(token) {
                plan.deletes.push(format!("{prefix}i.{}", hex(token)));
                plan.retired.push(withdrawn.lease);
            }
            Ok(plan)
        })
        .await
    }

    async fn release_read(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        let key = |prefix: &str| vec![format!("{prefix}r.{}", hex(token))];
        self.rw_let_go(name, |view| view.readers.get(token).copied(), key).await
    }

    async fn release_write(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        let keys = |prefix: &str| vec![format!("{prefix}w.{}", hex(token)), format!("{prefix}wl")];
        self.rw_let_go(name, |view| view.writes(token), keys).await
    }

    async fn cancel_intent(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        let key = |prefix: &str| vec![format!("{prefix}i.{}", hex(token))];
        self.rw_let_go(name, |view| view.intents.get(token).copied(), key).await
    }

    async fn downgrade(&self, name: &str, token: &str, lease: Duration) -> Result<Option<FencingToken>, BackendError> {
        // The writer's details go with its write lease: put again on the read lease.
        let beside = self.held_beside_now(name, token).await?;
        self.txn_call(name, |view: &View, prefix| {
            let Some(writes) = view.writes(token) else { return Ok(Plan::answer(None)) };
            Ok(Plan {
                leased: Some(
                    LeasedPut::new(format!("{prefix}r.{}", hex(token)), view.readers.get(token).copied(), lease)
                        .with_beside(beside.clone()),
                ),
                deletes: vec![format!("{prefix}w.{}", hex(token)), format!("{prefix}wl")],
                retired: vec![writes.lease],
                ..Plan::answer(Some(FencingToken::new(view.generation)))
            })
        })
        .await
    }

    async fn state(&self, name: &str) -> Result<RwState, BackendError> {
        let view = self.view::<View>(name).await?;
        Ok(RwState {
            generation: view.generation,
            writing: view.writer.is_some(),
            readers: view.readers.len(),
            waiting_writers: view.intents.len(),
        })
    }

    async fn owned_read(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        Ok(self.view::<View>(name).await?.readers.contains_key(token))
    }

    async fn owned_write(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        Ok(self.view::<View>(name).await?.writes(token).is_some())
    }

    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        Some(self.watch.queues.wakeup(name, Wake::All))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::txn::own_keys;

    #[test]
    fn a_view_reads_its_keys_and_not_a_longer_names() {
        let keys = [
            ("p/rwlock:a/g".to_owned(), "3", 0),
            ("p/rwlock:a/wl".to_owned(), "w1", 0),
            (format!("p/rwlock:a/r.{}", hex("r1")), "5", 7),
            (format!("p/rwlock:a/i.{}", hex("w2")), "5", 8),
            ("p/rwlock:a/b/g".to_owned(), "9", 0),
            (format!("p/rwlock:a/b/w.{}", hex("w9")), "5", 9),
        ];
        let read = keys.iter().map(|(k, v, l)| (k.as_str(), *v, *l));
        let view = View::read("rwlock:a", own_keys("p/rwlock:a/", read)).expect("a view");
        assert_eq!((view.generation, view.last_writer, view.writer.is_none()), (3, true, true));
        assert_eq!(view.readers.keys().collect::<Vec<_>>(), ["r1"]);
        assert_eq!(view.intents.keys().collect::<Vec<_>>(), ["w2"]);
        for bad in [("g", "x", 0), ("r.zz", "5", 7), ("r.6131", "5", 0)] {
            let err = View::read("rwlock:a", [bad]).expect_err("malformed");
            assert_eq!(err.kind(), BackendErrorKind::MalformedRecord);
        }
    }
}
