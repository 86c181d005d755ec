//! A name's contenders in the layout of etcd's `concurrency.Mutex`: the keys directly under
//! `<prefix><name>/`, each named by its lease in hex and attached to it; the lowest create
//! revision holds the name. How a key is put, renewed and deleted, each guarded so that a call
//! overtaken by a later one of the same token never undoes it.

use std::time::Instant;

use crate::client::{Compare, CompareOp, GetOptions, KeyValue, PutOptions, SortOrder, SortTarget, Txn, TxnOp};
use crate::client::{TxnOpResponse, TxnResponse};
use tenure_core::BackendError;

use crate::EtcdBackend;
use crate::lease::Leased;

/// A contender's key as this store knows it: its name, create revision (the fence) and lease.
#[derive(Clone, Debug)]
pub(crate) struct Held {
    pub(crate) key: Vec<u8>,
    pub(crate) revision: i64,
    /// The lease the key is on, if this store granted or refreshed it (its TTL is then known).
    pub(crate) lease: Lease,
}

/// The lease of a key.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Lease {
    /// One this store holds the details of.
    Known(Leased),
    /// Read from the store: only its id.
    Read(i64),
}

impl Lease {
    pub(crate) fn id(&self) -> i64 {
        match self {
            Self::Known(leased) => leased.id,
            Self::Read(id) => *id,
        }
    }
}

impl Held {
    pub(crate) fn of(kv: &KeyValue) -> Self {
        Self { key: kv.key().to_vec(), revision: kv.create_revision(), lease: Lease::Read(kv.lease()) }
    }

    /// The key is still this one, on this lease.
    fn unchanged(&self) -> [Compare; 2] {
        [
            Compare::create_revision(self.key.clone(), CompareOp::Equal, self.revision),
            Compare::lease(self.key.clone(), CompareOp::Equal, self.lease.id()),
        ]
    }
}

/// Whether `key` is directly under `prefix` (a contender of that name, not of a longer one).
pub(crate) fn direct(key: &[u8], prefix: &str) -> bool {
    key.strip_prefix(prefix.as_bytes()).is_some_and(|rest| !rest.contains(&b'/'))
}

/// Every key under a prefix, oldest first.
pub(crate) fn by_age() -> GetOptions {
    GetOptions::new().with_prefix().with_sort(SortTarget::Create, SortOrder::Ascend)
}

/// The keys a transaction's range operations read, in order.
pub(crate) fn ranges(response: &TxnResponse) -> Vec<Vec<KeyValue>> {
    response
        .op_responses()
        .into_iter()
        .filter_map(|op| match op {
            TxnOpResponse::Get(mut get) => Some(get.take_kvs()),
            _ => None,
        })
        .collect()
}

/// What a [`EtcdBackend::take`] also checks, writes and reads (none for a lock).
#[derive(Default, Clone)]
pub(crate) struct Beside {
    pub(crate) guards: Vec<Compare>,
    pub(crate) also: Vec<TxnOp>,
    pub(crate) read: Vec<TxnOp>,
}

/// What [`EtcdBackend::take`] found.
pub(crate) enum Taken {
    /// The name had no contender: the key is put and holds it.
    Holds(Held),
    /// The name's contenders (directly under its prefix), oldest first; the lease was given back.
    Contended(Vec<KeyValue>),
    /// Only keys of longer names were under the prefix: the lease is still the caller's.
    Crowded(Leased),
}

impl EtcdBackend {
    /// `prefix`'s contenders, the holder first (lowest create revision): the keys directly under
    /// it (a name holding `/` has its own keys further down, which are not its contenders).
    pub(crate) async fn contenders(&self, prefix: String, about: &str) -> Result<Vec<KeyValue>, BackendError> {
        let all = self
            .run("reading the contenders", about, {
                let prefix = prefix.clone();
                move |client| async move { Ok(client.get(prefix, Some(by_age())).await?.take_kvs()) }
            })
            .await?;
        Ok(all.into_iter().filter(|kv| direct(kv.key(), &prefix)).collect())
    }

