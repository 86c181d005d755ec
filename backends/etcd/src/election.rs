//! Leader elections in the layout of etcd's `concurrency.Election`: the candidates are keys under
//! `<prefix><name>/`, named by their lease, and the lowest create revision leads. A Tenure
//! candidate's value is its [`LeaderRecord`] as JSON (what `etcdctl elect --listen` prints); a
//! leader elected by etcd's own recipe (`etcdctl elect`, Go's `concurrency` package) is read as a
//! record whose holder is its proposal.
//!
//! etcd deletes an expired leader's key like a released one, so the count of transitions lives
//! beside the candidates, in `<prefix>tenure:last:<name>` (`{"holder", "transitions"}`): written
//! by each new leader, deleted by a clean release (which starts the count again, as the
//! reference's release deletes the record).
//!
//! A leader renewing for as long as before rewrites its record on its own lease and refreshes it
//! (one write); a follower's attempt is one read; a takeover is one write holding the candidate's
//! key and the new count, guarded on the count read before it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::client::{Compare, CompareOp, KeyValue, Txn, TxnOp, TxnResponse};
use serde::{Deserialize, Serialize};
use tenure::backend::{LeaderElectionOperations, Wakeup};
use tenure_core::{BackendError, BackendErrorKind, HolderDetails, LeaderRecord, Metadata, WallTime};
use tenure_store::Wake;

use crate::EtcdBackend;
use crate::contender::{Beside, Held, Taken, by_age, direct, ranges};
use crate::lease::Leased;
use crate::takeover::Standing;

/// Who led last and how many changes of leader there were, while the election lasts.
#[derive(Serialize, Deserialize, Default)]
pub(crate) struct Last {
    pub(crate) holder: String,
    pub(crate) transitions: u64,
}

/// Where the count of a name's transitions lives: `<prefix>` this `<name>`.
pub(crate) const LAST: &str = "tenure:last:";

pub(crate) fn now() -> WallTime {
    let micros = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros());
    WallTime::from_unix_micros(i64::try_from(micros).unwrap_or(i64::MAX))
}

fn malformed(what: &str) -> BackendError {
    BackendError::new(BackendErrorKind::MalformedRecord, format!("etcd: {what}"))
}

impl EtcdBackend {
    fn last_key(&self, name: &str) -> String {
        format!("{}{LAST}{name}", self.options.prefix)
    }

    /// `name`'s candidates (oldest first) and its stored count with the count key's revision (0:
    /// none), in one read.
    async fn standing(&self, name: &str) -> Result<(Vec<KeyValue>, Standing), BackendError> {
        let (prefix, last_key) = (self.contenders_prefix(name), self.last_key(name));
        let response = self
            .run("reading the candidates", name, {
                let prefix = prefix.clone();
                move |client| async move {
                    let txn = Txn::new().and_then([TxnOp::get(prefix, Some(by_age())), TxnOp::get(last_key, None)]);
                    client.txn(txn).await
                }
            })
            .await?;
        let mut read = ranges(&response).into_iter();
        let candidates = read.next().unwrap_or_default().into_iter().filter(|kv| direct(kv.key(), &prefix)).collect();
        let (last, revision) = last_of(read.next().unwrap_or_default().first())?;
        Ok((candidates, Standing { last, revision, read_at: read_at(&response) }))
    }

    /// The record of `leader`: Tenure's JSON, or a record of etcd's own recipe (its proposal as
    /// the holder, its lease's TTL as the lease, renewed when the lease was last refreshed — etcd
    /// keeps no start, so that too).
    async fn leader_record(
        &self,
        leader: &KeyValue,
        transitions: u64,
        name: &str,
    ) -> Result<LeaderRecord, BackendError> {
        // A term's fence is its leader key's create revision: a new key for every take, above
        // every key the cluster created before.
        let fence = Some(crate::fence(leader.create_revision())?);
        if let Ok(record) = serde_json::from_slice::<LeaderRecord>(leader.value()) {
            return Ok(LeaderRecord { fence, ..record });
        }
        let lease = leader.lease();
        let (granted, left) = self
            .run("reading a leader's lease", name, move |client| async move {
                let ttl = client.lease_time_to_live(lease).await?;
                Ok((ttl.granted_ttl, ttl.ttl))
            })
            .await?;
        let seconds = |s: i64| Duration::from_secs(u64::try_from(s).unwrap_or(0));
        let at = now();
        let renewed = WallTime::from_unix_micros(
            at.as_unix_micros() - i64::try_from(seconds(granted - left).as_micros()).unwrap_or(0),
        );
        Ok(LeaderRecord {
            holder: String::from_utf8_lossy(leader.value()).into_owned(),
            lease_duration: seconds(granted),
            acquired_at: renewed,
            renewed_at: renewed,
            transitions,
            metadata: Metadata::default(),
            fence,
        })
    }

