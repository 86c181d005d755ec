//! Read-write locks in grelmicro 0.44's Redis layout (`RedisReadWriteLockAdapter`): per name, a
//! hash `<prefix>rwlock:<name>` with the generation `g`, the writer's token `w` and its expiry `we`
//! (server ms), and sorted sets `…:r` (readers) and `…:i` (writers' intents) scored by expiry.
//! Expiry is judged in the script against the server's clock — a lease is live strictly before
//! its expiry — so an expired writer stays in the hash and the next grant knows it never released
//! (`poisoned`). The scripts are grelmicro's, decision for decision, with two additions: a hash
//! whose numbers are not numbers is reported as malformed, and a release, a withdrawn intent or a
//! downgrade publishes on the name's release channel, so this backend's waiters are pushed (a
//! grelmicro process's release publishes nothing: waiters then see it at their next attempt).
//!
//! Beside the layout, Tenure's own hash `<prefix>details:rwlock:<name>` keeps each reader's and
//! the writer's holder details (token → `<server ms>:<details>`), written by a grant that carries
//! them, dropped by a release, by the reap of an expired reader (no command more while none
//! expired), and all at once by a write grant (nobody else holds then: what is left is of leases
//! gone, such as a reader a grelmicro process's script reaped); a grelmicro process neither reads
//! nor writes it.

use std::time::Duration;

use redis::{Script, ScriptInvocation};
use tenure::backend::{ReadWriteOperations, Wakeup};
use tenure_core::{BackendError, FencingToken, HolderDetails, RwState, WriteGrant};
use tenure_store::record::generation;

use crate::replicas::{self, Grant};
use crate::wake::Wake;
use crate::{RedisBackend, error, record};

/// The server's clock in ms, expired readers (with their holder details) and intents reaped, and
/// the hash read: `g` (0 if absent), `w`, `we` (nil if absent); `keep(token, details)` keeps a
/// grant's holder details. `KEYS[1]` hash, `KEYS[2]` readers, `KEYS[3]` intents, `KEYS[4]` holder
/// details.
const PRELUDE: &str = r"
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
if #expired > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
    for _, reader in ipairs(expired) do
        redis.call('HDEL', KEYS[4], reader)
    end
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local stored = redis.call('HMGET', KEYS[1], 'g', 'w', 'we')
local g, w, we = stored[1], stored[2], stored[3]
if (g and not tonumber(g)) or (we and not tonumber(we)) then
    return redis.error_reply('TENURE_MALFORMED ' .. KEYS[1] .. ' holds a g or we that is not a number')
end
g = tonumber(g) or 0
we = tonumber(we)
local writing = w and we and we > now
local function keep(token, details)
    if details ~= nil and details ~= '' then
        redis.call('HSET', KEYS[4], token, now .. ':' .. details)
    end
end
";

/// `ARGV[1]` token, `ARGV[2]` lease ms, `ARGV[3]` holder details ('' for none). The
/// generation, or nil.
const ACQUIRE_READ: &str = r"
local exp = now + tonumber(ARGV[2])
if not redis.call('ZSCORE', KEYS[2], ARGV[1]) and ((we and we > now) or redis.call('ZCARD', KEYS[3]) > 0) then
    return nil
end
redis.call('ZADD', KEYS[2], exp, ARGV[1])
keep(ARGV[1], ARGV[3])
return g
";

/// `ARGV[1]` token, `ARGV[2]` lease ms, `ARGV[3]` `1` to keep an intent if refused, `ARGV[4]`
/// holder details ('' for none). `{fence, poisoned}`, or nil.
const ACQUIRE_WRITE: &str = r"
local exp = now + tonumber(ARGV[2])
if writing and w == ARGV[1] then
    redis.call('HSET', KEYS[1], 'we', exp)
    keep(ARGV[1], ARGV[4])
    return {g, 0}
end
if writing or redis.call('ZCARD', KEYS[2]) > 0 then
    if ARGV[3] == '1' then
        redis.call('ZADD', KEYS[3], exp, ARGV[1])
    end
    return nil
end
local poisoned = 0
if w then
    poisoned = 1
end
redis.call('ZREM', KEYS[3], ARGV[1])
g = g + 1
redis.call('HSET', KEYS[1], 'g', g, 'w', ARGV[1], 'we', exp)
-- (nobody else holds now: whatever details are left are of leases gone)
redis.call('DEL', KEYS[4])
keep(ARGV[1], ARGV[4])
return {g, poisoned}
";

/// `ARGV[1]` token, `ARGV[2]` release channel. 1 iff a live read lease went.
const RELEASE_READ: &str = r"
local gone = redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
if gone == 1 then
    redis.call('PUBLISH', ARGV[2], '')
end
return gone
";

