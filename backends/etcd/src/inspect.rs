//! What the store holds, for people and tools (`tenure status`, `tenure exporter`): every name
//! with a contender under the store's prefix, its holder (the lowest create revision) and when
//! its lease ends; every read-write lock and semaphore with its leases and waiters.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::client::{GetOptions, KeyValue};
use tenure::backend::{BackendFuture, Inspect, LeaderState, LockState, SharedState};
use tenure_core::{BackendError, FencingToken, WallTime};

use crate::EtcdBackend;

impl EtcdBackend {
    /// Each name's contenders, holder first, of the names in `keys` (every name when empty).
    async fn names(&self, kinds: &[&str], keys: &[String]) -> Result<BTreeMap<String, Vec<KeyValue>>, BackendError> {
        let mut names: BTreeMap<String, Vec<KeyValue>> = BTreeMap::new();
        // One range per kind of name: the store's prefix may be shared with other keys.
        for kind in kinds {
            let prefix = format!("{}{kind}", self.options.prefix);
            let all = self
                .run("listing the store's keys", kind, move |client| async move {
                    Ok(client.get(prefix, Some(GetOptions::new().with_prefix())).await?.take_kvs())
                })
                .await?;
            for kv in all {
                let Some(name) = std::str::from_utf8(kv.key())
                    .ok()
                    .and_then(|k| k.strip_prefix(self.options.prefix.as_str()))
                    .and_then(|k| k.rsplit_once('/'))
                    .map(|(name, _)| name.to_owned())
                else {
                    continue;
                };
                if keys.is_empty() || keys.contains(&name) {
                    names.entry(name).or_default().push(kv);
                }
            }
        }
        for contenders in names.values_mut() {
            contenders.sort_by_key(KeyValue::create_revision);
        }
        Ok(names)
    }

    /// When `lease` ends, by this machine's clock (etcd reports what is left of it).
    pub(crate) async fn lease_end(&self, lease: i64) -> Result<Option<WallTime>, BackendError> {
        let left =
            self.run("reading a lease", "a holder", move |client| async move {
                Ok(client.lease_time_to_live(lease).await?.ttl)
            })
            .await?;
        let Ok(left) = u64::try_from(left) else { return Ok(None) };
        Ok(Some(crate::election::now().saturating_add(Duration::from_secs(left))))
    }
}

impl Inspect for EtcdBackend {
    fn lock_states(&self, keys: Vec<String>) -> BackendFuture<'static, Vec<LockState>> {
        let store = self.clone();
        Box::pin(async move {
            let mut states = Vec::new();
            for (name, contenders) in store.names(&["lock:", "tasklock:", "leader:"], &keys).await? {
                let Some(holder) = contenders.first().filter(|_| !name.starts_with("leader:")) else { continue };
                let details = store.details_of(&name, holder).await?;
                states.push(LockState {
                    fence: u64::try_from(holder.create_revision()).ok().map(FencingToken::new),
                    holder: Some(String::from_utf8_lossy(holder.value()).into_owned()),
                    expires_at: store.lease_end(holder.lease()).await?,
                    details,
                    // No line: Tenure's waiters poll and leave no key while refused (`etcdctl
                    // lock` sessions wait as contenders), so the contenders are not the waiters.
                    waiting: None,
                    key: name,
                });
            }
            Ok(states)
        })
    }

    fn leader_states(&self, keys: Vec<String>) -> BackendFuture<'static, Vec<LeaderState>> {
        let store = self.clone();
        Box::pin(async move {
            let mut states = Vec::new();
            for name in store
                .names(&["lock:", "tasklock:", "leader:"], &keys)
                .await?
                .into_keys()
                .filter(|n| n.starts_with("leader:"))
            {
                if let Some(record) = tenure::backend::LeaderElectionOperations::get(&store, &name).await? {
                    let revision = record.fence.map_or(0, |f| i64::try_from(f.get()).unwrap_or(i64::MAX));
                    let details = store.details_at(&name, revision).await?;
                    states.push(LeaderState { key: name, record, details });
                }
            }
            Ok(states)
        })
    }

    fn shared_states(&self, keys: Vec<String>) -> BackendFuture<'static, Vec<SharedState>> {
        let store = self.clone();
        Box::pin(async move {
            let mut states = Vec::new();
            for name in store.names(&["rwlock:", "semaphore:"], &keys).await?.into_keys() {
                let state = if name.starts_with("rwlock:") {
                    store.rw_shared_state(&name).await?
                } else {
                    store.sem_shared_state(&name).await?
                };
                states.extend(state);
            }
            Ok(states)
        })
    }
}
