//! What `tenure status` shows of a PostgreSQL store: every lock row (a name once acquired keeps
//! its row and fence), its live holder and expiry, and the live leader records; and what
//! `tenure exporter` shows besides: every read-write lock and semaphore with its leases and waiters.

use std::collections::BTreeMap;

use tenure::{HolderInfo, Holding, LeaderState, LockState, SharedState, Side, Waiting};
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
                let acquired_at: Option<Instant> = record::column(row, 4, &key, "acquired_at")?;
                let details: Option<String> = record::column(row, 5, &key, "details")?;
                let details = acquired_at.zip(details).and_then(|(at, text)| HolderInfo::parse(&text, at.0));
                let waiting = if self.inner.options.notify { Some(line(row, &key)?) } else { None };
                Ok(LockState { fence, holder, expires_at: expires_at.map(|i| i.0), key, details, waiting })
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
                let acquired_at: Option<Instant> = record::column(row, 8, &key, "acquired_at")?;
                let told: Option<String> = record::column(row, 9, &key, "details")?;
                let details = acquired_at.zip(told).and_then(|(at, text)| HolderInfo::parse(&text, at.0));
                Ok(LeaderState { key, record, details })
            })
            .collect()
    }

    pub(crate) async fn inspect_shared(&self, keys: Vec<String>) -> Result<Vec<SharedState>, BackendError> {
        let session = self.session_at(0).await?;
        let params: [&(dyn ToSql + Sync); 1] = [&keys];
        let query = Box::pin(session.client.query(self.inner.texts.shared_states.as_str(), &params));
        let rows = self.bounded("read-write lock and semaphore status", "their tables", query).await?;
        let mut states: BTreeMap<String, SharedState> = BTreeMap::new();
        for row in &rows {
            let key: String = record::column(row, 0, "a read-write lock or semaphore", "name")?;
            let kind: String = record::column(row, 1, &key, "kind")?;
            let token: Option<String> = record::column(row, 2, &key, "token")?;
            let expires_at: Option<Instant> = record::column(row, 3, &key, "expire_at")?;
            let number: i64 = record::column(row, 4, &key, "fence")?;
            let permits: Option<i32> = record::column(row, 5, &key, "permits")?;
            let acquired_at: Option<Instant> = record::column(row, 6, &key, "acquired_at")?;
            let told: Option<String> = record::column(row, 7, &key, "details")?;
            let state = states.entry(key.clone()).or_insert_with(|| SharedState {
                key: key.clone(),
                fence: None,
                holders: Vec::new(),
                waiters: Vec::new(),
                permits: None,
            });
            let side = match kind.as_str() {
                "G" | "S" => {
                    state.fence = (number != 0).then(|| tenure_store::record::fence(&key, number)).transpose()?;
                    if let Some(p) = permits {
                        let stored = u32::try_from(p)
                            .map_err(|_| tenure_store::record::malformed(format!("{key} stores {p} permits")))?;
                        state.permits = Some(stored);
                    }
                    continue;
                }
                "i" | "w" => {
                    state.waiters.extend(token);
                    continue;
                }
                "W" => Side::Write,
                "r" => Side::Read,
                "h" => Side::Permit,
                other => return Err(tenure_store::record::malformed(format!("{key} has a holder of kind {other:?}"))),
            };
            if let (Some(token), Some(end)) = (token, expires_at) {
                let details = acquired_at.zip(told).and_then(|(at, text)| HolderInfo::parse(&text, at.0));
                state.holders.push(Holding { token, side, expires_at: end.0, details });
            }
        }
        let mut states: Vec<SharedState> = states.into_values().collect();
        for state in &mut states {
            state.holders.sort_by(|a, b| a.token.cmp(&b.token));
        }
        Ok(states)
    }
}

/// The live places of a lock's line (columns 6 to 8: tokens, since, details, each in turn
/// order; NULL when nobody waits).
fn line(row: &tokio_postgres::Row, key: &str) -> Result<Vec<Waiting>, BackendError> {
    let tokens: Option<Vec<String>> = record::column(row, 6, key, "queue tokens")?;
    let since: Option<Vec<Instant>> = record::column(row, 7, key, "queue since")?;
    let details: Option<Vec<Option<String>>> = record::column(row, 8, key, "queue details")?;
    let (since, details) = (since.unwrap_or_default(), details.unwrap_or_default());
    let places = tokens.unwrap_or_default().into_iter().zip(since).zip(details);
    Ok(places
        .map(|((token, since), details)| Waiting {
            token,
            since: Some(since.0),
            details: details.and_then(|text| HolderInfo::parse(&text, since.0)),
        })
        .collect())
}
