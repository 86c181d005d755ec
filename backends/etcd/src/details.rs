//! Holder details (the core's `store::details`): outside every name's contenders, one key per
//! name, `<prefix>tenure-details/<name>`, holding `<µs>:<details>` — the holder's clock when it
//! took the name (etcd has no clock of its own to read) and what it sent. It is put in the
//! take's transaction, so its mod revision is the take's revision: the holder's fence. A listing
//! shows it only for the holder whose create revision it bears, so a key an `etcdctl lock` or a
//! grelmicro process put shows none. (Not on a lease: one small key per name, like the fences of
//! the other stores; a take that did not hold writes nothing.)
//!
//! An election's leader keeps its details the same way, put in the transaction of the take that
//! begins its term (whose revision is the term's fence); a take that had to put its key apart
//! from the count (keys of longer names under the election's prefix) writes none.
//!
//! A shared name's holders (a read-write lock's readers and writer, a semaphore's permits) each
//! have one: `<prefix>tenure-details/<name>/<hex token>`, valued as above and put on the holder's
//! own etcd lease in its grant's transaction, so it ends with the lease (a release, an expiry); a
//! downgrade puts the writer's again on its read lease. Outside the name's keys, so a process of
//! an earlier version reading them finds nothing new. (A renewal for another lease length moves
//! the holder's key to a new lease and its details end with the old one.)

use std::collections::HashMap;

use crate::client::{GetOptions, KeyValue, TxnOp};
use tenure::HolderInfo;
use tenure_core::{BackendError, HolderDetails, WallTime};

use crate::EtcdBackend;
use crate::contender::Beside;

impl EtcdBackend {
    fn details_key(&self, name: &str) -> String {
        format!("{}tenure-details/{name}", self.options.prefix)
    }

    /// What a take of `name` writes beside its key: the holder's details, if it gave any.
    pub(crate) fn beside_take(&self, name: &str, details: Option<&HolderDetails>) -> Beside {
        let Some(details) = details else { return Beside::default() };
        let value = format!("{}:{}", crate::election::now().as_unix_micros(), details.as_str());
        Beside { also: vec![TxnOp::put(self.details_key(name), value, None)], ..Beside::default() }
    }

    fn held_details_prefix(&self, name: &str) -> String {
        format!("{}tenure-details/{name}/", self.options.prefix)
    }

    /// What a grant of `name` to `token` puts on the holder's lease: its details, if it gave any.
    pub(crate) fn held_beside(
        &self,
        name: &str,
        token: &str,
        details: Option<&HolderDetails>,
    ) -> Vec<(String, String)> {
        let Some(details) = details else { return Vec::new() };
        let value = format!("{}:{}", crate::election::now().as_unix_micros(), details.as_str());
        vec![(format!("{}{}", self.held_details_prefix(name), crate::txn::hex(token)), value)]
    }

    /// The details key of `token` on `name` as it stands (to move it with a downgrade).
    pub(crate) async fn held_beside_now(&self, name: &str, token: &str) -> Result<Vec<(String, String)>, BackendError> {
        let key = format!("{}{}", self.held_details_prefix(name), crate::txn::hex(token));
        let asked = key.clone();
        let kvs =
            self.run("reading holder details", name, move |client| async move {
                Ok(client.get(asked, None).await?.take_kvs())
            })
            .await?;
        Ok(kvs.first().and_then(KeyValue::value_str).map(|value| vec![(key, value.to_owned())]).unwrap_or_default())
    }

    /// The details kept for the holders of `name`, by token.
    pub(crate) async fn held_details(&self, name: &str) -> Result<HashMap<String, HolderInfo>, BackendError> {
        let prefix = self.held_details_prefix(name);
        let asked = prefix.clone();
        let kvs = self
            .run("reading holder details", name, move |client| async move {
                Ok(client.get(asked, Some(GetOptions::new().with_prefix())).await?.take_kvs())
            })
            .await?;
        let mut told = HashMap::new();
        for kv in &kvs {
            let Some(hexed) = kv.key_str().and_then(|k| k.strip_prefix(prefix.as_str())) else { continue };
            let (Some(token), Some((micros, text))) =
                (crate::txn::unhex(hexed), kv.value_str().and_then(|v| v.split_once(':')))
            else {
                continue;
            };
            let Ok(micros) = micros.parse::<i64>() else { continue };
            if let Some(info) = HolderInfo::parse(text, WallTime::from_unix_micros(micros)) {
                told.insert(token, info);
            }
        }
        Ok(told)
    }

    /// The details of `holder`, the holder of `name`, if its take wrote them.
    pub(crate) async fn details_of(&self, name: &str, holder: &KeyValue) -> Result<Option<HolderInfo>, BackendError> {
        self.details_at(name, holder.create_revision()).await
    }

    /// The details kept for `name` by the take at `revision` (a holder's or a term's create
    /// revision: its fence), if it wrote them.
    pub(crate) async fn details_at(&self, name: &str, revision: i64) -> Result<Option<HolderInfo>, BackendError> {
        let key = self.details_key(name);
        let kvs =
            self.run("reading holder details", name, move |client| async move {
                Ok(client.get(key, None).await?.take_kvs())
            })
            .await?;
        let Some(kv) = kvs.first().filter(|kv| kv.mod_revision() == revision) else { return Ok(None) };
        let Some((micros, text)) = kv.value_str().and_then(|v| v.split_once(':')) else { return Ok(None) };
        let Ok(micros) = micros.parse::<i64>() else { return Ok(None) };
        Ok(HolderInfo::parse(text, WallTime::from_unix_micros(micros)))
    }
}
