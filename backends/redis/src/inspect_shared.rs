//! What `tenure exporter` shows of a Redis store's read-write locks (grelmicro's
//! hash `rwlock:<name>` with `g`/`w`/`we`, readers in `…:r` and waiting writers in `…:i` scored
//! by the ends of their leases) and semaphores (Tenure's hash `semaphore:<name>` with `p`/`f`,
//! holders in `…:h` scored by their ends, waiters in `…:w` by arrival with their ends in `…:we`).
//! Each live lease comes with its holder's details from Tenure's hash `details:<key>` (token →
//! `<server ms>:<details>`). Read by one script per name, against the server's clock; nothing is
//! written.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use redis::Script;
use tenure::{HolderInfo, Holding, SharedState, Side};
use tenure_core::{BackendError, WallTime};
use tenure_store::record;

use crate::{RedisBackend, error};

/// `{g, w, we, reader tokens, reader ends, intents, told}` (`''` for a missing field or a writer
/// whose lease ended; a writer or reader is live while its end is after now, an intent too;
/// `told`: the writer's details, then each reader's, `''` where none). Keys not of a name's types
/// (a guess from another name's part: the name `x:r`'s hash) read as nothing.
static RW: LazyLock<Script> = LazyLock::new(|| {
    script(
        r"
if not (is(KEYS[1], 'hash') and is(KEYS[2], 'zset') and is(KEYS[3], 'zset') and is(KEYS[4], 'hash')) then
    return {'', '', '', {}, {}, {}, {}}
end
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local s = redis.call('HMGET', KEYS[1], 'g', 'w', 'we')
local w, we = s[2] or '', s[3] or ''
if w == '' or not tonumber(we) or tonumber(we) <= now then
    w, we = '', ''
end
local tokens, ends, told = {}, {}, {told_by(w)}
local readers = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. now, '+inf', 'WITHSCORES')
for i = 1, #readers, 2 do
    tokens[#tokens + 1] = readers[i]
    ends[#ends + 1] = readers[i + 1]
    told[#told + 1] = told_by(readers[i])
end
local intents = redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. now, '+inf')
return {s[1] or '', w, we, tokens, ends, intents, told}
",
    )
});

/// `{p, f, holder tokens, holder ends, waiter tokens, told}` (a holder is live through its end, a
/// place too; waiters in arrival order; `told`: each holder's details, `''` where none).
static SEM: LazyLock<Script> = LazyLock::new(|| {
    script(
        r"
if not (is(KEYS[1], 'hash') and is(KEYS[2], 'zset') and is(KEYS[3], 'zset') and is(KEYS[4], 'hash')
    and is(KEYS[5], 'hash')) then
    return {'', '', {}, {}, {}, {}}
end
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local s = redis.call('HMGET', KEYS[1], 'p', 'f')
local tokens, ends, waiters, told = {}, {}, {}, {}
local holders = redis.call('ZRANGEBYSCORE', KEYS[2], now, '+inf', 'WITHSCORES')
for i = 1, #holders, 2 do
    tokens[#tokens + 1] = holders[i]
    ends[#ends + 1] = holders[i + 1]
    told[#told + 1] = told_by(holders[i])
end
for _, token in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
    local place = tonumber(redis.call('HGET', KEYS[4], token))
    if place and place >= now then
        waiters[#waiters + 1] = token
    end
end
return {s[1] or '', s[2] or '', tokens, ends, waiters, told}
",
    )
});

/// `body` after `is(key, kind)` (whether `key` holds `kind`, or nothing) and `told_by(token)`
/// (the details the last key keeps for `token`, `''` if none).
fn script(body: &str) -> Script {
    Script::new(&format!(
        "local function is(key, kind)\n    local found = redis.call('TYPE', key)['ok']\n    \
         return found == kind or found == 'none'\nend\n\
         local function told_by(token)\n    if token == '' then return '' end\n    \
         return redis.call('HGET', KEYS[#KEYS], token) or ''\nend\n{body}"
    ))
}

type RwReply = (String, String, String, Vec<String>, Vec<String>, Vec<String>, Vec<String>);
type SemReply = (String, String, Vec<String>, Vec<String>, Vec<String>, Vec<String>);

impl RedisBackend {
    pub(crate) async fn inspect_shared(&self, keys: Vec<String>) -> Result<Vec<SharedState>, BackendError> {
        let names: BTreeSet<String> = if keys.is_empty() {
            let mut names = BTreeSet::new();
            for (kind, parts) in [("rwlock:", &[":r", ":i"][..]), ("semaphore:", &[":h", ":hf", ":w", ":we"][..])] {
                for key in self.scan(kind).await? {
                    // A name's own key, or one of its parts (a lock read but never written has
                    // only readers); what is not a name reads back empty below.
                    if let Some(name) = parts.iter().find_map(|p| key.strip_suffix(p)) {
                        names.insert(name.to_owned());
                    }
                    names.insert(key);
                }
            }
            names
        } else {
            keys.into_iter().collect()
        };
        let mut con = self.connection()?;
        let mut states = Vec::new();
        for name in names {
            let key = self.key(&name);
            let state = if name.starts_with("rwlock:") {
                let reply: RwReply = RW
                    .key(&key)
                    .key(format!("{key}:r"))
                    .key(format!("{key}:i"))
                    .key(self.key(&format!("details:{name}")))
                    .invoke_async(&mut con)
                    .await
                    .map_err(|e| error("read-write lock status", &name, &e))?;
                rw_state(name, reply)?
            } else if name.starts_with("semaphore:") {
                let reply: SemReply = SEM
                    .key(&key)
                    .key(format!("{key}:h"))
                    .key(format!("{key}:w"))
                    .key(format!("{key}:we"))
                    .key(self.key(&format!("details:{name}")))
                    .invoke_async(&mut con)
                    .await
                    .map_err(|e| error("semaphore status", &name, &e))?;
                sem_state(name, reply)?
            } else {
                None
            };
            states.extend(state);
        }
        Ok(states)
    }
}

fn rw_state(key: String, reply: RwReply) -> Result<Option<SharedState>, BackendError> {
    let (g, w, we, tokens, ends, intents, told) = reply;
    let mut told = told.iter().map(|text| kept(text));
    let mut holders = Vec::new();
    let writer_told = told.next().flatten();
    if !w.is_empty() {
        holders.push(Holding { token: w, side: Side::Write, expires_at: millis(&key, &we)?, details: writer_told });
    }
    for (token, end) in tokens.into_iter().zip(&ends) {
        let details = told.next().flatten();
        holders.push(Holding { token, side: Side::Read, expires_at: millis(&key, end)?, details });
    }
    let fence = if g.is_empty() { None } else { Some(record::generation(&key, number(&key, "g", &g)?)?) };
    let fence = fence.filter(|f| f.get() > 0);
    shared(key, fence, holders, intents, None)
}

fn sem_state(key: String, reply: SemReply) -> Result<Option<SharedState>, BackendError> {
    let (p, f, tokens, ends, waiters, told) = reply;
    let mut told = told.iter().map(|text| kept(text));
    let mut holders = Vec::new();
    for (token, end) in tokens.into_iter().zip(&ends) {
        let details = told.next().flatten();
        holders.push(Holding { token, side: Side::Permit, expires_at: millis(&key, end)?, details });
    }
    let fence = if f.is_empty() { None } else { Some(record::fence(&key, number(&key, "f", &f)?)?) };
    let permits = if p.is_empty() {
        None
    } else {
        let stored = number(&key, "p", &p)?;
        Some(u32::try_from(stored).map_err(|_| record::malformed(format!("{key} stores {stored} permits")))?)
    };
    shared(key, fence, holders, waiters, permits)
}

/// The state, or `None` for a key that holds nothing of a name.
fn shared(
    key: String,
    fence: Option<tenure_core::FencingToken>,
    mut holders: Vec<Holding>,
    waiters: Vec<String>,
    permits: Option<u32>,
) -> Result<Option<SharedState>, BackendError> {
    if fence.is_none() && holders.is_empty() && waiters.is_empty() && permits.is_none() {
        return Ok(None);
    }
    holders.sort_by(|a, b| a.token.cmp(&b.token));
    Ok(Some(SharedState { key, fence, holders, waiters, permits }))
}

/// Holder details kept as `<server ms>:<details>`; `None` for `''` or a text of another shape.
pub(crate) fn kept(text: &str) -> Option<HolderInfo> {
    let (ms, details) = text.split_once(':')?;
    let at = WallTime::from_unix_micros(ms.parse::<i64>().ok()?.checked_mul(1000)?);
    HolderInfo::parse(details, at)
}

fn number(key: &str, field: &str, text: &str) -> Result<i64, BackendError> {
    // A score may come back with a fraction.
    let whole = text.split('.').next().unwrap_or(text);
    whole.parse().map_err(|_| record::malformed(format!("{key} holds a {field} that is not a number")))
}

fn millis(key: &str, text: &str) -> Result<WallTime, BackendError> {
    Ok(WallTime::from_unix_micros(number(key, "lease end", text)?.saturating_mul(1000)))
}
