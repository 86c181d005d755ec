//! Holder details (the core's `store::details`): outside every name's contenders, one key per
//! name, `<prefix>tenure-details/<name>`, holding `<µs>:<details>` — the holder's clock when it
//! took the name (etcd has no clock of its own to read) and what it sent. It is put in the
//! take's transaction, so its mod revision is the take's revision: the holder's fence. A listing
//! shows it only for the holder whose create revision it bears, so a key an `etcdctl lock` or a
//! grelmicro process put shows none. (Not on a lease: one small key per name, like the fences of
//! the other stores; a take that did not hold writes nothing.)

use crate::client::{KeyValue, TxnOp};
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

    /// The details of `holder`, the holder of `name`, if its take wrote them.
    pub(crate) async fn details_of(&self, name: &str, holder: &KeyValue) -> Result<Option<HolderInfo>, BackendError> {
        let key = self.details_key(name);
        let kvs =
            self.run("reading holder details", name, move |client| async move {
                Ok(client.get(key, None).await?.take_kvs())
            })
            .await?;
        let Some(kv) = kvs.first().filter(|kv| kv.mod_revision() == holder.create_revision()) else { return Ok(None) };
        let Some((micros, text)) = kv.value_str().and_then(|v| v.split_once(':')) else { return Ok(None) };
        let Ok(micros) = micros.parse::<i64>() else { return Ok(None) };
        Ok(HolderInfo::parse(text, WallTime::from_unix_micros(micros)))
    }
}
