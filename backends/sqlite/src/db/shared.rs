//! What `tenure exporter` shows of the read-write lock and semaphore tables:
//! each name's last fencing token, its live leases and its waiters (a read-write lock's writer
//! intents, a semaphore's places in arrival order), each lease with its holder's details.

use std::collections::{BTreeMap, HashMap};

use rusqlite::params;
use tenure::{HolderInfo, Holding, SharedState, Side};
use tenure_core::BackendError;

use super::{Db, error, fence_of};
use crate::time;

/// The statements, with the configured table names.
pub(super) struct Statements {
    rw_rows: String,
    rw_holders: String,
    sem_rows: String,
    sem_holders: String,
}

impl Statements {
    pub(super) fn new(rwlocks: &str, semaphores: &str) -> Self {
        let (e, we) = (expiry!("expire_at"), expiry!("writer_expire_at"));
        Self {
            rw_rows: format!(
                "SELECT name, generation, CASE WHEN writer IS NOT NULL AND {we} >= ?1 THEN writer END, \
                 CASE WHEN writer IS NOT NULL AND {we} >= ?1 THEN writer_expire_at END FROM {rwlocks}"
            ),
            rw_holders: format!(
                "SELECT name, token, kind, expire_at FROM {rwlocks}_holders WHERE {e} >= ?1 ORDER BY name, token"
            ),
            sem_rows: format!("SELECT name, permits, fence FROM {semaphores}"),
            sem_holders: format!(
                "SELECT name, token, kind, expire_at FROM {semaphores}_holders WHERE {e} >= ?1 ORDER BY name, seq"
            ),
        }
    }
}

type Row = (String, String, String, String);

/// The holder details kept for shared names, by name and token.
type Told = HashMap<(String, String), HolderInfo>;

impl Db {
    /// Every row of the read-write locks' and the semaphores' details tables.
    fn held_details(&self) -> Result<Told, BackendError> {
        let failed = |e| error("holder details", e);
        let mut told = HashMap::new();
        for statement in [&self.sql.rw.held.read, &self.sql.sem.held.read] {
            let mut rows = self.conn.prepare_cached(statement).map_err(failed)?;
            let entries: Vec<Row> = rows
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .and_then(Iterator::collect)
                .map_err(failed)?;
            for (name, token, acquired_at, details) in entries {
                let at = time::from_text(&acquired_at, "acquired_at")?;
                if let Some(info) = HolderInfo::parse(&details, at) {
                    told.insert((name, token), info);
                }
            }
        }
        Ok(told)
    }

    pub(crate) fn shared_states(&mut self, keys: &[String]) -> Result<Vec<SharedState>, BackendError> {
        let now = time::to_text(self.now());
        let failed = |e| error("read-write lock and semaphore status", e);
        let mut states = BTreeMap::new();
        let mut told = self.held_details()?;
        let mut details = |key: &str, token: &str| told.remove(&(key.to_owned(), token.to_owned()));
        {
            let sql = &self.sql.shared;
            let mut rows = self.conn.prepare_cached(&sql.rw_rows).map_err(failed)?;
            let rw: Vec<(String, i64, Option<String>, Option<String>)> = rows
                .query_map(params![now], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .and_then(Iterator::collect)
                .map_err(failed)?;
            for (key, generation, writer, expires) in rw {
                let mut state = empty(&key, generation, None)?;
                if let (Some(token), Some(expires)) = (writer, expires) {
                    let expires_at = time::from_text(&expires, "writer_expire_at")?;
                    let details = details(&key, &token);
                    state.holders.push(Holding { token, side: Side::Write, expires_at, details });
                }
                states.insert(key, state);
            }
            let mut rows = self.conn.prepare_cached(&sql.sem_rows).map_err(failed)?;
            let sem: Vec<(String, i64, i64)> = rows
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .and_then(Iterator::collect)
                .map_err(failed)?;
            for (key, permits, fence) in sem {
                let state = empty(&key, fence, Some(u32::try_from(permits).unwrap_or(u32::MAX)))?;
                states.insert(key, state);
            }
            for (statement, lease, place) in [(&sql.rw_holders, "r", "i"), (&sql.sem_holders, "h", "w")] {
                let mut rows = self.conn.prepare_cached(statement).map_err(failed)?;
                let entries: Vec<Row> = rows
                    .query_map(params![now], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                    .and_then(Iterator::collect)
                    .map_err(failed)?;
                for (key, token, kind, expires) in entries {
                    let told = if kind == lease { details(&key, &token) } else { None };
                    let state = states.entry(key.clone()).or_insert_with(|| SharedState {
                        key,
                        fence: None,
                        holders: Vec::new(),
                        waiters: Vec::new(),
                        permits: None,
                    });
                    if kind == place {
                        state.waiters.push(token);
                    } else if kind == lease {
                        let side = if lease == "r" { Side::Read } else { Side::Permit };
                        let expires_at = time::from_text(&expires, "expire_at")?;
                        state.holders.push(Holding { token, side, expires_at, details: told });
                    }
                }
            }
        }
        Ok(states.into_values().filter(|s| keys.is_empty() || keys.contains(&s.key)).collect())
    }
}

/// A name's state with no lease or waiter yet; a counter of 0 is no token issued.
fn empty(key: &str, fence: i64, permits: Option<u32>) -> Result<SharedState, BackendError> {
    let fence = if fence == 0 { None } else { Some(fence_of(key, fence)?) };
    Ok(SharedState { key: key.to_owned(), fence, holders: Vec::new(), waiters: Vec::new(), permits })
}
