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

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use etcd_client::{Compare, CompareOp, KeyValue, Txn, TxnOp};
use serde::{Deserialize, Serialize};
use tenure::backend::{LeaderElectionOperations, Wake, Wakeup};
use tenure_core::{BackendError, BackendErrorKind, LeaderRecord, Metadata, WallTime};

use crate::{EtcdBackend, Held};

/// Who led last and how many changes of leader there were, while the election lasts.
#[derive(Serialize, Deserialize, Default)]
struct Last {
    holder: String,
    transitions: u64,
}

pub(crate) fn now() -> WallTime {
    let micros = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros());
    WallTime::from_unix_micros(i64::try_from(micros).unwrap_or(i64::MAX))
}

fn malformed(what: &str) -> BackendError {
    BackendError::new(BackendErrorKind::MalformedRecord, format!("etcd: {what}"))
}

impl EtcdBackend {
    fn last_key(&self, name: &str) -> String {
        format!("{}tenure:last:{name}", self.options.prefix)
    }

    /// A candidate's record: Tenure's JSON, or a record of etcd's own recipe (its proposal as
    /// the holder; times unknown, so now).
    fn record_of(kv: &KeyValue, lease: Duration, transitions: u64) -> LeaderRecord {
        if let Ok(record) = serde_json::from_slice::<LeaderRecord>(kv.value()) {
            return record;
        }
        let at = now();
        LeaderRecord {
            holder: String::from_utf8_lossy(kv.value()).into_owned(),
            lease_duration: lease,
            acquired_at: at,
            renewed_at: at,
            transitions,
            metadata: Metadata::default(),
        }
    }

    /// The stored count of transitions and its key's revision (0: none).
    async fn last(&self, name: &str) -> Result<(Option<Last>, i64), BackendError> {
        let key = self.last_key(name);
        let kv = self
            .run("reading an election's transitions", move |mut client| async move {
                Ok(client.get(key, None).await?.take_kvs().into_iter().next())
            })
            .await?;
        let Some(kv) = kv else { return Ok((None, 0)) };
        let last = serde_json::from_slice(kv.value())
            .map_err(|_| malformed("an election's transitions key holds no {holder, transitions} JSON"))?;
        Ok((Some(last), kv.mod_revision()))
    }

    /// Writes `record` as the leader's value on a new lease of `lease`, keeping the key (and its
    /// create revision); false if the key is gone.
    async fn rewrite(&self, held: &Held, record: &LeaderRecord, lease: Duration) -> Result<bool, BackendError> {
        let value = serde_json::to_vec(record).map_err(|e| malformed(&e.to_string()))?;
        self.renew(held, value, lease).await
    }

    /// The transitions `holder` taking over would make, and the stored count's revision.
    async fn transitions_for(&self, name: &str, holder: &str) -> Result<(u64, i64), BackendError> {
        let (last, revision) = self.last(name).await?;
        let transitions = match last {
            Some(last) if last.holder != holder => last.transitions + 1,
            Some(last) => last.transitions,
            None => 0,
        };
        Ok((transitions, revision))
    }

    /// After winning: the count written beside the candidates (if it changed since it was read,
    /// counted again and the leader's record written again).
    async fn count_transition(
        &self,
        name: &str,
        held: &Held,
        mut record: LeaderRecord,
        mut revision: i64,
        lease: Duration,
    ) -> Result<LeaderRecord, BackendError> {
        for _ in 0..16 {
            let key = self.last_key(name);
            let value = serde_json::to_vec(&Last { holder: record.holder.clone(), transitions: record.transitions })
                .map_err(|e| malformed(&e.to_string()))?;
            let written = self
                .run("counting a transition", move |mut client| async move {
                    let unchanged = if revision == 0 {
                        Compare::create_revision(key.clone(), CompareOp::Equal, 0)
                    } else {
                        Compare::mod_revision(key.clone(), CompareOp::Equal, revision)
                    };
                    Ok(client
                        .txn(Txn::new().when([unchanged]).and_then([TxnOp::put(key, value, None)]))
                        .await?
                        .succeeded())
                })
                .await?;
            if written {
                return Ok(record);
            }
            let (transitions, now_at) = self.transitions_for(name, &record.holder).await?;
            (record.transitions, revision) = (transitions, now_at);
            if !self.rewrite(held, &record, lease).await? {
                return Err(BackendError::new(BackendErrorKind::Unavailable, "etcd: leadership was lost while taken"));
            }
        }
        Err(BackendError::new(BackendErrorKind::Unavailable, format!("etcd: the transitions of {name} kept changing")))
    }
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
        let prefix = self.contenders_prefix(name);
        let candidates = self.contenders(prefix.clone()).await?;
        let mine = candidates.iter().find(|kv| holder_of(kv).as_deref() == Some(token));
        let leader = candidates.first();
        let at = now();
        if let (Some(mine), Some(leader)) = (mine, leader) {
            if mine.key() == leader.key() {
                let mut record = Self::record_of(mine, lease, 0);
                record.lease_duration = lease;
                record.renewed_at = at;
                record.metadata = metadata.clone();
                if self.rewrite(&Held::of(mine), &record, lease).await? {
                    return Ok(record);
                }
            } else {
                self.vacate(&Held::of(mine)).await?;
            }
        }
        if let Some(leader) = leader.filter(|l| mine.is_none_or(|m| m.key() != l.key())) {
            let transitions = self.last(name).await?.0.map_or(0, |l| l.transitions);
            return Ok(Self::record_of(leader, lease, transitions));
        }
        // Counted before the candidate's put, so that followers read the right count at once.
        let (transitions, revision) = self.transitions_for(name, token).await?;
        let record = LeaderRecord {
            holder: token.to_owned(),
            lease_duration: lease,
            acquired_at: at,
            renewed_at: at,
            transitions,
            metadata: metadata.clone(),
        };
        let value = serde_json::to_string(&record).map_err(|e| malformed(&e.to_string()))?;
        match self.candidate(prefix.clone(), &value, lease).await? {
            Some(held) => self.count_transition(name, &held, record, revision, lease).await,
            None => {
                let candidates = self.contenders(prefix).await?;
                let transitions = self.last(name).await?.0.map_or(0, |l| l.transitions);
                match candidates.first() {
                    Some(leader) => Ok(Self::record_of(leader, lease, transitions)),
                    // The leader left meanwhile: the next attempt takes it.
                    None => Err(BackendError::new(
                        BackendErrorKind::Unavailable,
                        "etcd: the leader changed during the attempt",
                    )),
                }
            }
        }
    }

    async fn release(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        let candidates = self.contenders(self.contenders_prefix(name)).await?;
        let Some(mine) = candidates.iter().find(|kv| holder_of(kv).as_deref() == Some(token)) else { return Ok(false) };
        let leads = candidates.first().is_some_and(|first| first.key() == mine.key());
        if leads {
            // A clean release starts the count of transitions again.
            let key = self.last_key(name);
            self.run("releasing leadership", move |mut client| async move { client.delete(key, None).await.map(drop) })
                .await?;
        }
        Ok(self.vacate(&Held::of(mine)).await? && leads)
    }

    async fn get(&self, name: &str) -> Result<Option<LeaderRecord>, BackendError> {
        let candidates = self.contenders(self.contenders_prefix(name)).await?;
        let Some(leader) = candidates.first() else { return Ok(None) };
        let transitions = self.last(name).await?.0.map_or(0, |l| l.transitions);
        Ok(Some(Self::record_of(leader, Duration::ZERO, transitions)))
    }

    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        Some(self.watch.queues.wakeup(name, Wake::All))
    }
}
