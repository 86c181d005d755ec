//! `min_replicas`: a grant, renewal or fence increment is confirmed by `WAIT` before anyone is
//! told of it.
//!
//! The write and its `WAIT n timeout` go out in one pipeline on one connection, so they cost one
//! round trip plus the replicas' acknowledgement, and `WAIT` covers the write (it waits for every
//! write the connection made before it). A grant also reads first, in the same pipeline, what
//! tells a new grant from a renewal — the lock key; a reader's, writer's or permit's lease beside
//! the server's clock; an election's record says it itself. A new grant fewer replicas confirm is
//! given back; a renewal is only reported as failed (giving it back would free a lease its holder
//! still believes it holds).
//!
//! `WAIT` blocks the connection it runs on until it answers, and every request multiplexed
//! behind it waits too: with a replica down, each grant holds the connection up to
//! `replica_timeout`.

use std::future::Future;
use std::time::Duration;

use redis::{Cmd, FromRedisValue, RedisResult, ScriptInvocation, ServerErrorKind, Value};
use tenure_core::{BackendError, BackendErrorKind};

use crate::RedisBackend;
use crate::connection::Connection;

/// How many replicas must acknowledge a grant, and how long `WAIT` may take.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Confirm {
    pub(crate) replicas: u32,
    pub(crate) timeout: Duration,
}

/// What a confirmed write answered.
pub(crate) struct Confirmed<T> {
    /// The answers of the reads made before the write.
    pub(crate) before: Vec<Value>,
    /// The script's answer.
    pub(crate) answer: T,
    /// How many replicas acknowledged it in time.
    pub(crate) acknowledged: i64,
}

impl Confirm {
    /// Runs `before`, then `script`, then `WAIT`, in one pipeline; loads the script and runs
    /// them again if the server did not have it.
    pub(crate) async fn run<T: FromRedisValue>(
        &self,
        con: &mut Connection,
        before: Vec<Cmd>,
        script: &ScriptInvocation<'_>,
    ) -> RedisResult<Confirmed<T>> {
        let mut pipe = redis::pipe();
        let reads = before.len();
        for cmd in before {
            pipe.add_command(cmd);
        }
        pipe.invoke_script(script);
        let millis = u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX).max(1);
        pipe.cmd("WAIT").arg(self.replicas).arg(millis);
        let replies: Vec<Value> = match pipe.query_async(con).await {
            Err(e) if e.kind() == redis::ErrorKind::Server(ServerErrorKind::NoScript) => {
                script.load_async(con).await?;
                pipe.query_async(con).await?
            }
            other => other?,
        };
        let mut replies = replies.into_iter();
        let before: Vec<Value> = replies.by_ref().take(reads).collect();
        let answer = T::from_redis_value(replies.next().unwrap_or(Value::Nil))?;
        let acknowledged = i64::from_redis_value(replies.next().unwrap_or(Value::Nil))?;
        Ok(Confirmed { before, answer, acknowledged })
    }

    /// Whether `acknowledged` replicas are enough.
    pub(crate) fn met(&self, acknowledged: i64) -> bool {
        acknowledged >= i64::from(self.replicas)
    }

    /// The error of a grant fewer replicas confirmed: `what` on `name`, and what became of it.
    pub(crate) fn unconfirmed(&self, what: &str, name: &str, acknowledged: i64, outcome: &str) -> BackendError {
        BackendError::new(
            BackendErrorKind::Unavailable,
            format!(
                "{what} of {name:?}: {acknowledged} of the {} replicas min_replicas asks for acknowledged it within \
                 {:?}; {outcome}",
                self.replicas, self.timeout
            ),
        )
    }
}

/// What a renewal left unconfirmed becomes.
pub(crate) const RENEWAL: &str = "the renewal is not counted (the lease runs to its end)";

/// How a grant is told apart and taken back when replicas do not confirm it.
pub(crate) struct Grant<'a, T, B, K, G> {
    /// The call, as errors name it (`lock acquire`).
    pub(crate) what: &'a str,
    pub(crate) name: &'a str,
    /// Reads made in the same pipeline before the write, for `kept` (built only when grants
    /// wait for replicas).
    pub(crate) before: B,
    /// Whether the answer is a grant (a refusal needs no confirmation).
    pub(crate) granted: fn(&T, &str) -> bool,
    /// `Some(outcome)` for a grant that must not be given back — a renewal, told from the read
    /// before and the answer — else `None`.
    pub(crate) kept: K,
    /// Gives a new grant back.
    pub(crate) give_back: G,
}

impl RedisBackend {
    /// Runs the grant `script` on `con`: as it is, or — with `min_replicas` — with its `WAIT` in
    /// the same round trip, and an unconfirmed grant is an error (given back unless `kept`).
    pub(crate) async fn grant<T, B, K, G, F>(
        &self,
        con: &mut Connection,
        script: &ScriptInvocation<'_>,
        token: &str,
        grant: Grant<'_, T, B, K, G>,
    ) -> Result<T, BackendError>
    where
        T: FromRedisValue,
        B: FnOnce() -> Vec<Cmd>,
        K: FnOnce(&[Value], &T) -> Option<&'static str>,
        G: FnOnce() -> F,
        F: Future<Output = Result<bool, BackendError>>,
    {
        let Grant { what, name, before, granted, kept, give_back } = grant;
        let fail = |e: redis::RedisError| crate::error(what, name, &e);
        let Some(confirm) = self.inner.confirm else {
            return script.invoke_async(con).await.map_err(fail);
        };
        let done = confirm.run::<T>(con, before(), script).await.map_err(fail)?;
        if !granted(&done.answer, token) || confirm.met(done.acknowledged) {
            return Ok(done.answer);
        }
        let outcome = match kept(&done.before, &done.answer) {
            Some(outcome) => outcome,
            None => match give_back().await {
                Ok(true) => "the grant was given back",
                Ok(false) => "the grant had already ended when it was given back",
                Err(_) => "the grant could not be given back and runs out with its lease",
            },
        };
        Err(confirm.unconfirmed(what, name, done.acknowledged, outcome))
    }
}

/// The reads that tell a live member of a sorted set scored by the end of its lease (server
/// ms): the server's clock, and the member's score.
pub(crate) fn member_reads(key: String, member: &str) -> Vec<Cmd> {
    vec![redis::cmd("TIME"), redis::cmd("ZSCORE").arg(key).arg(member).clone()]
}

/// Whether [`member_reads`] found the member live: its lease ends after the server's present
/// (`through_end`: or at it — a semaphore's lease is live through its end).
pub(crate) fn live_member(before: &[Value], through_end: bool) -> bool {
    let (Some(now), Some(end)) = (before.first().and_then(now_ms), before.get(1).and_then(score)) else {
        return false;
    };
    #[allow(clippy::cast_precision_loss)]
    let now = now as f64;
    end > now || (through_end && end >= now)
}

/// The server's clock in ms, from a `TIME` reply.
pub(crate) fn now_ms(time: &Value) -> Option<i64> {
    let (seconds, micros): (i64, i64) = redis::from_redis_value_ref(time).ok()?;
    Some(seconds * 1000 + micros / 1000)
}

fn score(value: &Value) -> Option<f64> {
    redis::from_redis_value_ref::<Option<f64>>(value).ok().flatten()
}
