//! What `tenure status` shows of a Redis store: every lock name with a fencing counter (a name
//! once acquired keeps its `fence:` key), its live holder, expiry and details, the live places of
//! its line, and the live leader records.

use std::collections::HashMap;
use std::time::Duration;

use tenure::{HolderInfo, LeaderState, LockState, Waiting};
use tenure_core::{BackendError, WallTime};

use crate::{RedisBackend, error, record};

impl RedisBackend {
    pub(crate) async fn inspect_locks(&self, keys: Vec<String>) -> Result<Vec<LockState>, BackendError> {
        let mut names = if keys.is_empty() {
            let mut names = Vec::new();
            for kind in ["lock:", "tasklock:"] {
                let fences = self.scan(&format!("fence:{kind}")).await?;
                names.extend(fences.into_iter().filter_map(|k| k.strip_prefix("fence:").map(str::to_owned)));
            }
            names
        } else {
            keys
        };
        names.sort();
        names.dedup();
        let mut con = self.connection()?;
        let now = self.server_now().await?;
        let mut states = Vec::with_capacity(names.len());
        for name in names {
            let (value, ttl_ms, fence, details, queue, places): Read = redis::pipe()
                .get(self.key(&name))
                .pttl(self.key(&name))
                .get(self.key(&format!("fence:{name}")))
                .get(self.key(&format!("details:{name}")))
                .lrange(self.key(&format!("queue:{name}")), 0, -1)
                .hgetall(self.key(&format!("queue-places:{name}")))
                .query_async(&mut con)
                .await
                .map_err(|e| error("lock status", &name, &e))?;
            // (with min_replicas there is no queue: waiters poll)
            let waiting = self.inner.confirm.is_none().then(|| line(&queue, &places, now));
            let fence = fence.map(|f| record::fence(&name, f)).transpose()?;
            let (holder, expires_at, details) = match &value {
                Some(v) => {
                    let (held, token) = record::lock_value(&name, v)?;
                    let ttl = Duration::from_millis(u64::try_from(ttl_ms).unwrap_or(0));
                    let details = details.as_deref().and_then(|text| kept_details(text, held));
                    (Some(token.to_owned()), Some(now.saturating_add(ttl)), details)
                }
                None => (None, None, None),
            };
            if fence.is_some() || holder.is_some() {
                states.push(LockState { key: name, fence, holder, expires_at, details, waiting });
            }
        }
        Ok(states)
    }

    pub(crate) async fn inspect_leaders(&self, keys: Vec<String>) -> Result<Vec<LeaderState>, BackendError> {
        let mut names = if keys.is_empty() {
            let records = self.scan("le_us:leader:").await?;
            records.into_iter().filter_map(|k| k.strip_prefix("le_us:").map(str::to_owned)).collect()
        } else {
            keys
        };
        names.sort();
        names.dedup();
        let mut states = Vec::new();
        let mut con = self.connection()?;
        for key in names {
            if let Some(record) = self.leader_get(&key).await? {
                let told: Option<String> = redis::cmd("GET")
                    .arg(self.key(&format!("details:{key}")))
                    .query_async(&mut con)
                    .await
                    .map_err(|e| error("leader status", &key, &e))?;
                let details = told.and_then(|text| term_details(&text, &record));
                states.push(LeaderState { key, record, details });
            }
        }
        Ok(states)
    }

    /// The keys (without the backend's prefix) that start with `start`, on every primary of a
    /// cluster.
    pub(crate) async fn scan(&self, start: &str) -> Result<Vec<String>, BackendError> {
        let mut con = self.connection()?;
        let failed = |e: redis::RedisError| error("status scan", start, &e);
        let primaries = con.primaries().await.map_err(failed)?;
        let nodes: Vec<Option<&(String, u16)>> =
            if primaries.is_empty() { vec![None] } else { primaries.iter().map(Some).collect() };
        let pattern = format!("{}*", glob_escape(&self.key(start)));
        let prefix_len = self.key("").len();
        let mut keys = Vec::new();
        for node in nodes {
            let mut cursor = 0_u64;
            loop {
                let mut scan = redis::cmd("SCAN");
                scan.arg(cursor).arg("MATCH").arg(&pattern).arg("COUNT").arg(1000);
                let reply = con.on_node(node, scan).await.map_err(failed)?;
                let (next, batch): (u64, Vec<String>) = redis::from_redis_value(reply).map_err(|e| failed(e.into()))?;
                keys.extend(batch.into_iter().filter_map(|k| k.get(prefix_len..).map(str::to_owned)));
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        Ok(keys)
    }

    /// The server's clock.
    async fn server_now(&self) -> Result<WallTime, BackendError> {
        let mut con = self.connection()?;
        let (secs, micros): (i64, i64) =
            redis::cmd("TIME").query_async(&mut con).await.map_err(|e| error("TIME", "the server", &e))?;
        Ok(WallTime::from_unix_micros(secs.saturating_mul(1_000_000).saturating_add(micros)))
    }
}

/// `text` with Redis glob characters escaped.
fn glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The holder details kept as `<fence>:<server ms>:<details>` (`scripts::LOCK_ACQUIRE`), if they
/// are the grant of the live lease's `fence`.
fn kept_details(text: &str, fence: tenure_core::FencingToken) -> Option<HolderInfo> {
    let (kept, rest) = text.split_once(':')?;
    (kept.parse::<u64>().ok()? == fence.get()).then(|| crate::inspect_shared::kept(rest)).flatten()
}

/// A leader's details kept as `<fence>:<acquired_at µs>:<details>` (`scripts::LEADER_ACQUIRE_OR_RENEW`),
/// if they are the live term's: its fence and its start (a grelmicro process takes the lead
/// without a new fence).
fn term_details(text: &str, record: &tenure_core::LeaderRecord) -> Option<HolderInfo> {
    let (fence, rest) = text.split_once(':')?;
    let (micros, details) = rest.split_once(':')?;
    let (fence, micros) = (fence.parse::<u64>().ok()?, micros.parse::<i64>().ok()?);
    let term = record.fence.map(|f| f.get()) == Some(fence) && record.acquired_at.as_unix_micros() == micros;
    term.then(|| HolderInfo::parse(details, WallTime::from_unix_micros(micros))).flatten()
}

/// What one read of a lock name gives: its value, TTL, fence, holder details, queue and places.
type Read = (Option<String>, i64, Option<i64>, Option<String>, Vec<String>, HashMap<String, String>);

/// The live places of a lock's line, in turn order (`queue::PRELUDE`'s layout: `<expires
/// ms>:<lease ms>:<route>`, then a line with when it was taken, then one with the details).
fn line(queue: &[String], places: &HashMap<String, String>, now: WallTime) -> Vec<Waiting> {
    let now_ms = now.as_unix_micros() / 1000;
    let read = |token: &String| {
        let (head, rest) = places.get(token)?.split_once('\n')?;
        let (since, details) = rest.split_once('\n')?;
        let expires: i64 = head.split(':').next()?.parse().ok()?;
        let since = WallTime::from_unix_micros(since.parse::<i64>().ok()?.checked_mul(1000)?);
        (expires >= now_ms).then(|| Waiting {
            token: token.clone(),
            since: Some(since),
            details: HolderInfo::parse(details, since),
        })
    };
    queue.iter().filter_map(read).collect()
}
