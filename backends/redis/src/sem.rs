//! Fenced semaphores (Tenure's own layout; grelmicro has none): per name, a hash
//! `<prefix>semaphore:<name>` with the stored permit count `p`, the last fencing token `f` and
//! the last arrival number `a`; holders in the sorted set `…:h` scored by the end of their lease
//! (server ms) with their fencing tokens in the hash `…:hf`; waiters keeping a place in the sorted
//! set `…:w` scored by arrival, with the ends of their places in the hash `…:we`. One script per
//! call decides against the server's clock (a lease or a place is live through its end); a release
//! publishes on the name's release channel, so waiters of this backend are pushed. Each holder's
//! details (token → `<server ms>:<details>`) are kept in the hash `<prefix>details:semaphore:<name>`,
//! written by a grant that carries them, dropped with the permit (a release, or the reap of an
//! expired one).

use std::time::Duration;

use redis::{Script, ScriptInvocation};
use tenure::backend::{SemaphoreOperations, Wakeup};
use tenure_core::{BackendError, HolderDetails, PermitAnswer, SemState};

use crate::replicas::{self, Grant};
use crate::wake::Wake;
use crate::{RedisBackend, error, record};

/// The server's clock in ms, expired holders and places reaped, the counts of both, and the
/// stored count `p` (nil if absent). `KEYS`: the hash, `…:h`, `…:hf`, `…:w`, `…:we`, the
/// holders' details.
const PRELUDE: &str = r"
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
for _, token in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. now)) do
    redis.call('ZREM', KEYS[2], token)
    redis.call('HDEL', KEYS[3], token)
    redis.call('HDEL', KEYS[6], token)
end
local places = redis.call('HGETALL', KEYS[5])
for i = 1, #places, 2 do
    local ends = tonumber(places[i + 1])
    if not ends or ends < now then
        redis.call('ZREM', KEYS[4], places[i])
        redis.call('HDEL', KEYS[5], places[i])
    end
end
local holders = redis.call('ZCARD', KEYS[2])
local waiters = redis.call('ZCARD', KEYS[4])
local p = redis.call('HGET', KEYS[1], 'p')
if p and not tonumber(p) then
    return redis.error_reply('TENURE_MALFORMED ' .. KEYS[1] .. ' holds a permit count that is not a number')
end
p = tonumber(p)
";

/// `ARGV[1]` token, `ARGV[2]` lease ms, `ARGV[3]` permits, `ARGV[4]` place ms or '', `ARGV[5]`
/// holder details or ''. `{fence or 0, stored permits}`.
const ACQUIRE: &str = r"
local function keep()
    if ARGV[5] ~= '' then
        redis.call('HSET', KEYS[6], ARGV[1], now .. ':' .. ARGV[5])
    end
end
local permits = tonumber(ARGV[3])
if holders == 0 and waiters == 0 then
    redis.call('HSET', KEYS[1], 'p', permits)
    p = permits
end
if p ~= permits then
    return {0, p}
end
local exp = now + tonumber(ARGV[2])
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then
    redis.call('ZADD', KEYS[2], exp, ARGV[1])
    keep()
    return {tonumber(redis.call('HGET', KEYS[3], ARGV[1])) or -1, permits}
end
local rank = redis.call('ZRANK', KEYS[4], ARGV[1])
local ahead = rank or waiters
if holders + ahead < permits then
    redis.call('ZREM', KEYS[4], ARGV[1])
    redis.call('HDEL', KEYS[5], ARGV[1])
    local fence = redis.call('HINCRBY', KEYS[1], 'f', 1)
    redis.call('ZADD', KEYS[2], exp, ARGV[1])
    redis.call('HSET', KEYS[3], ARGV[1], fence)
    keep()
    return {fence, permits}
end
if ARGV[4] ~= '' then
    if not rank then
        redis.call('ZADD', KEYS[4], redis.call('HINCRBY', KEYS[1], 'a', 1), ARGV[1])
    end
    redis.call('HSET', KEYS[5], ARGV[1], now + tonumber(ARGV[4]))
end
return {0, permits}
";

/// `ARGV[1]` token, `ARGV[2]` release channel. 1 iff a live permit went. Publishes when a permit
/// went, or a place in line went while others wait (those behind it may now be let in).
const RELEASE: &str = r"
local left = redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('HDEL', KEYS[5], ARGV[1])
local gone = redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[6], ARGV[1])
if gone == 1 or (left == 1 and redis.call('ZCARD', KEYS[4]) > 0) then
    redis.call('PUBLISH', ARGV[2], '')
end
return gone
";

/// `ARGV[1]` token. 1 iff it holds a live permit.
const OWNED: &str = r"
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then
    return 1
end
return 0
";

/// `{permits (0 if nobody holds or waits), holders, waiters, last fence}`.
const STATE: &str = r"
local f = redis.call('HGET', KEYS[1], 'f')
if f and not tonumber(f) then
    return redis.error_reply('TENURE_MALFORMED ' .. KEYS[1] .. ' holds a fence that is not a number')
