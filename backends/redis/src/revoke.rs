//! Revoking a lock on Redis (`tenure revoke`; the semantics are the core's `store::revoke`): one
//! script takes the next fence and sets the lock key to a placeholder under it, with the revoked
//! lease's time left, so grelmicro's scripts and Tenure's refuse the revoked holder until then.
//! The acquire scripts answer a refusal by a placeholder with the placeholder, which
//! [`acquired`] reads as the core's `Revoked`.

use std::time::Duration;

use redis::Value;
use tenure::backend::refused;
use tenure_core::{BackendError, REVOKED_PREFIX, Revocation, RevokeReason, StoreReply};

use crate::{RedisBackend, error, record};

/// After [`crate::scripts::HOLDER`]: `KEYS[2]` fence key; `ARGV[1]` the reason, `ARGV[2]` the
/// placeholder prefix. Nil if no lease is live; else `{already, worker, fence, ms left, revoked fence}`:
/// a placeholder already (`already` 1: nothing changes), or the holder's worker (the token's part
/// before its first `:`, never the token) and the placeholder's new fence.
pub(crate) const LOCK_REVOKE: &str = r"
if not stored then
    return nil
end
local left = redis.call('PTTL', KEYS[1])
if left == 0 then
    return nil -- ending now
end
if left < 0 then
    -- (no expiry: not a lease grelmicro or Tenure wrote)
    return redis.error_reply('TENURE_MALFORMED ' .. KEYS[1] .. ' holds a lock without expiry')
end
local prefix = ARGV[2]
if string.sub(holding, 1, string.len(prefix)) == prefix then
    local revoked = tonumber(string.match(string.sub(holding, string.len(prefix) + 1), '^(%d+):'))
    return {1, 'tenure-revoked', fence, left, revoked or 0}
end
local next = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], next .. ':' .. prefix .. fence .. ':' .. ARGV[1], 'PX', left)
return {0, string.match(holding, '^([^:]*):') or 'unknown', next, left, fence}
";

/// An acquire script's answer: a fence, nil (refused), or the placeholder that refused it.
pub(crate) fn acquired(name: &str, answer: &Value) -> Result<StoreReply, BackendError> {
    match answer {
        Value::Int(fence) => Ok(StoreReply::Fence(Some(record::fence(name, *fence)?))),
        Value::Nil => Ok(StoreReply::Fence(None)),
        other => match redis::from_redis_value_ref::<String>(other) {
            Ok(placeholder) => Ok(refused(Some(&placeholder))),
            Err(_) => Err(tenure_store::record::malformed(format!("the acquire of {name} answered {other:?}"))),
        },
    }
}

impl RedisBackend {
    pub(crate) async fn lock_revoke(
        &self,
        name: &str,
        reason: &RevokeReason,
    ) -> Result<Option<Revocation>, BackendError> {
        let mut con = self.connection()?;
        let answer: Option<(i64, String, i64, i64, i64)> = self
            .inner
            .scripts
            .lock_revoke
            .key(self.key(name))
            .key(self.key(&format!("fence:{name}")))
            .arg(reason.as_str())
            .arg(REVOKED_PREFIX)
            .invoke_async(&mut con)
            .await
            .map_err(|e| error("lock revoke", name, &e))?;
        let Some((already, holder, fence, left, revoked)) = answer else { return Ok(None) };
        Ok(Some(Revocation {
            holder,
            revoked_fence: record::fence(name, revoked)?,
            fence: record::fence(name, fence)?,
            left: Duration::from_millis(u64::try_from(left).unwrap_or(0)),
            already: already == 1,
        }))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_acquire_scripts_know_the_placeholder_prefix() {
        let quoted = format!("'{}'", tenure_core::REVOKED_PREFIX);
        let len = tenure_core::REVOKED_PREFIX.len();
        for script in [crate::scripts::LOCK_ACQUIRE.to_owned(), crate::queue::acquire_script()] {
            assert!(script.contains(&format!("string.sub(holding, 1, {len}) == {quoted}")), "{script}");
        }
    }
}
