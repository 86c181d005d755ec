//! Queued acquires on Redis: fair turns and the hand-off inside the release script
//! ([`tenure_core::StoreModel::lock_acquire_queued`] is the reference).
//!
//! Beside grelmicro's lock key and fence key, a name has two keys of Tenure's own:
//! `queue:<name>`, a list of the waiting tokens, oldest first, and `queue-places:<name>`, a hash
//! from each token to `<expires ms>:<lease ms>:<route>` — when its place lapses (server time),
//! the lease it asked for, and the channel its grant is published on (its backend's). Both
//! expire once the longest place has lapsed.
//!
//! A refused queued acquire keeps or renews its place. A release — or a queued attempt that finds
//! the lock free behind a live waiter — hands the lock to the oldest waiter whose place is live:
//! it takes the next fence, sets the lock key for that waiter's token with its lease, and
//! publishes `<fence>:<name length>:<name><token>` on the waiter's route. grelmicro's scripts
//! never look at the queue: a grelmicro process may take a free lock ahead of it, never one
//! handed over (the lock key is set), and after its release the queue's head takes the lock at
//! its next attempt.

/// What every queue script starts with: helpers, and the lock's holder read (a value not in
/// grelmicro's layout ends the script with an error). `KEYS[1]` lock key, `KEYS[2]` fence key,
/// `KEYS[3]` queue, `KEYS[4]` places.
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
-- A live place's lease and route; nil if it lapsed, cannot be read, or there is no queue.
local function place_of(token)
    if not queued then
        return nil
    end
    local place = redis.call('HGET', KEYS[4], token)
    if not place then
        return nil
    end
    local expires, lease, route = string.match(place, '^(%d+):(%d+):(.+)$')
    if not expires or tonumber(expires) < clock() then
        return nil
    end
    return lease, route
end
local function leave(token)
    if redis.call('HDEL', KEYS[4], token) == 1 then
        redis.call('LREM', KEYS[3], 1, token)
    end
end
-- The oldest waiter whose place is live (lapsed ones ahead of it leave), with its lease and route.
local function head()
    while queued do
        local token = redis.call('LINDEX', KEYS[3], 0)
        if not token then
            return nil
        end
        local lease, route = place_of(token)
        if lease then
            return token, lease, route
        end
        redis.call('LPOP', KEYS[3])
        redis.call('HDEL', KEYS[4], token)
    end
    return nil
end
local function take(token, lease)
    local fence = redis.call('INCR', KEYS[2])
    redis.call('SET', KEYS[1], fence .. ':' .. token, 'PX', lease)
    return fence
end
local function hand_over(name)
    local token, lease, route = head()
    if not token then
        return false
    end
    redis.call('LPOP', KEYS[3])
    redis.call('HDEL', KEYS[4], token)
    local fence = take(token, lease)
    redis.call('PUBLISH', route, fence .. ':' .. string.len(name) .. ':' .. name .. token)
    return true
end
-- The lock's holder: `stored` (nil when free), its `fence` and `holding` token.
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

/// `ARGV[1]` token, `ARGV[2]` lease ms, `ARGV[3]` wait ms, `ARGV[4]` route, `ARGV[5]` name.
/// Takes or renews like grelmicro's acquire unless a live waiter of another token is ahead;
/// else keeps the token's place (a lapsed one goes to the back) and answers nil.
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
        return take(ARGV[1], ARGV[2])
    end
    hand_over(ARGV[5])
end
local wait = tonumber(ARGV[3])
local place = (clock() + wait) .. ':' .. ARGV[2] .. ':' .. ARGV[4]
if place_of(ARGV[1]) then
    redis.call('HSET', KEYS[4], ARGV[1], place)
else
    if not queued then
        -- No list: any place left (its key outlived the list's) lapsed with it.
        redis.call('DEL', KEYS[4])
    end
    leave(ARGV[1])
    redis.call('HSET', KEYS[4], ARGV[1], place)
    redis.call('RPUSH', KEYS[3], ARGV[1])
end
for _, key in ipairs({KEYS[3], KEYS[4]}) do
    if redis.call('PTTL', key) < wait then
        redis.call('PEXPIRE', key, wait)
    end
end
return nil
";

/// `ARGV[1]` token, `ARGV[2]` release channel, `ARGV[3]` name. Frees the lock if the token
/// holds it (1), takes the token out of the queue, then hands a free lock to the oldest live
/// waiter — or, with nobody queued, publishes the release for waiters that poll.
const RELEASE: &str = r"
local released = 0
if stored then
    if holding ~= ARGV[1] then
        leave(ARGV[1])
        return 0
    end
    redis.call('DEL', KEYS[1])
    released = 1
end
leave(ARGV[1])
if not hand_over(ARGV[3]) and released == 1 then
    redis.call('PUBLISH', ARGV[2], '')
end
return released
";

/// The queued acquire's script.
pub(crate) fn acquire_script() -> String {
    format!("{PRELUDE}{ACQUIRE}")
}

/// The lock release's script (it hands over to the queue).
pub(crate) fn release_script() -> String {
    format!("{PRELUDE}{RELEASE}")
}
