//! The calls of Tenure's own multi-key layouts on etcd (read-write locks, semaphores): every key
//! of a name lives under `<prefix><key>/`; a call reads them all (one linearizable range),
//! decides, and writes in one transaction guarded on nothing under the name having changed since
//! the read (a range comparison of mod revisions), so concurrent calls take turns; one that lost
//! the race reads again. This process's calls on a name take turns before they read (see
//! [`Turns`]), so they never overtake one another: only other processes' calls make one read
//! again.
//!
//! A leased key's value starts with its lease's TTL in seconds (then, for some keys, a space and
//! a number). A renewal for as long as before refreshes the key's own lease (no consensus write);
//! for another length it moves the key onto a new lease and revokes the old one once moved.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use crate::client::{Compare, CompareOp, GetOptions, KeyValue, PutOptions, Txn, TxnOp};
use tenure_core::{BackendError, BackendErrorKind};

use crate::EtcdBackend;
use crate::lease::ttl_of;

/// How many times a call reads again after another call's transaction overtook its own.
const ATTEMPTS: usize = 16;

/// One turn per name for this process's calls on it: a fair async mutex each, kept while a call
/// holds or awaits it.
#[derive(Default)]
pub(crate) struct Turns {
    names: std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl Turns {
    /// Waits for `name`'s turn; the turn passes on when the returned guard drops.
    pub(crate) async fn take(&self, name: &str) -> Turn<'_> {
        let mutex = {
            let mut names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
            names.entry(name.to_owned()).or_default().clone()
        };
        let guard = mutex.clone().lock_owned().await;
        Turn { turns: self, name: name.to_owned(), mutex: Some(mutex), guard: Some(guard) }
    }
}

/// A name's turn, held.
pub(crate) struct Turn<'a> {
    turns: &'a Turns,
    name: String,
    mutex: Option<Arc<tokio::sync::Mutex<()>>>,
    guard: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut names = self.turns.names.lock().unwrap_or_else(PoisonError::into_inner);
        self.guard.take();
        self.mutex.take();
        // The map's is the last reference once no call holds or awaits the turn.
        if names.get(&self.name).is_some_and(|m| Arc::strong_count(m) == 1) {
            names.remove(&self.name);
        }
    }
}

/// A leased key: its lease and TTL.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Leased {
    pub(crate) lease: i64,
    pub(crate) ttl: i64,
}

impl Leased {
    /// The lease of a key whose value starts with its TTL, or `None` if it has none.
    pub(crate) fn of(value: &str, lease: i64) -> Option<Self> {
        let ttl = value.split(' ').next()?.parse::<i64>().ok().filter(|t| *t > 0 && lease != 0)?;
        Some(Self { lease, ttl })
    }
}

/// A key to put on a lease of `lease` (refreshed in place when it holds one of that length
/// already).
pub(crate) struct LeasedPut {
    key: String,
    /// The lease it has now, if it exists.
    now: Option<Leased>,
    lease: Duration,
    /// What its value holds after the TTL: nothing, or a space and a number.
    rest: String,
    /// Keys (with their values) put on the same lease when the key gets a new one: its holder's
    /// details (see `details.rs`).
    beside: Vec<(String, String)>,
}

impl LeasedPut {
    pub(crate) fn new(key: String, now: Option<Leased>, lease: Duration) -> Self {
        Self { key, now, lease, rest: String::new(), beside: Vec::new() }
    }

    /// The same key, with `beside` put on its lease whenever it gets a new one (a grant, a
    /// move): they end with it.
    pub(crate) fn with_beside(mut self, beside: Vec<(String, String)>) -> Self {
        self.beside = beside;
        self
    }

    /// The same key, its value carrying `number` after the TTL.
    pub(crate) fn carrying(mut self, number: u64) -> Self {
        self.rest = format!(" {number}");
        self
    }
}

/// What a call does after reading: its answer, once the key `leased` (if any) is put on its
/// lease and the rest of the transaction applied.
pub(crate) struct Plan<T> {
    pub(crate) answer: T,
    pub(crate) leased: Option<LeasedPut>,
    pub(crate) puts: Vec<(String, String)>,
    pub(crate) deletes: Vec<String>,
    /// Leases whose keys the transaction deletes, revoked once it is applied.
    pub(crate) retired: Vec<i64>,
}

impl<T> Plan<T> {
    pub(crate) fn answer(answer: T) -> Self {
        Self { answer, leased: None, puts: Vec::new(), deletes: Vec::new(), retired: Vec::new() }
    }
}

pub(crate) fn hex(token: &str) -> String {
    token.bytes().fold(String::with_capacity(token.len() * 2), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

pub(crate) fn unhex(text: &str) -> Option<String> {
    let bytes: Option<Vec<u8>> = (0..text.len())
        .step_by(2)
        .map(|i| text.get(i..i + 2).and_then(|pair| u8::from_str_radix(pair, 16).ok()))
        .collect();
    bytes.and_then(|b| String::from_utf8(b).ok())
}

/// The key, value and lease of each key-value read.
pub(crate) fn parts(kvs: &[KeyValue]) -> impl Iterator<Item = (&str, &str, i64)> {
    kvs.iter().map(|kv| (kv.key_str().unwrap_or(""), kv.value_str().unwrap_or(""), kv.lease()))
}

/// The keys read under a name's `prefix`, as `(key below the prefix, value, lease)`, without the
/// keys of a longer name (`rwlock:a/b/…` under `rwlock:a/`).
pub(crate) fn own_keys<'a>(
    prefix: &'a str,
    kvs: impl IntoIterator<Item = (&'a str, &'a str, i64)> + 'a,
) -> impl Iterator<Item = (&'a str, &'a str, i64)> + 'a {
    kvs.into_iter()
        .map(move |(key, value, lease)| (key.strip_prefix(prefix).unwrap_or(""), value, lease))
        .filter(|(key, ..)| !key.contains('/'))
}

