//! Queued acquires on Redis: fair turns and the hand-off inside the release script
//! ([`tenure_core::StoreModel::lock_acquire_queued`] is the reference).
//!
//! Beside grelmicro's lock key and fence key, a name has two keys of Tenure's own:
//! `queue:<name>`, a list of the waiting tokens, oldest first, and `queue-places:<name>`, a hash
//! from each token to `<expires ms>:<lease ms>:<route>` — when its place lapses (server time),
//! the lease it asked for, and the channel its grant is published on (its backend's) — then, a
//! line each, when the place was taken (server ms, kept by a renewal: `tenure locks` shows it)
//! and the waiter's holder details ('' if none: written beside its grant by the hand-off). Both
//! expire once the longest place has lapsed.
//!
//! A refused queued acquire keeps or renews its place. A release — or a queued attempt that finds
//! the lock free behind a live waiter — hands the lock to the oldest waiter whose place is live:
//! it takes the next fence, sets the lock key for that waiter's token with its lease, and
//! publishes `<fence>:<name length>:<name><token>` on the waiter's route. grelmicro's scripts
//! never look at the queue: a grelmicro process may take a free lock ahead of it, never one
//! handed over (the lock key is set), and after its release the queue's head takes the lock at
//! its next attempt.

/// What every queue script starts with, after the lock's holder is read
/// ([`crate::scripts::HOLDER`]): helpers. `KEYS[1]` lock key, `KEYS[2]` fence key, `KEYS[3]`
/// queue, `KEYS[4]` places, `KEYS[5]` holder details ([`crate::scripts::LOCK_ACQUIRE`]).
///
/// A token is in the queue list iff it has a field in the places hash. Lapsed places are dropped
/// lazily, where a decision looks at them — at the head, or the caller's own — so a call costs
/// the same however many wait: the live waiters' order is what the store model's eager pruning
/// leaves (every entry reaches the head in turn, so lapsed ones never pile up).
const PRELUDE: &str = r"
-- Most calls find nobody queued: they then touch no queue key, and read no clock (TIME costs
-- a script more than the rest of it).
local queued = redis.call('EXISTS', KEYS[3]) == 1
local now
local function clock()
    if not now then
        local pair = redis.call('TIME')
        now = tonumber(pair[1]) * 1000 + math.floor(tonumber(pair[2]) / 1000)
    end
    return now
end
-- A token's place as stored (nil if it has none).
local function place_of(token)
    return queued and redis.call('HGET', KEYS[4], token) or nil
end
-- A place's lease, route, holder details ('' if none) and when it was taken; nil if it lapsed
-- or cannot be read.
local function live(place)
    local expires, lease, route, since, details =
        string.match(place or '', '^(%d+):(%d+):([^\n]+)\n(%d+)\n(.*)$')
    if not expires or tonumber(expires) < clock() then
        return nil
    end
    return lease, route, details, since
end
local function leave(token)
    if queued and redis.call('HDEL', KEYS[4], token) == 1 then
        redis.call('LREM', KEYS[3], 1, token)
    end
end
-- The oldest waiter whose place is live (lapsed ones ahead of it leave).
local function head()
    while queued do
        local token = redis.call('LINDEX', KEYS[3], 0)
        if not token then
            return nil
        end
        if live(place_of(token)) then
            return token
        end
        redis.call('LPOP', KEYS[3])
        redis.call('HDEL', KEYS[4], token)
    end
    return nil
end
-- Gives the lock to the token, with its holder details kept beside the grant (KEYS[5]).
local function take(token, lease, details)
    local fence = redis.call('INCR', KEYS[2])
    redis.call('SET', KEYS[1], fence .. ':' .. token, 'PX', lease)
    if details and details ~= '' then
        redis.call('SET', KEYS[5], fence .. ':' .. clock() .. ':' .. details)
    end
    return fence
end
-- Hands the lock to the oldest waiter whose place is live (lapsed ones ahead of it leave), and
-- publishes the grant on its route; false if nobody waits.
local function hand_over(name)
    while queued do
        local token = redis.call('LPOP', KEYS[3])
        if not token then
            return false
        end
        local lease, route, details = live(place_of(token))
        redis.call('HDEL', KEYS[4], token)
        if lease then
            local fence = take(token, lease, details)
            redis.call('PUBLISH', route, fence .. ':' .. string.len(name) .. ':' .. name .. token)
            return true
        end
    end
    return false
end
";

/// `ARGV[1]` token, `ARGV[2]` lease ms, `ARGV[3]` wait ms, `ARGV[4]` route, `ARGV[5]` name,
/// `ARGV[6]` holder details ('' for none: kept with the place and beside its grant). Takes or
/// renews like grelmicro's acquire unless a live waiter of another token is ahead; else keeps
/// the token's place (a lapsed one goes to the back) and answers nil (or the placeholder, if a
/// revocation's holds the lock: [`crate::revoke`]).
const ACQUIRE: &str = r"
if stored then
    if holding == ARGV[1] then
        redis.call('PEXPIRE', KEYS[1], ARGV[2])
        leave(ARGV[1])
        return fence
    end
else
    local first = head()
    if not first or first == ARGV[1] then
        leave(ARGV[1])
        return take(ARGV[1], ARGV[2], ARGV[6])
    end
    hand_over(ARGV[5])
end
local wait = tonumber(ARGV[3])
local kept = place_of(ARGV[1])
-- (a renewed place keeps its turn, and when it was first taken)
local _, _, _, since = live(kept)
local place = (clock() + wait) .. ':' .. ARGV[2] .. ':' .. ARGV[4] .. '\n' .. (since or clock()) .. '\n' .. ARGV[6]
if not since then
    if not queued then
        -- No list: any place left (its key outlived the list's) lapsed with it.
        redis.call('DEL', KEYS[4])
    elseif kept then
        redis.call('LREM', KEYS[3], 1, ARGV[1])
    end
    redis.call('RPUSH', KEYS[3], ARGV[1])
end
redis.call('HSET', KEYS[4], ARGV[1], place)
-- The list and the hash are made, emptied and given their expiry together.
if redis.call('PTTL', KEYS[3]) < wait then
    redis.call('PEXPIRE', KEYS[3], wait)
    redis.call('PEXPIRE', KEYS[4], wait)
end
-- (a refusal by a revocation's placeholder answers the placeholder)
if holding and string.sub(holding, 1, 15) == 'tenure-revoked:' then
    return holding
end
return nil
";

/// `ARGV[1]` token, `ARGV[2]` release channel, `ARGV[3]` name. Frees the lock if the token
/// holds it (1), takes the token out of the queue, then hands a free lock to the oldest
/// live waiter (the key is set for it at once) or, with nobody queued, deletes the key and
/// publishes the release for waiters that poll.
const RELEASE: &str = r"
local released = 0
if stored then
    if holding ~= ARGV[1] then
        leave(ARGV[1])
        return 0
    end
    released = 1
end
-- (A holder has a place only if it took the lock with a plain acquire after queueing.)
leave(ARGV[1])
if hand_over(ARGV[3]) then
    return released
end
if released == 1 then
    redis.call('DEL', KEYS[1])
    redis.call('PUBLISH', ARGV[2], '')
end
return released
";

/// The queued acquire's script.
pub(crate) fn acquire_script() -> String {
    format!("{}{PRELUDE}{ACQUIRE}", crate::scripts::HOLDER)
}

/// The lock release's script (it hands over to the queue).
pub(crate) fn release_script() -> String {
    format!("{}{PRELUDE}{RELEASE}", crate::scripts::HOLDER)
}
