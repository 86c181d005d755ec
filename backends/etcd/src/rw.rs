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
//! A leased key's value is its lease's TTL in seconds. A call reads every key of the name (one
//! linearizable range), decides as the store model does, and writes in one transaction guarded on
//! nothing under the name having changed since the read (a range comparison of mod revisions), so
//! concurrent calls take turns; one that lost the race reads again. An expired lease deletes its
//! key (etcd's own reaping), and the watch on the store's prefix pushes every deletion — a
//! release, a withdrawn intent, a downgrade, an expiry — to the name's waiters.
//!
//! Leases are whole seconds, as the locks' are (see the crate's docs): the store holds at least
//! as long as the holder believes. A renewal for as long as before refreshes the key's own lease
//! (no consensus write); for another length it moves the key onto a new lease and revokes the old
//! one once moved.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use etcd_client::{Compare, CompareOp, GetOptions, PutOptions, Txn, TxnOp};
use tenure::backend::{ReadWriteOperations, Wake, Wakeup};
use tenure_core::{BackendError, BackendErrorKind, FencingToken, RwState, WriteGrant};

use crate::EtcdBackend;
use crate::lease::{keep_alive, ttl_of};

/// How many times a call reads again after another call's transaction overtook its own.
const ATTEMPTS: usize = 16;

/// A leased key: its lease and TTL.
#[derive(Clone, Copy, Debug)]
struct Leased {
    lease: i64,
    ttl: i64,
}

/// Every key of one read-write lock, as read at `revision`.
#[derive(Debug, Default)]
struct View {
    revision: i64,
    generation: u64,
    writer: Option<(String, Leased)>,
    /// `wl` is there: a writer holds, or the last one expired without releasing.
    last_writer: bool,
    readers: BTreeMap<String, Leased>,
    intents: BTreeMap<String, Leased>,
}

/// What a call does after reading: its answer, once the key `leased` (if any) is put on a lease
/// of `lease` — refreshed in place when it holds one of that length already — and the rest of
/// the transaction applied.
struct Plan<T> {
    answer: T,
    /// The key to put on a lease, and the lease it has now (if it exists).
    leased: Option<(String, Option<Leased>)>,
    puts: Vec<(String, String)>,
    deletes: Vec<String>,
    /// Leases whose keys the transaction deletes, revoked once it is applied.
    retired: Vec<i64>,
}

impl<T> Plan<T> {
    fn answer(answer: T) -> Self {
        Self { answer, leased: None, puts: Vec::new(), deletes: Vec::new(), retired: Vec::new() }
    }
}

