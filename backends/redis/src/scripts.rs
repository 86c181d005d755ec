//! The Lua scripts: grelmicro 0.44's, answer for answer, with three additions — a lock release
//! hands the lock to the oldest waiter queued by a queued acquire ([`crate::queue`]), or else
//! publishes on the name's channel (push wake-ups), and a record that cannot be read is reported
//! as such instead of failing inside Lua. Loaded once per server and called by hash
//! ([`redis::Script`] sends `EVALSHA`, and loads the script again after a server restart).

use redis::Script;

/// Marks an error reply of ours about a record that does not have grelmicro's layout.
pub(crate) const MALFORMED: &str = "TENURE_MALFORMED";

/// What a script on a lock key starts with: its holder read — `stored` (nil when free), its
/// `fence` and `holding` token — and a value not in grelmicro's layout ends the script with an
/// error. `KEYS[1]` lock key.
pub(crate) const HOLDER: &str = r"
local stored = redis.call('GET', KEYS[1])
local fence, holding
if stored then
    local sep = string.find(stored, ':', 1, true)
    fence = sep and tonumber(string.sub(stored, 1, sep - 1))
    if not fence then
        return redis.error_reply('TENURE_MALFORMED ' .. KEYS[1] .. ' holds no <fence>:<token> value')
    end
    holding = string.sub(stored, sep + 1)
end
";

/// After [`HOLDER`]: `KEYS[2]` fence key, `KEYS[3]` holder details key; `ARGV[1]` token,
/// `ARGV[2]` lease in whole ms, `ARGV[3]` holder details ('' for none). Free → `INCR` the fence
/// and store `"<fence>:<token>"` with the TTL, and (Tenure's addition) the details as
/// `"<fence>:<server ms>:<details>"` under `details:<name>` (no TTL: one per name, like the
/// fence; a listing shows them only while that fence's lease lives); held by the token →
/// `PEXPIRE`, same fence; held by another → nil, or the placeholder if a revocation's
/// ([`crate::revoke`]) holds it.
pub(crate) const LOCK_ACQUIRE: &str = r"
if not stored then
    local taken = redis.call('incr', KEYS[2])
    redis.call('set', KEYS[1], taken .. ':' .. ARGV[1], 'px', ARGV[2])
    if ARGV[3] and ARGV[3] ~= '' then
        local now = redis.call('TIME')
        local ms = now[1] .. string.format('%03d', math.floor(tonumber(now[2]) / 1000))
        redis.call('set', KEYS[3], taken .. ':' .. ms .. ':' .. ARGV[3])
    end
    return taken
end
if holding == ARGV[1] then
    redis.call('pexpire', KEYS[1], ARGV[2])
    return fence
end
-- (Tenure's addition: a refusal by a revocation's placeholder answers the placeholder;
-- its prefix is tenure_core::REVOKED_PREFIX)
if string.sub(holding, 1, 15) == 'tenure-revoked:' then
    return holding
end
return nil
";

/// The server clock in µs, and a check that a stored record's numbers are numbers.
const LEADER_PRELUDE: &str = r"
local now_pair = redis.call('TIME')
local now = tonumber(now_pair[1]) * 1000000 + tonumber(now_pair[2])
local fields = {'holder', 'lease_us', 'acquired_at_us', 'renewed_at_us', 'transitions', 'metadata'}
local function read(key)
    local stored = redis.call('HMGET', key, unpack(fields))
    if stored[1] == false then
        return nil
    end
    for i = 2, 6 do
        if stored[i] == false or (i < 6 and tonumber(stored[i]) == nil) then
            return redis.error_reply('TENURE_MALFORMED ' .. key .. ' has no numeric ' .. fields[i])
        end
    end
    return stored
end
";

/// `KEYS[1]` record key, `KEYS[2]` the term's fence key, `KEYS[3]` the holder details key;
/// `ARGV[1]` token, `ARGV[2]` lease µs, `ARGV[3]` metadata JSON, `ARGV[4]` holder details ('' for
/// none). grelmicro 0.44's acquire-or-renew (live iff `now < renewed_at + lease`), and Tenure's
/// fence: `INCR` on a take, kept by a renewal, with the leader's details kept beside the term
/// (`<fence>:<acquired_at_us>:<details>`: a listing matches both, for a grelmicro process takes
/// the lead without a new fence); the record's six fields, then the fence (false: none).
const LEADER_ACQUIRE_OR_RENEW: &str = r"
local key, token, lease, metadata = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
local now_text = string.format('%.0f', now)
local function answer(fence)
    local record = redis.call('HMGET', key, unpack(fields))
    record[7] = fence
    return record
end
local function term()
    local fence = redis.call('INCR', KEYS[2])
    if ARGV[4] ~= '' then
        redis.call('SET', KEYS[3], fence .. ':' .. now_text .. ':' .. ARGV[4])
    end
    return answer(tostring(fence))