    /// The stored count of transitions and its key's revision (0: none).
    async fn last(&self, name: &str) -> Result<(Option<Last>, i64), BackendError> {
        let key = self.last_key(name);
        let kv = self
            .run("reading the transitions", name, move |client| async move {
                Ok(client.get(key, None).await?.take_kvs().into_iter().next())
            })
            .await?;
        last_of(kv.as_ref())
    }

    /// Writes `record` as the leader's value, keeping the key (and its create revision).
    async fn rewrite(&self, held: &Held, record: &LeaderRecord, name: &str) -> Result<Option<Held>, BackendError> {
        // (the fence is the key's create revision, not part of the value)
        let value = json(&LeaderRecord { fence: None, ..record.clone() })?;
        self.renew(held, value, true, record.lease_duration, name).await
    }

    /// After winning where keys of longer names crowd the prefix: the count written beside the
    /// candidates (if it changed since it was read, counted again and the record written again).
    async fn count_transition(
        &self,
        name: &str,
        mut held: Held,
        mut record: LeaderRecord,
        mut revision: i64,
    ) -> Result<(Held, LeaderRecord), BackendError> {
        for _ in 0..16 {
            let key = self.last_key(name);
            let value = json(&Last { holder: record.holder.clone(), transitions: record.transitions })?;
            let written = self
                .run("counting a transition", name, move |client| async move {
                    let txn = Txn::new().when([unchanged(&key, revision)]).and_then([TxnOp::put(key, value, None)]);
                    Ok(client.txn(txn).await?.succeeded())
                })
                .await?;
            if written {
                return Ok((held, record));
            }
            let (last, now_at) = self.last(name).await?;
            (record.transitions, revision) = (transitions_for(last.as_ref(), &record.holder), now_at);
            held = self.rewrite(&held, &record, name).await?.ok_or_else(|| {
                BackendError::new(BackendErrorKind::Unavailable, "etcd: leadership was lost while taken")
            })?;
        }
        Err(BackendError::new(BackendErrorKind::Unavailable, format!("etcd: the transitions of {name} kept changing")))
    }

    /// Takes `name`'s leadership with `record` (its count from the count's key at `revision`, 0:
    /// none) on `leased` (else a lease made ready beside the write): the record and the leader
    /// held, or the record of whoever leads.
    async fn elect(
        &self,
        name: &str,
        record: LeaderRecord,
        revision: i64,
        (leased, details): (Option<Leased>, Option<&HolderDetails>),
    ) -> Result<Elected, BackendError> {
        let (prefix, last_key) = (self.contenders_prefix(name), self.last_key(name));
        let token = record.holder.clone();
        let count = json(&Last { holder: record.holder.clone(), transitions: record.transitions })?;
        let mut also = vec![TxnOp::put(last_key.clone(), count, None)];
        also.extend(self.beside_take(name, details).also);
        let beside =
            Beside { guards: vec![unchanged(&last_key, revision)], also, read: vec![TxnOp::get(last_key, None)] };
        let value = json(&record)?;
        let (taken, response) = match leased {
            Some(leased) => self.take(prefix.clone(), value, leased, beside, name).await?,
            None => self.take_ready(prefix.clone(), value, record.lease_duration, beside, name).await?,
        };
        match taken {
            Taken::Holds(held) => Ok(Elected::Holds(held, record)),
            Taken::Contended(candidates) => {
                let (last, revision) = last_of(ranges(&response).get(1).and_then(|kvs| kvs.first()))?;
                let transitions = last.as_ref().map_or(0, |l| l.transitions);
                let mut standing = Some(Standing { last, revision, read_at: read_at(&response) });
                if let Some(mine) = candidates.iter().skip(1).find(|kv| holder_of(kv).as_deref() == Some(&token)) {
                    // A key of this token's own behind the leader (left by an attempt that could
                    // not remove it): it must not wait there.
                    self.vacate(&Held::of(mine), Vec::new(), name).await?;
                    standing = None;
                }
                self.follows(&candidates[0], &token, transitions, standing, name).await
            }
            Taken::Crowded(leased) => {
                // Keys of longer names under the prefix, or the count changed since it was read
                // (the write's other branch read it again: the candidate's record counts from that).
                let (last, revision) = last_of(ranges(&response).get(1).and_then(|kvs| kvs.first()))?;
                let record = LeaderRecord { transitions: transitions_for(last.as_ref(), &token), ..record };
                let Some(held) = self.candidate(prefix.clone(), json(&record)?, leased, name).await? else {
                    let (candidates, standing) = self.standing(name).await?;
                    let transitions = standing.last.as_ref().map_or(0, |l| l.transitions);
                    return match candidates.first() {
                        Some(leader) => self.follows(leader, &token, transitions, Some(standing), name).await,
                        // The leader left meanwhile: the next attempt takes it.
                        None => Err(BackendError::new(
                            BackendErrorKind::Unavailable,
                            "etcd: the leader changed during the attempt",
                        )),
                    };
                };
                // Until counted, nobody believes in the key: dropped or failed, it goes. (Its
                // rewrites keep the lease: the record's lease is the one it was granted for.)
                let unsettled = self.until_settled(held.lease.id());
                let (held, record) = self.count_transition(name, held, record, revision).await?;
                unsettled.settled();
                Ok(Elected::Holds(held, record))
            }
        }
    }