fn hex(token: &str) -> String {
    token.bytes().fold(String::with_capacity(token.len() * 2), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

fn unhex(text: &str) -> Option<String> {
    let bytes: Option<Vec<u8>> = (0..text.len())
        .step_by(2)
        .map(|i| text.get(i..i + 2).and_then(|pair| u8::from_str_radix(pair, 16).ok()))
        .collect();
    bytes.and_then(|b| String::from_utf8(b).ok())
}

fn malformed(name: &str, what: &str) -> BackendError {
    BackendError::new(BackendErrorKind::MalformedRecord, format!("etcd: the read-write lock {name} has {what}"))
}

impl View {
    /// The view of `kvs`, the keys (with their values and leases) read under `prefix`.
    fn read<'a>(
        name: &str,
        revision: i64,
        prefix: &str,
        kvs: impl IntoIterator<Item = (&'a str, &'a str, i64)>,
    ) -> Result<Self, BackendError> {
        let mut view = Self { revision, ..Self::default() };
        for (key, value, lease) in kvs {
            let key = key.strip_prefix(prefix).unwrap_or("");
            if key.contains('/') {
                continue; // a key of a longer name (`rwlock:a/b` under `rwlock:a/`)
            }
            let leased = || {
                let ttl = value.parse::<i64>().ok().filter(|t| *t > 0 && lease != 0);
                ttl.map(|ttl| Leased { lease, ttl }).ok_or_else(|| malformed(name, "a key without its lease"))
            };
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

    fn writes(&self, token: &str) -> Option<Leased> {
        self.writer.as_ref().filter(|(t, _)| t == token).map(|(_, l)| *l)
    }
}

impl EtcdBackend {
    fn rw_prefix(&self, name: &str) -> String {
        format!("{}{name}/", self.options.prefix)
    }

    async fn rw_view(&self, name: &str) -> Result<View, BackendError> {
        let prefix = self.rw_prefix(name);
        let (revision, kvs) = self
            .run("reading a read-write lock", name, move |mut client| async move {
                let mut read = client.get(prefix, Some(GetOptions::new().with_prefix())).await?;
                Ok((read.header().map_or(0, etcd_client::ResponseHeader::revision), read.take_kvs()))
            })
            .await?;
        let keys = kvs.iter().map(|kv| (kv.key_str().unwrap_or(""), kv.value_str().unwrap_or(""), kv.lease()));
        View::read(name, revision, &self.rw_prefix(name), keys)
    }

    /// Reads the lock, plans with `decide`, and carries the plan out, reading again when another
    /// call's transaction came first.
    async fn rw_call<T>(
        &self,
        name: &str,
        lease: Duration,
        decide: impl Fn(&View, &str) -> Result<Plan<T>, BackendError>,
    ) -> Result<T, BackendError> {
        let prefix = self.rw_prefix(name);
        let ttl = ttl_of(lease);
        for _ in 0..ATTEMPTS {
            let view = self.rw_view(name).await?;
            let plan = decide(&view, &prefix)?;
            let mut ops: Vec<TxnOp> = plan.deletes.iter().map(|k| TxnOp::delete(k.as_str(), None)).collect();
            ops.extend(plan.puts.iter().map(|(k, v)| TxnOp::put(k.as_str(), v.as_str(), None)));
            let mut fresh = None;
            let mut moved = None;
            if let Some((key, now)) = &plan.leased {
                if let Some(now) = now.filter(|n| n.ttl == ttl)
                    && ops.is_empty()
                {
                    // A renewal for as long as before: the key's own lease, refreshed.
                    if self.rw_refresh(now.lease, name).await? {
                        return Ok(plan.answer);
                    }
                    continue; // it ended meanwhile (its key with it): read again
                }
                let granted = self.lease_for(lease, name).await?;
                ops.push(TxnOp::put(
                    key.as_str(),
                    granted.ttl.to_string(),
                    Some(PutOptions::new().with_lease(granted.id)),
                ));
                match now {
                    Some(old) => moved = Some((granted, old.lease)),
                    None => fresh = Some(granted),
                }
            }
            if ops.is_empty() {
                return Ok(plan.answer);
            }
            // A key put on a fresh lease goes with it if this call is dropped before it answers.
            let unsettled = fresh.map(|f| self.until_settled(f.id));
            let committed = self.rw_commit(name, &prefix, view.revision, ops).await?;
            if let Some(unsettled) = unsettled {
                unsettled.settled(); // put and answered, or not put at all
            }
            if committed {
                for retired in plan.retired.iter().copied().chain(moved.map(|(_, old)| old)) {
                    self.revoke_later(retired);
                }
                return Ok(plan.answer);
            }
            if let Some(unused) = fresh.or(moved.map(|(new, _)| new)) {
                self.give_back(unused); // no key was put on it
            }
        }
        Err(BackendError::new(
            BackendErrorKind::Unavailable,
            format!("etcd: the calls on the read-write lock {name} kept overtaking each other"),
        ))
    }

    async fn rw_refresh(&self, lease: i64, name: &str) -> Result<bool, BackendError> {
        self.run("refreshing a read-write lock's lease", name, move |client| keep_alive(client, lease)).await
    }

    /// Applies `ops` iff nothing under `prefix` changed after `revision`.
    async fn rw_commit(&self, name: &str, prefix: &str, revision: i64, ops: Vec<TxnOp>) -> Result<bool, BackendError> {
        let prefix = prefix.to_owned();
        self.run("writing a read-write lock", name, move |mut client| async move {
            let unchanged = Compare::mod_revision(prefix, CompareOp::Less, revision + 1).with_prefix();
            Ok(client.txn(Txn::new().when([unchanged]).and_then(ops)).await?.succeeded())
        })
        .await
    }

    /// A release-like call: deletes `keys` if `holds` finds the caller's lease, answering
    /// whether it did.
    async fn rw_let_go(
        &self,
        name: &str,
        holds: impl Fn(&View) -> Option<Leased>,
        keys: impl Fn(&str) -> Vec<String>,
    ) -> Result<bool, BackendError> {
        self.rw_call(name, Duration::ZERO, |view, prefix| {
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
        self.rw_call(name, lease, |view, prefix| {
            let generation = Some(FencingToken::new(view.generation));
            let reads = view.readers.get(token).copied();
            if reads.is_none() && (view.writer.is_some() || !view.intents.is_empty()) {
                return Ok(Plan::answer(None));
            }
            Ok(Plan { leased: Some((format!("{prefix}r.{}", hex(token)), reads)), ..Plan::answer(generation) })
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
        self.rw_call(name, lease, |view, prefix| {
            let key = format!("{prefix}w.{}", hex(token));
            if let Some(writes) = view.writes(token) {
                let grant = WriteGrant { fence: FencingToken::new(view.generation), poisoned: false };
                return Ok(Plan { leased: Some((key, Some(writes))), ..Plan::answer(Some(grant)) });
            }
            if view.writer.is_some() || !view.readers.is_empty() {
                let intent_key = format!("{prefix}i.{}", hex(token));
                let leased = intent.then(|| (intent_key, view.intents.get(token).copied()));
                return Ok(Plan { leased, ..Plan::answer(None) });
            }
            let generation = view.generation.checked_add(1).ok_or_else(|| malformed(name, "no generation left"))?;
            let grant = WriteGrant { fence: FencingToken::new(generation), poisoned: view.last_writer };
            let mut plan = Plan { leased: Some((key, None)), ..Plan::answer(Some(grant)) };
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
        self.rw_call(name, lease, |view, prefix| {
            let Some(writes) = view.writes(token) else { return Ok(Plan::answer(None)) };
            Ok(Plan {
                leased: Some((format!("{prefix}r.{}", hex(token)), view.readers.get(token).copied())),
                deletes: vec![format!("{prefix}w.{}", hex(token)), format!("{prefix}wl")],
                retired: vec![writes.lease],
                ..Plan::answer(Some(FencingToken::new(view.generation)))
            })
        })
        .await
    }

    async fn state(&self, name: &str) -> Result<RwState, BackendError> {
        let view = self.rw_view(name).await?;
        Ok(RwState {
            generation: view.generation,
            writing: view.writer.is_some(),
            readers: view.readers.len(),
            waiting_writers: view.intents.len(),
        })
    }

    async fn owned_read(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        Ok(self.rw_view(name).await?.readers.contains_key(token))
    }

    async fn owned_write(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        Ok(self.rw_view(name).await?.writes(token).is_some())
    }

    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        Some(self.watch.queues.wakeup(name, Wake::All))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let view = View::read("rwlock:a", 12, "p/rwlock:a/", read).expect("a view");
        assert_eq!((view.generation, view.last_writer, view.writer.is_none()), (3, true, true));
        assert_eq!(view.readers.keys().collect::<Vec<_>>(), ["r1"]);
        assert_eq!(view.intents.keys().collect::<Vec<_>>(), ["w2"]);
        for bad in [("p/rwlock:a/g", "x", 0), ("p/rwlock:a/r.zz", "5", 7), ("p/rwlock:a/r.6131", "5", 0)] {
            let err = View::read("rwlock:a", 12, "p/rwlock:a/", [bad]).expect_err("malformed");
            assert_eq!(err.kind(), BackendErrorKind::MalformedRecord);
        }
    }

    #[test]
    fn tokens_are_hex_in_keys_and_read_back() {
        for token in ["w1:task:0.ab", "a/b", "é", ""] {
            assert_eq!(unhex(&hex(token)).as_deref(), Some(token));
        }
        assert_eq!(hex("a/"), "612f");
        assert_eq!(unhex("6"), None);
        assert_eq!(unhex("zz"), None);
    }
}