/// `ARGV[1]` token, `ARGV[2]` release channel. 1 iff the live write lease went (clean).
const RELEASE_WRITE: &str = r"
if writing and w == ARGV[1] then
    redis.call('HDEL', KEYS[1], 'w', 'we')
    redis.call('HDEL', KEYS[4], ARGV[1])
    redis.call('PUBLISH', ARGV[2], '')
    return 1
end
return 0
";

/// `ARGV[1]` token, `ARGV[2]` release channel. 1 iff a live intent went.
const CANCEL_INTENT: &str = r"
local gone = redis.call('ZREM', KEYS[3], ARGV[1])
if gone == 1 then
    redis.call('PUBLISH', ARGV[2], '')
end
return gone
";

/// `ARGV[1]` token, `ARGV[2]` read lease ms, `ARGV[3]` release channel. The generation, or nil.
const DOWNGRADE: &str = r"
if not (writing and w == ARGV[1]) then
    return nil
end
redis.call('HDEL', KEYS[1], 'w', 'we')
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PUBLISH', ARGV[3], '')
return g
";

/// `{generation, writing, readers, intents}`.
const STATE: &str = r"
local live = 0
if we and we > now then
    live = 1
end
return {g, live, redis.call('ZCARD', KEYS[2]), redis.call('ZCARD', KEYS[3])}
";

/// `ARGV[1]` token. 1 iff it reads.
const OWNED_READ: &str = r"
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then
    return 1
end
return 0
";

/// `ARGV[1]` token. 1 iff it writes.
const OWNED_WRITE: &str = r"
if writing and w == ARGV[1] then
    return 1
end
return 0
";

/// The read-write lock scripts, hashed once.
#[derive(Debug)]
pub(crate) struct Scripts {
    acquire_read: Script,
    acquire_write: Script,
    release_read: Script,
    release_write: Script,
    cancel_intent: Script,
    downgrade: Script,
    state: Script,
    owned_read: Script,
    owned_write: Script,
}

impl Scripts {
    pub(crate) fn new() -> Self {
        let script = |body: &str| Script::new(&format!("{PRELUDE}{body}"));
        Self {
            acquire_read: script(ACQUIRE_READ),
            acquire_write: script(ACQUIRE_WRITE),
            release_read: script(RELEASE_READ),
            release_write: script(RELEASE_WRITE),
            cancel_intent: script(CANCEL_INTENT),
            downgrade: script(DOWNGRADE),
            state: script(STATE),
            owned_read: script(OWNED_READ),
            owned_write: script(OWNED_WRITE),
        }
    }

    /// Every script, to load into the server's cache.
    pub(crate) fn all(&self) -> [&Script; 9] {
        [
            &self.acquire_read,
            &self.acquire_write,
            &self.release_read,
            &self.release_write,
            &self.cancel_intent,
            &self.downgrade,
            &self.state,
            &self.owned_read,
            &self.owned_write,
        ]
    }
}

impl RedisBackend {
    /// `script` on `name`'s four keys, with `token` as its first argument.
    fn rw_call<'a>(&self, script: &'a Script, name: &str, token: &str) -> ScriptInvocation<'a> {
        let key = self.key(name);
        let mut invocation = script.key(&key);
        invocation.key(format!("{key}:r")).key(format!("{key}:i")).key(self.key(&format!("details:{name}"))).arg(token);
        invocation
    }

    fn rw_scripts(&self) -> &Scripts {
        &self.inner.scripts.rw
    }

    /// Runs a release-like script (token, then the name's release channel): true iff it let go.
    async fn rw_let_go(&self, script: &Script, name: &str, token: &str, what: &str) -> Result<bool, BackendError> {
        let mut con = self.connection()?;
        let gone: i64 = self
            .rw_call(script, name, token)
            .arg(self.inner.subscriptions.channel(name))
            .invoke_async(&mut con)
            .await
            .map_err(|e| error(what, name, &e))?;
        Ok(gone == 1)
    }

    async fn rw_flag(&self, script: &Script, name: &str, token: &str, what: &str) -> Result<bool, BackendError> {
        let mut con = self.connection()?;
        let yes: i64 =
            self.rw_call(script, name, token).invoke_async(&mut con).await.map_err(|e| error(what, name, &e))?;
        Ok(yes == 1)
    }
}

impl ReadWriteOperations for RedisBackend {
    async fn acquire_read(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
    ) -> Result<Option<FencingToken>, BackendError> {
        self.acquire_read_with_details(name, token, lease, None).await
    }