    /// What an attempt of `token` that did not take the lead learns from `leader`: who leads
    /// (and what it read is kept for its next attempt, unless it deleted a key of its own since,
    /// which the watch would take for a hint); or, if that is a key of `token`'s own
    /// (put by another call of it), to read again and renew it — this attempt's own write must be
    /// what its belief rests on.
    async fn follows(
        &self,
        leader: &KeyValue,
        token: &str,
        transitions: u64,
        standing: Option<Standing>,
        name: &str,
    ) -> Result<Elected, BackendError> {
        if holder_of(leader).as_deref() == Some(token) {
            return Ok(Elected::Again);
        }
        if let Some(standing) = standing {
            self.state.standings.put(name, token, standing);
        }
        Ok(Elected::Follows(self.leader_record(leader, transitions, name).await?))
    }

    /// One attempt of `token` at `name`'s lead (the cache did not hold it): straight to the
    /// guarded write if the watch saw a candidate go since this token's last refused attempt
    /// read the name (see [`crate::takeover`]), else after a read.
    async fn campaign(
        &self,
        name: &str,
        token: &str,
        fresh: &LeaderRecord,
        details: Option<&HolderDetails>,
    ) -> Result<Elected, BackendError> {
        if let Some(standing) = self.state.standings.take(name, token)
            && let Some((last, revision)) = self.watch.deletions.since(name, standing)
        {
            let record = LeaderRecord { transitions: transitions_for(last.as_ref(), token), ..fresh.clone() };
            return self.elect(name, record, revision, (None, details)).await;
        }
        // The lease a takeover needs is made ready beside the read (a spare refreshed, most
        // often: no write), and kept spare if somebody leads.
        let lease = fresh.lease_duration;
        let (standing, leased) = futures_lite::future::zip(self.standing(name), self.lease_for(lease, name)).await;
        let leased = leased?;
        let (candidates, standing) = match standing {
            Ok(standing) => standing,
            Err(e) => {
                self.give_back(leased);
                return Err(e);
            }
        };
        let mine = candidates.iter().find(|kv| holder_of(kv).as_deref() == Some(token));
        let leader = candidates.first();
        let renewal = async {
            match (mine, leader) {
                (Some(mine), Some(leader)) if mine.key() == leader.key() => {
                    let mut record = self.leader_record(mine, 0, name).await?;
                    (record.lease_duration, record.renewed_at) = (lease, fresh.renewed_at);
                    record.metadata = fresh.metadata.clone();
                    Ok(self.rewrite(&Held::of(mine), &record, name).await?.map(|held| (held, record)))
                }
                // (What this attempt read is then not kept: see `follows`.)
                (Some(mine), Some(_)) => self.vacate(&Held::of(mine), Vec::new(), name).await.map(|_| None),
                _ => Ok(None),
            }
        };
        let renewed = match renewal.await {
            Ok(renewed) => renewed,
            Err(e) => {
                self.give_back(leased);
                return Err(e);
            }
        };
        if let Some((held, record)) = renewed {
            self.give_back(leased);
            return Ok(Elected::Holds(held, record));
        }
        let transitions = standing.last.as_ref().map_or(0, |l| l.transitions);
        if let Some(leader) = leader.filter(|l| mine.is_none_or(|m| m.key() != l.key())) {
            self.give_back(leased);
            let standing = mine.is_none().then_some(standing);
            return self.follows(leader, token, transitions, standing, name).await;
        }
        let record = LeaderRecord { transitions: transitions_for(standing.last.as_ref(), token), ..fresh.clone() };
        self.elect(name, record, standing.revision, (Some(leased), details)).await
    }
}

