//! What `tenure status` shows of a PostgreSQL store: every lock row (a name once acquired keeps
//! its row and fence), its live holder and expiry, and the live leader records.

use tenure::{LeaderState, LockState};
use tenure_core::BackendError;
use tokio_postgres::types::ToSql;

use crate::PostgresBackend;
use crate::record::{self, Instant};

impl PostgresBackend {
    pub(crate) async fn inspect_locks(&self, keys: Vec<String>) -> Result<Vec<LockState>, BackendError> {
        let session = self.session_at(0).await?;
        let params: [&(dyn ToSql + Sync); 1] = [&keys];
        let query = Box::pin(session.client.query(self.inner.texts.lock_states.as_str(), &params));
        let rows = self.bounded("lock status", "the lock table", query).await?;
        rows.iter()
            .map(|row| {
                let key: String = record::column(row, 0, "a lock", "name")?;
                let fence: i64 = record::column(row, 1, &key, "fence")?;
                // A row grelmicro's upgrade gave fence 0 has issued none yet.
                let fence = (fence != 0).then(|| tenure_store::record::fence(&key, fence)).transpose()?;
                let holder: Option<String> = record::column(row, 2, &key, "token")?;
                let expires_at: Option<Instant> = record::column(row, 3, &key, "expire_at")?;
                Ok(LockState { fence, holder, expires_at: expires_at.map(|i| i.0), key })
            })
            .collect()
    }

    pub(crate) async fn inspect_leaders(&self, keys: Vec<String>) -> Result<Vec<LeaderState>, BackendError> {
        let session = self.session_at(0).await?;
        let params: [&(dyn ToSql + Sync); 1] = [&keys];
        let query = Box::pin(session.client.query(self.inner.texts.leader_states.as_str(), &params));
        let rows = self.bounded("leader status", "the leader table", query).await?;
        rows.iter()
            .map(|row| {
                let key: String = record::column(row, 0, "a leader", "name")?;
                let record = record::leader(row, 1, &key)?;
                Ok(LeaderState { key, record })
            })
            .collect()
    }
}
