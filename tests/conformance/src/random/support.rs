//! What a random sequence needs beside its operations: fences compared through an order-keeping
//! map, how a store answers queued calls, and leader records compared within the clock's
//! tolerance.

use std::time::Duration;

use tenure::backend::{LeaderElectionCalls as _, LockCalls as _, ReadWriteCalls as _, SemaphoreCalls as _};
use tenure_core::{FencingToken, LeaderRecord};

use super::{LEADERS, LOCKS, Mix, RWLOCKS, SCHEDULES, SEMAPHORES, TOKENS};
use crate::{Clock, Harness};

/// The store's fences against the model's, name by name, for [`crate::Fences::Increasing`]:
/// a model fence seen before must be the store fence it was then, a new one must come with a
/// store fence above every earlier one of the name. Exact for [`crate::Fences::PerName`].
pub(super) struct FenceMap {
    fences: crate::Fences,
    /// Per name: (model fence, store fence), in the order they came.
    seen: std::collections::BTreeMap<&'static str, Vec<(u64, u64)>>,
}

impl FenceMap {
    pub(super) fn new(fences: crate::Fences) -> Self {
        Self { fences, seen: std::collections::BTreeMap::new() }
    }

    /// Whether the store's answer `got` agrees with the model's `want` for `name`.
    pub(super) fn agree(&mut self, name: &'static str, got: Option<FencingToken>, want: Option<FencingToken>) -> bool {
        let (got, want) = match (got, want) {
            (Some(got), Some(want)) => (got.get(), want.get()),
            (None, None) => return true,
            _ => return false,
        };
        if self.fences == crate::Fences::PerName {
            return got == want;
        }
        let seen = self.seen.entry(name).or_default();
        if let Some(&(_, store)) = seen.iter().find(|(model, _)| *model == want) {
            return store == got;
        }
        let above = seen.iter().all(|&(model, store)| model < want && store < got);
        seen.push((want, got));
        above
    }
}

/// How a store answers queued acquires and releases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Queue {
    /// It keeps no queue: a queued acquire is a plain one (grelmicro's calls, SQLite).
    None,
    /// It keeps one, and a release leaves the lock free for the head's next attempt (the
    /// model's plain release: the memory store).
    Kept,
    /// It keeps one, and a release hands the lock to the head (Redis, PostgreSQL).
    HandedOver,
}

/// Makes a call on every name a sequence uses, changing nothing, before its time starts — a
/// store's first call on a name may set up more than the call (PostgreSQL opens that name's
/// session, and LISTENs and compiles the queue functions at its first queued call) — and finds
/// out how the store answers queued calls, on a name of its own.
pub(super) async fn warm_up(h: &Harness, store: &crate::Store, mix: Mix) -> Queue {
    let fail = |e: tenure_core::BackendError| -> ! { panic!("{}: a warm-up call failed: {e}", h.name) };
    if mix == Mix::ReadWrite
        && let Some(rw) = &store.rw
    {
        for key in RWLOCKS {
            rw.state(key).await.unwrap_or_else(|e| fail(e));
        }
    }
    if mix == Mix::Semaphore
        && let Some(sem) = &store.sem
    {
        for key in SEMAPHORES {
            sem.state(key).await.unwrap_or_else(|e| fail(e));
        }
    }
    for key in LOCKS {
        store.lock.locked(key).await.unwrap_or_else(|e| fail(e));
    }
    for key in LEADERS {
        store.leader.get(key).await.unwrap_or_else(|e| fail(e));
    }
    for key in SCHEDULES {
        store.schedule.last_fired(key).await.unwrap_or_else(|e| fail(e));
    }
    let (name, long) = ("lock:probe", Duration::from_secs(60));
    let queued = |t: &'static str| store.lock.acquire_queued(name, t, long, long);
    assert!(store.lock.acquire(name, TOKENS[0], long).await.unwrap_or_else(|e| fail(e)).is_some());
    let first = queued(TOKENS[1]).await.unwrap_or_else(|e| fail(e));
    assert!(first.is_none(), "{}: a queued acquire of a held lock was granted", h.name);
    assert!(store.lock.release(name, TOKENS[0]).await.unwrap_or_else(|e| fail(e)));
    let queue = if store.lock.owned(name, TOKENS[1]).await.unwrap_or_else(|e| fail(e)) {
        Queue::HandedOver
    } else if queued(TOKENS[2]).await.unwrap_or_else(|e| fail(e)).is_some() {
        Queue::None
    } else {
        Queue::Kept
    };
    assert_eq!(
        store.lock.turn(name, TOKENS[2]).is_some(),
        queue == Queue::HandedOver,
        "{}: a store that hands the lock over pushes turns, and only such a store",
        h.name
    );
    queue
}

/// Whether two records agree: exactly on a manual clock; on a real one, the times only as far as
/// `renewed_at - acquired_at`, within the harness's tolerance.
pub(super) fn same_record(h: &Harness, got: &LeaderRecord, want: &LeaderRecord) -> Result<(), &'static str> {
    if (&got.holder, got.transitions, &got.metadata) != (&want.holder, want.transitions, &want.metadata) {
        return Err("holder, transitions or metadata differ");
    }
    if got.lease_duration != want.lease_duration {
        return Err("leases differ");
    }
    match h.clock {
        Clock::Manual(_) if (got.acquired_at, got.renewed_at) != (want.acquired_at, want.renewed_at) => {
            Err("times differ")
        }
        Clock::Manual(_) => Ok(()),
        Clock::Real { .. } => {
            let held = |r: &LeaderRecord| r.renewed_at.as_unix_micros() - r.acquired_at.as_unix_micros();
            let tolerance = i64::try_from(h.tolerance().as_micros()).unwrap_or(i64::MAX);
            if (held(got) - held(want)).abs() > tolerance { Err("renewed_at - acquired_at differ") } else { Ok(()) }
        }
    }
}