    async fn acquire_read_with_details(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        details: Option<&HolderDetails>,
    ) -> Result<Option<FencingToken>, BackendError> {
        let mut con = self.connection()?;
        self.inner.subscriptions.subscribe_wanted(&mut con, name).await;
        let mut invocation = self.rw_call(&self.rw_scripts().acquire_read, name, token);
        invocation.arg(tenure_core::time::ceil_millis(lease)).arg(details.map_or("", HolderDetails::as_str));
        let grant = Grant {
            what: "read acquire",
            name,
            // A reader is live strictly before the end of its lease.
            before: || replicas::member_reads(format!("{}:r", self.key(name)), token),
            granted: |g: &Option<i64>, _| g.is_some(),
            kept: |before: &[redis::Value], _: &Option<i64>| {
                replicas::live_member(before, false).then_some(replicas::RENEWAL)
            },
            give_back: || self.release_read(name, token),
        };
        let g = self.grant(&mut con, &invocation, token, grant).await?;
        g.map(|g| generation(name, g)).transpose()
    }

    async fn acquire_write(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        intent: bool,
    ) -> Result<Option<WriteGrant>, BackendError> {
        self.acquire_write_with_details(name, token, (lease, intent), None).await
    }

    async fn acquire_write_with_details(
        &self,
        name: &str,
        token: &str,
        (lease, intent): (Duration, bool),
        details: Option<&HolderDetails>,
    ) -> Result<Option<WriteGrant>, BackendError> {
        let mut con = self.connection()?;
        self.inner.subscriptions.subscribe_wanted(&mut con, name).await;
        let mut invocation = self.rw_call(&self.rw_scripts().acquire_write, name, token);
        invocation
            .arg(tenure_core::time::ceil_millis(lease))
            .arg(if intent { "1" } else { "0" })
            .arg(details.map_or("", HolderDetails::as_str));
        let grant = Grant {
            what: "write acquire",
            name,
            // The writer `w` until `we` (server ms), strictly before it.
            before: || vec![redis::cmd("TIME"), redis::cmd("HMGET").arg(self.key(name)).arg("w").arg("we").clone()],
            granted: |grant: &Option<(i64, i64)>, _| grant.is_some(),
            kept: |before: &[redis::Value], _: &Option<(i64, i64)>| {
                let now = before.first().and_then(replicas::now_ms);
                let stored =
                    before.get(1).and_then(|v| redis::from_redis_value_ref::<(Option<String>, Option<i64>)>(v).ok());
                let live = matches!((now, stored), (Some(now), Some((Some(w), Some(we)))) if w == token && we > now);
                live.then_some(replicas::RENEWAL)
            },
            give_back: || self.release_write(name, token),
        };
        let grant = self.grant(&mut con, &invocation, token, grant).await?;
        grant
            .map(|(fence, poisoned)| Ok(WriteGrant { fence: record::fence(name, fence)?, poisoned: poisoned == 1 }))
            .transpose()
    }

    async fn release_read(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        self.rw_let_go(&self.rw_scripts().release_read, name, token, "read release").await
    }

    async fn release_write(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        self.rw_let_go(&self.rw_scripts().release_write, name, token, "write release").await
    }

    async fn cancel_intent(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        self.rw_let_go(&self.rw_scripts().cancel_intent, name, token, "intent withdrawal").await
    }

    async fn downgrade(&self, name: &str, token: &str, lease: Duration) -> Result<Option<FencingToken>, BackendError> {
        let mut con = self.connection()?;
        let mut invocation = self.rw_call(&self.rw_scripts().downgrade, name, token);
        invocation.arg(tenure_core::time::ceil_millis(lease)).arg(self.inner.subscriptions.channel(name));
        // The write lease is gone either way: an unconfirmed downgrade is not given back.
        let grant = Grant {
            what: "downgrade",
            name,
            before: Vec::new,
            granted: |g: &Option<i64>, _| g.is_some(),
            kept: |_: &[redis::Value], _: &Option<i64>| {
                Some("the downgrade is not counted (its read lease runs to its end)")
            },
            give_back: || async { Ok(false) },
        };
        let g = self.grant(&mut con, &invocation, token, grant).await?;
        g.map(|g| generation(name, g)).transpose()
    }

    async fn state(&self, name: &str) -> Result<RwState, BackendError> {
        let mut con = self.connection()?;
        let key = self.key(name);
        let (g, writing, readers, intents): (i64, i64, usize, usize) = self
            .rw_scripts()
            .state
            .key(&key)
            .key(format!("{key}:r"))
            .key(format!("{key}:i"))
            .key(self.key(&format!("details:{name}")))
            .invoke_async(&mut con)
            .await
            .map_err(|e| error("read-write lock state", name, &e))?;
        Ok(RwState { generation: generation(name, g)?.get(), writing: writing == 1, readers, waiting_writers: intents })
    }

    async fn owned_read(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        self.rw_flag(&self.rw_scripts().owned_read, name, token, "read owned check").await
    }

    async fn owned_write(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        self.rw_flag(&self.rw_scripts().owned_write, name, token, "write owned check").await
    }

    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        Some(self.inner.subscriptions.wakeup(name, Wake::All))
    }
}