end
local stored = read(key)
if stored == nil then
    redis.call('HSET', key, 'holder', token, 'lease_us', lease, 'acquired_at_us', now_text,
        'renewed_at_us', now_text, 'transitions', '0', 'metadata', metadata)
    return term()
end
if stored.err then
    return stored
end
local holder = stored[1]
local live = now < (tonumber(stored[4]) + tonumber(stored[2]))
if live and holder ~= token then
    stored[7] = redis.call('GET', KEYS[2])
    return stored
end
if live then
    redis.call('HSET', key, 'lease_us', lease, 'renewed_at_us', now_text, 'metadata', metadata)
    return answer(redis.call('GET', KEYS[2]))
end
local transitions = tonumber(stored[5])
if holder ~= token then
    transitions = transitions + 1
end
redis.call('HSET', key, 'holder', token, 'lease_us', lease, 'acquired_at_us', now_text,
    'renewed_at_us', now_text, 'transitions', string.format('%d', transitions), 'metadata', metadata)
return term()
";

/// `KEYS[1]` record key; `ARGV[1]` token, `ARGV[2]` release channel. Deletes a live record held
/// by the token, then publishes the release.
const LEADER_RELEASE: &str = r"
local stored = read(KEYS[1])
if stored == nil then
    return 0
end
if stored.err then
    return stored
end
if now < (tonumber(stored[4]) + tonumber(stored[2])) and stored[1] == ARGV[1] then
    redis.call('DEL', KEYS[1])
    redis.call('publish', ARGV[2], '')
    return 1
end
return 0
";

/// `KEYS[1]` record key, `KEYS[2]` the term's fence key. The live record with its fence, or nil.
const LEADER_GET: &str = r"
local stored = read(KEYS[1])
if stored == nil then
    return nil
end
if stored.err then
    return stored
end
if now < (tonumber(stored[4]) + tonumber(stored[2])) then
    stored[7] = redis.call('GET', KEYS[2])
    return stored
end
return nil
";

/// `KEYS[1]` schedule key; `ARGV[1]` due epoch. grelmicro's claim: writes iff nothing or
/// something strictly earlier is stored.
const SCHEDULE_CLAIM: &str = r"
local stored = redis.call('get', KEYS[1])
if stored then
    local last = tonumber(stored)
    if last == nil then
        return redis.error_reply('TENURE_MALFORMED ' .. KEYS[1] .. ' holds no number')
    end
    if last >= tonumber(ARGV[1]) then
        return 0
    end
end
redis.call('set', KEYS[1], ARGV[1])
return 1
";

/// The scripts, hashed once.
#[derive(Debug)]
pub(crate) struct Scripts {
    pub(crate) lock_acquire: Script,
    pub(crate) lock_acquire_queued: Script,
    pub(crate) lock_release: Script,
    pub(crate) lock_revoke: Script,
    pub(crate) leader_acquire_or_renew: Script,
    pub(crate) leader_release: Script,
    pub(crate) leader_get: Script,
    pub(crate) schedule_claim: Script,
    pub(crate) rw: crate::rw::Scripts,
    pub(crate) sem: crate::sem::Scripts,
}

impl Scripts {
    pub(crate) fn new() -> Self {
        let leader = |body: &str| Script::new(&format!("{LEADER_PRELUDE}{body}"));
        Self {
            lock_acquire: Script::new(&format!("{HOLDER}{LOCK_ACQUIRE}")),
            lock_acquire_queued: Script::new(&crate::queue::acquire_script()),
            lock_release: Script::new(&crate::queue::release_script()),
            lock_revoke: Script::new(&format!("{HOLDER}{}", crate::revoke::LOCK_REVOKE)),
            leader_acquire_or_renew: leader(LEADER_ACQUIRE_OR_RENEW),
            leader_release: leader(LEADER_RELEASE),
            leader_get: leader(LEADER_GET),
            schedule_claim: Script::new(SCHEDULE_CLAIM),
            rw: crate::rw::Scripts::new(),
            sem: crate::sem::Scripts::new(),
        }
    }

    /// Loads every script into the server's cache, so the first calls need no second trip.
    pub(crate) async fn load(&self, con: &mut impl redis::aio::ConnectionLike) -> redis::RedisResult<()> {
        for script in [
            &self.lock_acquire,
            &self.lock_acquire_queued,
            &self.lock_release,
            &self.lock_revoke,
            &self.leader_acquire_or_renew,
            &self.leader_release,
            &self.leader_get,
            &self.schedule_claim,
        ]
        .into_iter()
        .chain(self.rw.all())
        .chain(self.sem.all())
        {
            script.load_async(con).await?;
        }
        Ok(())
    }
}
