//! Store calls, timed where every machine's calls go through (the `Execute` of locks and of
//! elections), by operation and outcome.

use std::time::Instant;

use tenure_core::{BackendError, StoreOp, StoreReply};

use super::instruments::STORE_CALL_DURATION;
use super::{Value, enabled, record};
use crate::drive::Reply;

/// `reply`, recording its latency and outcome when it completes.
#[inline]
pub(crate) fn timed(operation: &'static str, reply: Reply) -> Reply {
    if !enabled() {
        return reply;
    }
    let since = Instant::now();
    Box::pin(async move {
        let answer = reply.await;
        call(operation, since, &answer);
        answer
    })
}

/// The answer `answer_now` gives for `op`, recorded when there is one (a store answering at
/// once, the memory backend's).
#[inline]
pub(crate) fn answered_now(
    op: &StoreOp,
    answer_now: impl FnOnce() -> Option<Result<StoreReply, BackendError>>,
) -> Option<Result<StoreReply, BackendError>> {
    if !enabled() {
        return answer_now();
    }
    timed_now(op, answer_now)
}

/// [`answered_now`] with a sink installed (kept out of line: the common path is the check).
#[inline(never)]
fn timed_now(
    op: &StoreOp,
    answer_now: impl FnOnce() -> Option<Result<StoreReply, BackendError>>,
) -> Option<Result<StoreReply, BackendError>> {
    let since = Instant::now();
    let answer = answer_now()?;
    call(op.name(), since, &answer);
    Some(answer)
}

fn call(operation: &'static str, since: Instant, answer: &Result<StoreReply, BackendError>) {
    let outcome = match answer {
        Ok(_) => "ok",
        Err(e) => e.kind().code(),
    };
    let attributes = [("operation", Value::Static(operation)), ("outcome", Value::Static(outcome))];
    record(&STORE_CALL_DURATION, since.elapsed().as_secs_f64(), &attributes);
}