/// What a name's keys say, read from them.
pub(crate) trait KeysView: Sized {
    /// The view of the keys of `name` (below its prefix, with their values and leases).
    fn read<'a>(name: &str, kvs: impl IntoIterator<Item = (&'a str, &'a str, i64)>) -> Result<Self, BackendError>;
}

impl EtcdBackend {
    /// The prefix every key of `name` lives under.
    pub(crate) fn keys_prefix(&self, name: &str) -> String {
        format!("{}{name}/", self.options.prefix)
    }

    /// What the keys of `name` say now.
    pub(crate) async fn view<V: KeysView>(&self, name: &str) -> Result<V, BackendError> {
        let (_, kvs) = self.read_keys(name).await?;
        V::read(name, own_keys(&self.keys_prefix(name), parts(&kvs)))
    }

    /// Every key of `name` and the revision read at.
    async fn read_keys(&self, name: &str) -> Result<(i64, Vec<KeyValue>), BackendError> {
        let prefix = self.keys_prefix(name);
        self.run("reading the keys of", name, move |client| async move {
            let mut read = client.get(prefix, Some(GetOptions::new().with_prefix())).await?;
            Ok((read.revision(), read.take_kvs()))
        })
        .await
    }

    /// Reads `name`'s keys into a view, plans with `decide`, and carries the plan out, reading
    /// again when another call's transaction came first.
    pub(crate) async fn txn_call<V: KeysView, T>(
        &self,
        name: &str,
        decide: impl Fn(&V, &str) -> Result<Plan<T>, BackendError>,
    ) -> Result<T, BackendError> {
        let prefix = self.keys_prefix(name);
        let _turn = self.state.turns.take(name).await;
        for _ in 0..ATTEMPTS {
            let (revision, kvs) = self.read_keys(name).await?;
            let plan = decide(&V::read(name, own_keys(&prefix, parts(&kvs)))?, &prefix)?;
            let mut ops: Vec<TxnOp> = plan.deletes.iter().map(|k| TxnOp::delete(k.as_str())).collect();
            ops.extend(plan.puts.iter().map(|(k, v)| TxnOp::put(k.as_str(), v.as_str(), None)));
            let mut fresh = None;
            let mut moved = None;
            if let Some(LeasedPut { key, now, lease, rest, beside }) = &plan.leased {
                if let Some(now) = now.filter(|n| n.ttl == ttl_of(*lease))
                    && ops.is_empty()
                {
                    // A renewal for as long as before: the key's own lease, refreshed.
                    if self.refresh_key(now.lease, name).await? {
                        return Ok(plan.answer);
                    }
                    continue; // it ended meanwhile (its key with it): read again
                }
                let granted = self.lease_for(*lease, name).await?;
                let value = format!("{}{rest}", granted.ttl);
                ops.push(TxnOp::put(key.as_str(), value, Some(PutOptions::new().with_lease(granted.id))));
                for (key, value) in beside {
                    ops.push(TxnOp::put(key.as_str(), value.as_str(), Some(PutOptions::new().with_lease(granted.id))));
                }
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
            // The keys the plan counts on — those it deletes, the one it moves — must still be
            // there: the range comparison sees changes, not keys a lease's end deleted.
            let relied = plan.deletes.iter().chain(plan.leased.iter().filter(|p| p.now.is_some()).map(|p| &p.key));
            let present = relied
                .map(|key| {
                    let created = kvs.iter().find(|kv| kv.key() == key.as_bytes()).map_or(0, KeyValue::create_revision);
                    Compare::create_revision(key.as_str(), CompareOp::Equal, created)
                })
                .collect();
            let committed = self.commit(name, &prefix, revision, present, ops).await?;
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
            format!("etcd: the calls on {name} kept overtaking each other"),
        ))
    }

    async fn refresh_key(&self, lease: i64, name: &str) -> Result<bool, BackendError> {
        self.run("refreshing a lease of", name, move |client| async move { client.lease_keep_alive(lease).await }).await
    }

    /// Applies `ops` iff nothing under `prefix` changed after `revision` and the `present`
    /// comparisons hold.
    async fn commit(
        &self,
        name: &str,
        prefix: &str,
        revision: i64,
        mut present: Vec<Compare>,
        ops: Vec<TxnOp>,
    ) -> Result<bool, BackendError> {
        let prefix = prefix.to_owned();
        self.run("writing the keys of", name, move |client| async move {
            present.push(Compare::mod_revision(prefix, CompareOp::Less, revision + 1).with_prefix());
            Ok(client.txn(Txn::new().when(present).and_then(ops)).await?.succeeded())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_hex_in_keys_and_read_back() {
        for token in ["w1:task:0.ab", "a/b", "é", ""] {
            assert_eq!(unhex(&hex(token)).as_deref(), Some(token));
        }
        assert_eq!(hex("a/"), "612f");
        assert_eq!(unhex("6"), None);
        assert_eq!(unhex("zz"), None);
    }

    #[test]
    fn a_leased_value_starts_with_its_ttl() {
        assert!(matches!(Leased::of("5", 7), Some(Leased { lease: 7, ttl: 5 })));
        assert!(matches!(Leased::of("5 12", 7), Some(Leased { lease: 7, ttl: 5 })));
        assert!(Leased::of("5", 0).is_none() && Leased::of("x", 7).is_none() && Leased::of("0", 7).is_none());
    }
}