    /// In one write: puts `value` under `prefix` on `leased` if no key is under it (and
    /// `beside`'s guards hold; its writes made beside it), else reads the contenders (and
    /// `beside`'s reads).
    pub(crate) async fn take(
        &self,
        prefix: String,
        value: Vec<u8>,
        leased: Leased,
        beside: Beside,
        about: &str,
    ) -> Result<(Taken, TxnResponse), BackendError> {
        let Beside { guards, also, read } = beside;
        let key = format!("{prefix}{:x}", leased.id);
        let mut when = vec![Compare::create_revision(prefix.clone(), CompareOp::Equal, 0).with_prefix()];
        when.extend(guards);
        let mut then = vec![TxnOp::put(key.clone(), value, Some(PutOptions::new().with_lease(leased.id)))];
        then.extend(also);
        let mut otherwise = vec![TxnOp::get(prefix.clone(), Some(by_age()))];
        otherwise.extend(read);
        let response = self.put_on(leased, Txn::new().when(when).and_then(then).or_else(otherwise), about).await?;
        if response.succeeded() {
            let revision = response.revision();
            let held = Held { key: key.into_bytes(), revision, lease: Lease::Known(leased) };
            return Ok((Taken::Holds(held), response));
        }
        let all = ranges(&response).into_iter().next().unwrap_or_default();
        let contenders: Vec<KeyValue> = all.into_iter().filter(|kv| direct(kv.key(), &prefix)).collect();
        if contenders.is_empty() {
            return Ok((Taken::Crowded(leased), response));
        }
        self.give_back(leased);
        Ok((Taken::Contended(contenders), response))
    }

    /// [`Self::take`] on a spare lease refreshed beside it: the refresh (answered by the
    /// cluster's leader) and the take (a write) in flight together, one round trip for both.
    /// None if no spare of the TTL was alive (the caller takes on a lease of its own).
    ///
    /// The take is sent with the spare as it was last known alive; a key it puts is believed
    /// only once the refresh answered (so the lease lives its TTL from before both sends).
    pub(crate) async fn take_on_spare(
        &self,
        prefix: String,
        value: Vec<u8>,
        lease: std::time::Duration,
        beside: Beside,
        about: &str,
    ) -> Result<Option<(Taken, TxnResponse)>, BackendError> {
        let ttl = crate::lease::ttl_of(lease);
        let Some(spare) = self.state.spares.take(ttl) else { return Ok(None) };
        let since = Instant::now();
        let refresh =
            self.run("refreshing a lease", about, move |client| async move { client.lease_keep_alive(spare.id).await });
        let take = async {
            let taken = self.take(prefix, value, spare, beside, about).await;
            // A key put, not believed until the refresh answers: dropped meanwhile, it goes. (A
            // refused take gave the spare back, where another call may use it: never revoked.)
            let unsettled = matches!(taken, Ok((Taken::Holds(_), _))).then(|| self.until_settled(spare.id));
            (taken, unsettled)
        };
        let (alive, (taken, unsettled)) = futures_lite::future::zip(refresh, take).await;
        if let Ok((Taken::Contended(contenders), response)) = taken {
            // Refused: the spare went back as it was known (the refresh changes nothing of that).
            return Ok(Some((Taken::Contended(contenders), response)));
        }
        let alive = alive?; // On an error the lease's life is unknown: a key on it goes with it.
        if let Some(unsettled) = unsettled {
            unsettled.settled();
        }
        if !alive {
            // The spare had ended: whatever the take put went with it.
            return Ok(None);
        }
        let refreshed = Leased { since, ..spare };
        let (taken, response) = taken?;
        let taken = match taken {
            Taken::Holds(held) => Taken::Holds(Held { lease: Lease::Known(refreshed), ..held }),
            _ => Taken::Crowded(refreshed),
        };
        Ok(Some((taken, response)))
    }

    /// [`Self::take`] on a spare refreshed beside it, else on a lease made ready first.
    pub(crate) async fn take_ready(
        &self,
        prefix: String,
        value: Vec<u8>,
        lease: std::time::Duration,
        beside: Beside,
        about: &str,
    ) -> Result<(Taken, TxnResponse), BackendError> {
        if let Some(taken) = self.take_on_spare(prefix.clone(), value.clone(), lease, beside.clone(), about).await? {
            return Ok(taken);
        }
        let leased = self.lease_for(lease, about).await?;
        self.take(prefix, value, leased, beside, about).await
    }

    /// Runs `txn`, which puts a key on `leased`; if its outcome is unknown, the key may have
    /// been put: the caller believes nothing, so it goes with its lease.
    /// (Also if this call is dropped before the outcome is known.)
    async fn put_on(&self, leased: Leased, txn: Txn, about: &str) -> Result<TxnResponse, BackendError> {
        let unsettled = self.until_settled(leased.id);
        let response = self.run("taking the name", about, move |client| async move { client.txn(txn).await }).await?;
        unsettled.settled();
        Ok(response)
    }

