//! Cron schedule claims: one key per task, `<prefix>tenure:schedule:<name>`, holding the last
//! claimed fire time; a claim is a compare-and-swap transaction on the key's revision.

use crate::client::{Compare, CompareOp, Txn, TxnOp};
use tenure::backend::{BackendFuture, ScheduleBackend};
use tenure_core::{BackendError, BackendErrorKind};

use crate::EtcdBackend;

/// How many times a claim retries a transaction another claim overtook.
const ATTEMPTS: usize = 16;

impl EtcdBackend {
    fn schedule_key(&self, name: &str) -> String {
        format!("{}tenure:schedule:{name}", self.options.prefix)
    }

    /// The stored fire time of `key` and the key's revision (0 when absent).
    async fn fired(&self, name: &str, key: String) -> Result<(Option<f64>, i64), BackendError> {
        let (value, revision) = self
            .run("reading a schedule", name, move |client| async move {
                let kv = client.get(key, None).await?.take_kvs().into_iter().next();
                Ok(kv.map_or((None, 0), |kv| (Some(kv.value().to_vec()), kv.mod_revision())))
            })
            .await?;
        let Some(value) = value else { return Ok((None, 0)) };
        let due = std::str::from_utf8(&value).ok().and_then(|t| t.parse::<f64>().ok()).filter(|d| d.is_finite());
        let due = due.ok_or_else(|| {
            BackendError::new(BackendErrorKind::MalformedRecord, "etcd: a schedule key holds no number of seconds")
        })?;
        Ok((Some(due), revision))
    }
}

impl ScheduleBackend for EtcdBackend {
    fn claim<'a>(&'a self, name: &'a str, due: f64) -> BackendFuture<'a, bool> {
        Box::pin(async move {
            if !due.is_finite() {
                return Err(BackendError::new(
                    BackendErrorKind::Rejected,
                    format!("schedule due {due} is not a finite time"),
                ));
            }
            let key = self.schedule_key(name);
            for _ in 0..ATTEMPTS {
                let (stored, revision) = self.fired(name, key.clone()).await?;
                if stored.is_some_and(|last| last >= due) {
                    return Ok(false);
                }
                let key = key.clone();
                let written = self
                    .run("claiming a schedule", name, move |client| async move {
                        let unchanged = if revision == 0 {
                            Compare::create_revision(key.clone(), CompareOp::Equal, 0)
                        } else {
                            Compare::mod_revision(key.clone(), CompareOp::Equal, revision)
                        };
                        let txn = Txn::new().when([unchanged]).and_then([TxnOp::put(key, due.to_string(), None)]);
                        Ok(client.txn(txn).await?.succeeded())
                    })
                    .await?;
                if written {
                    return Ok(true);
                }
            }
            Err(BackendError::new(
                BackendErrorKind::Unavailable,
                format!("etcd: the claims on {name} kept overtaking each other"),
            ))
        })
    }

    fn last_fired<'a>(&'a self, name: &'a str) -> BackendFuture<'a, Option<f64>> {
        Box::pin(async move { Ok(self.fired(name, self.schedule_key(name)).await?.0) })
    }
}