/// What an election attempt came to.
enum Elected {
    /// This candidate leads, by its own write: its key and record.
    Holds(Held, LeaderRecord),
    /// Another leads: its record.
    Follows(LeaderRecord),
    /// A key of this candidate's own leads, put by another call: read again.
    Again,
}

/// The transitions `holder` taking over after `last` makes.
fn transitions_for(last: Option<&Last>, holder: &str) -> u64 {
    match last {
        Some(last) if last.holder != holder => last.transitions + 1,
        Some(last) => last.transitions,
        None => 0,
    }
}

/// `key` is still at `revision` (0: absent).
fn unchanged(key: &str, revision: i64) -> Compare {
    if revision == 0 {
        Compare::create_revision(key, CompareOp::Equal, 0)
    } else {
        Compare::mod_revision(key, CompareOp::Equal, revision)
    }
}

fn last_of(kv: Option<&KeyValue>) -> Result<(Option<Last>, i64), BackendError> {
    let Some(kv) = kv else { return Ok((None, 0)) };
    let last = serde_json::from_slice(kv.value())
        .map_err(|_| malformed("an election's transitions key holds no {holder, transitions} JSON"))?;
    Ok((Some(last), kv.mod_revision()))
}

/// The store's revision `response` saw.
fn read_at(response: &TxnResponse) -> i64 {
    response.revision()
}

fn json(value: &impl Serialize) -> Result<Vec<u8>, BackendError> {
    serde_json::to_vec(value).map_err(|e| malformed(&e.to_string()))
}

fn holder_of(kv: &KeyValue) -> Option<String> {
    serde_json::from_slice::<LeaderRecord>(kv.value()).ok().map(|r| r.holder)
}

impl LeaderElectionOperations for EtcdBackend {
    async fn acquire_or_renew(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        metadata: &Metadata,
    ) -> Result<LeaderRecord, BackendError> {
        self.acquire_or_renew_with_details(name, token, (lease, metadata), None).await
    }

    async fn acquire_or_renew_with_details(
        &self,
        name: &str,
        token: &str,
        (lease, metadata): (Duration, &Metadata),
        details: Option<&HolderDetails>,
    ) -> Result<LeaderRecord, BackendError> {
        let at = now();
        if let Some((held, mut record)) = self.state.leaders.take(name, token) {
            (record.lease_duration, record.renewed_at, record.metadata) = (lease, at, metadata.clone());
            if let Some(held) = self.rewrite(&held, &record, name).await? {
                let fence = Some(crate::fence(held.revision)?);
                self.state.leaders.put(name, token, (held, record.clone()));
                return Ok(LeaderRecord { fence, ..record });
            }
        }
        let fresh = LeaderRecord {
            holder: token.to_owned(),
            lease_duration: lease,
            acquired_at: at,
            renewed_at: at,
            transitions: 0,
            metadata: metadata.clone(),
            fence: None,
        };
        // A second read only when a key of this token's own leads (another call of it took
        // the lead meanwhile): it is renewed then.
        for _ in 0..2 {
            match self.campaign(name, token, &fresh, details).await? {
                Elected::Holds(held, record) => {
                    let fence = Some(crate::fence(held.revision)?);
                    self.state.leaders.put(name, token, (held, record.clone()));
                    return Ok(LeaderRecord { fence, ..record });
                }
                Elected::Follows(record) => return Ok(record),
                Elected::Again => {}
            }
        }
        Err(BackendError::new(BackendErrorKind::Unavailable, "etcd: this candidate's lead changed during the attempt"))
    }

    async fn release(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        // A clean release starts the count of transitions again.
        let count = || vec![TxnOp::delete(self.last_key(name))];
        if let Some((held, _)) = self.state.leaders.take(name, token)
            && self.vacate(&held, count(), name).await?
        {
            return Ok(true);
        }
        let candidates = self.contenders(self.contenders_prefix(name), name).await?;
        let Some(mine) = candidates.iter().find(|kv| holder_of(kv).as_deref() == Some(token)) else { return Ok(false) };
        let leads = candidates.first().is_some_and(|first| first.key() == mine.key());
        Ok(self.vacate(&Held::of(mine), if leads { count() } else { Vec::new() }, name).await? && leads)
    }

    async fn get(&self, name: &str) -> Result<Option<LeaderRecord>, BackendError> {
        let (candidates, standing) = self.standing(name).await?;
        let Some(leader) = candidates.first() else { return Ok(None) };
        Ok(Some(self.leader_record(leader, standing.last.map_or(0, |l| l.transitions), name).await?))
    }

    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        Some(self.watch.queues.wakeup(name, Wake::All))
    }
}