end
if holders == 0 and waiters == 0 then
    p = 0
end
return {p or 0, holders, waiters, tonumber(f) or 0}
";

/// The semaphore scripts, hashed once.
#[derive(Debug)]
pub(crate) struct Scripts {
    acquire: Script,
    release: Script,
    owned: Script,
    state: Script,
}

impl Scripts {
    pub(crate) fn new() -> Self {
        let script = |body: &str| Script::new(&format!("{PRELUDE}{body}"));
        Self { acquire: script(ACQUIRE), release: script(RELEASE), owned: script(OWNED), state: script(STATE) }
    }

    /// Every script, to load into the server's cache.
    pub(crate) fn all(&self) -> [&Script; 4] {
        [&self.acquire, &self.release, &self.owned, &self.state]
    }
}

impl RedisBackend {
    /// `script` on `name`'s six keys.
    fn sem_call<'a>(&self, script: &'a Script, name: &str) -> ScriptInvocation<'a> {
        let key = self.key(name);
        let mut invocation = script.key(&key);
        for part in [":h", ":hf", ":w", ":we"] {
            invocation.key(format!("{key}{part}"));
        }
        invocation.key(self.key(&format!("details:{name}")));
        invocation
    }

    fn sem_scripts(&self) -> &Scripts {
        &self.inner.scripts.sem
    }
}

/// A stored permit count read back, checked.
fn permits_of(name: &str, stored: i64) -> Result<u32, BackendError> {
    u32::try_from(stored).map_err(|_| tenure_store::record::malformed(format!("{name} stores {stored} permits")))
}

impl SemaphoreOperations for RedisBackend {
    async fn acquire(
        &self,
        name: &str,
        token: &str,
        lease: Duration,
        permits: u32,
        wait: Option<Duration>,
    ) -> Result<PermitAnswer, BackendError> {
        self.acquire_with_details(name, token, (lease, permits, wait), None).await
    }

    async fn acquire_with_details(
        &self,
        name: &str,
        token: &str,
        (lease, permits, wait): (Duration, u32, Option<Duration>),
        details: Option<&HolderDetails>,
    ) -> Result<PermitAnswer, BackendError> {
        let mut con = self.connection()?;
        self.inner.subscriptions.subscribe_wanted(&mut con, name).await;
        let place = wait.map_or_else(String::new, |wait| tenure_core::time::ceil_millis(wait).to_string());
        let mut invocation = self.sem_call(&self.sem_scripts().acquire, name);
        invocation
            .arg(token)
            .arg(tenure_core::time::ceil_millis(lease))
            .arg(permits)
            .arg(place)
            .arg(details.map_or("", HolderDetails::as_str));
        let grant = Grant {
            what: "semaphore acquire",
            name,
            // A permit is live through the end of its lease.
            before: || replicas::member_reads(format!("{}:h", self.key(name)), token),
            granted: |answer: &(i64, i64), _| answer.0 > 0,
            kept: |before: &[redis::Value], _: &(i64, i64)| {
                replicas::live_member(before, true).then_some(replicas::RENEWAL)
            },
            give_back: || SemaphoreOperations::release(self, name, token),
        };
        let (fence, stored) = self.grant(&mut con, &invocation, token, grant).await?;
        let fence = if fence == 0 { None } else { Some(record::fence(name, fence)?) };
        Ok(PermitAnswer { fence, permits: permits_of(name, stored)? })
    }

    async fn release(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        let mut con = self.connection()?;
        let gone: i64 = self
            .sem_call(&self.sem_scripts().release, name)
            .arg(token)
            .arg(self.inner.subscriptions.channel(name))
            .invoke_async(&mut con)
            .await
            .map_err(|e| error("semaphore release", name, &e))?;
        Ok(gone == 1)
    }

    async fn owned(&self, name: &str, token: &str) -> Result<bool, BackendError> {
        let mut con = self.connection()?;
        let yes: i64 = self
            .sem_call(&self.sem_scripts().owned, name)
            .arg(token)
            .invoke_async(&mut con)
            .await
            .map_err(|e| error("semaphore owned check", name, &e))?;
        Ok(yes == 1)
    }

    async fn state(&self, name: &str) -> Result<SemState, BackendError> {
        let mut con = self.connection()?;
        let (permits, holders, waiting, fence): (i64, usize, usize, i64) = self
            .sem_call(&self.sem_scripts().state, name)
            .invoke_async(&mut con)
            .await
            .map_err(|e| error("semaphore state", name, &e))?;
        let fence = tenure_store::record::generation(name, fence)?.get();
        Ok(SemState { permits: permits_of(name, permits)?, holders, waiting, fence })
    }

    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        Some(self.inner.subscriptions.wakeup(name, Wake::All))
    }
}
