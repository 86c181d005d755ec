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

/// A details key's value: this process's clock (etcd has none to read) and what the holder sent.
fn told(details: &HolderDetails) -> String {
    format!("{}:{}", crate::election::now().as_unix_micros(), details.as_str())
}

/// A details key's value read back; `None` for one of another shape.
fn read_told(value: &str) -> Option<HolderInfo> {
    let (micros, text) = value.split_once(':')?;
    HolderInfo::parse(text, WallTime::from_unix_micros(micros.parse::<i64>().ok()?))
}

impl EtcdBackend {
    fn details_key(&self, name: &str) -> String {
        format!("{}tenure-details/{name}", self.options.prefix)
    }

    /// What a take of `name` writes beside its key: the holder's details, if it gave any.
    pub(crate) fn beside_take(&self, name: &str, details: Option<&HolderDetails>) -> Beside {
        let Some(details) = details else { return Beside::default() };
        Beside { also: vec![TxnOp::put(self.details_key(name), told(details), None)], ..Beside::default() }
    }

    fn held_details_prefix(&self, name: &str) -> String {
        format!("{}tenure-details/{name}/", self.options.prefix)
    }

    fn held_details_key(&self, name: &str, token: &str) -> String {
        format!("{}{}", self.held_details_prefix(name), crate::txn::hex(token))
    }

    /// What a grant of `name` to `token` puts on the holder's lease: its details, if it gave any.
    pub(crate) fn held_beside(
        &self,
        name: &str,
        token: &str,
        details: Option<&HolderDetails>,
    ) -> Vec<(String, String)> {
        details.map(|details| vec![(self.held_details_key(name, token), told(details))]).unwrap_or_default()
    }

    /// The details key of `token` on `name` as it stands (to move it with a downgrade).
    pub(crate) async fn held_beside_now(&self, name: &str, token: &str) -> Result<Vec<(String, String)>, BackendError> {
        let key = self.held_details_key(name, token);
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
        let held = kvs.iter().filter_map(|kv| {
            let token = crate::txn::unhex(kv.key_str()?.strip_prefix(prefix.as_str())?)?;
            Some((token, read_told(kv.value_str()?)?))
        });
        Ok(held.collect())
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
        let kept = kvs.first().filter(|kv| kv.mod_revision() == revision);
        Ok(kept.and_then(KeyValue::value_str).and_then(read_told))
    }
}