    /// A new contender's key under `prefix` holding `value`, on `leased`, when keys of longer
    /// names are under the prefix: the key if it is first at once, else none (and the key is
    /// gone again with its lease).
    pub(crate) async fn candidate(
        &self,
        prefix: String,
        value: Vec<u8>,
        leased: Leased,
        about: &str,
    ) -> Result<Option<Held>, BackendError> {
        let key = format!("{prefix}{:x}", leased.id);
        let txn = Txn::new().when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)]).and_then([
            TxnOp::put(key.clone(), value, Some(PutOptions::new().with_lease(leased.id))),
            TxnOp::get(prefix.clone(), Some(by_age().with_keys_only())),
        ]);
        let response = self.put_on(leased, txn, about).await?;
        // Until it is known to hold, or gone: dropped or failed, its key goes with its lease.
        let unsettled = self.until_settled(leased.id);
        let mine = response.revision();
        let first = ranges(&response)
            .into_iter()
            .next()
            .unwrap_or_default()
            .into_iter()
            .find(|kv| direct(kv.key(), &prefix))
            .map(|kv| kv.create_revision());
        if response.succeeded() && mine > 0 && first == Some(mine) {
            unsettled.settled();
            return Ok(Some(Held { key: key.into_bytes(), revision: mine, lease: Lease::Known(leased) }));
        }
        // Behind another contender: the key must not wait there (TryLock's rule).
        self.revoke(leased.id, about).await?;
        unsettled.settled();
        Ok(None)
    }

    /// Renews `held` for `lease` with `value` (written again when `rewrite`), keeping the key and
    /// its create revision (the fence): on its own lease, refreshed, when the TTL is the same; else
    /// moved onto a new one. None if the key is gone or moved meanwhile (by an overtaken call of
    /// the same token: its older lease is never put back).
    pub(crate) async fn renew(
        &self,
        held: &Held,
        value: Vec<u8>,
        rewrite: bool,
        lease: std::time::Duration,
        about: &str,
    ) -> Result<Option<Held>, BackendError> {
        let ttl = crate::lease::ttl_of(lease);
        if let Lease::Known(leased) = held.lease
            && leased.ttl == ttl
        {
            return self.renew_in_place(held, leased, value, rewrite, about).await;
        }
        let granted = self.lease_for(lease, about).await?;
        let (guards, key) = (held.unchanged(), held.key.clone());
        let moved = self
            .run("renewing a lease", about, move |client| async move {
                let put = TxnOp::put(key, value, Some(PutOptions::new().with_lease(granted.id)));
                Ok(client.txn(Txn::new().when(guards).and_then([put])).await?.succeeded())
            })
            .await;
        let moved = match moved {
            Ok(moved) => moved,
            Err(e) => {
                // Whether it moved is unknown: the caller believes nothing; neither lease is reused.
                self.revoke_later(granted.id);
                return Err(e);
            }
        };
        if !moved {
            self.give_back(granted);
            return Ok(None);
        }
        match held.lease {
            Lease::Known(old) => self.give_back(old),
            Lease::Read(old) => self.revoke_later(old),
        }
        Ok(Some(Held { key: held.key.clone(), revision: held.revision, lease: Lease::Known(granted) }))
    }

    /// The refresh of `held`'s own lease, beside a check (or a guarded rewrite) of its key.
    async fn renew_in_place(
        &self,
        held: &Held,
        leased: Leased,
        value: Vec<u8>,
        rewrite: bool,
        about: &str,
    ) -> Result<Option<Held>, BackendError> {
        let (guards, key) = (held.unchanged(), held.key.clone());
        let since = Instant::now();
        let (alive, kept) = self
            .run("renewing a lease", about, move |client| async move {
                let (refreshing, checking) = (client.clone(), client);
                let refresh = async move { refreshing.lease_keep_alive(leased.id).await };
                let check = async move {
                    let then = if rewrite {
                        TxnOp::put(key, value, Some(PutOptions::new().with_lease(leased.id)))
                    } else {
                        TxnOp::get(key, Some(GetOptions::new().with_keys_only()))
                    };
                    Ok::<_, crate::client::Error>(
                        checking.txn(Txn::new().when(guards).and_then([then])).await?.succeeded(),
                    )
                };
                let (alive, kept) = tokio::join!(refresh, check);
                Ok((alive?, kept?))
            })
            .await?;
        if !(alive && kept) {
            if alive {
                // Refreshed, but its key is gone or moved: the lease carries nothing now.
                self.revoke_later(leased.id);
            }
            return Ok(None);
        }
        Ok(Some(Held { lease: Lease::Known(Leased { since, ..leased }), ..held.clone() }))
    }

    /// Deletes `held` if it is still on the lease it was read with (and the keys `also` with it),
    /// and gives its lease back; whether it deleted it.
    pub(crate) async fn vacate(&self, held: &Held, also: Vec<TxnOp>, about: &str) -> Result<bool, BackendError> {
        let (guards, key) = (held.unchanged(), held.key.clone());
        let deleted = self
            .run("releasing", about, move |client| async move {
                let mut then = vec![TxnOp::delete(key)];
                then.extend(also);
                Ok(client.txn(Txn::new().when(guards).and_then(then)).await?.succeeded())
            })
            .await?;
        if deleted {
            match held.lease {
                Lease::Known(leased) => self.give_back(leased),
                Lease::Read(id) => self.revoke_later(id),
            }
        }
        Ok(deleted)
    }
}
