//! The in-process backend: the core's store model behind a mutex.

use std::future::ready;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tenure_core::{BackendError, FencingToken, StoreModel, StoreOp, StoreReply, Timestamp, WallTime};

use super::{
    BackendFuture, HolderInfo, LeaderElectionBackend, LockBackend, LockState, ReadWriteLockBackend, ReleaseSignals,
    ScheduleBackend, SemaphoreBackend, Wakeup,
};

/// Locks, read-write locks, semaphores, leader elections and schedules for the tasks and threads
/// of **one process** (grelmicro's scope `process`), usable from any runtime and from plain
/// threads.
///
/// It is exactly the reference model of [`tenure_core::StoreModel`], judged by the monotonic
/// clock (leader records show calendar times taken from the system clock at creation). Every
/// call completes at once; a release wakes waiters on the same name at once. Fencing counters
/// live as long as the backend (grelmicro's memory adapter resets them on close). Clones share
/// the same store.
#[derive(Clone)]
pub struct MemoryBackend {
    shared: Arc<Shared>,
}

struct Shared {
    model: Mutex<StoreModel>,
    epoch: Instant,
    released: ReleaseSignals,
}

impl MemoryBackend {
    /// An empty store.
    pub fn new() -> Self {
        let epoch = Instant::now();
        let since_unix = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
        let wall = WallTime::from_unix_micros(i64::try_from(since_unix.as_micros()).unwrap_or(i64::MAX));
        let model = Mutex::new(StoreModel::new(wall));
        Self { shared: Arc::new(Shared { model, epoch, released: ReleaseSignals::new() }) }
    }

    /// Runs `op` now, from any thread, and wakes waiters when it released something.
    pub fn apply(&self, op: &StoreOp) -> StoreReply {
        let reply = {
            let mut model = self.model();
            // Read the clock under the mutex, so that operations are judged in the order they run.
            model.apply(op, self.now())
        };
        // What may let a waiter in: a release, a reader or writer going, a writer's intent
        // withdrawn, a writer turned reader (readers wait on it), a permit given back or a place
        // in line left.
        match (op, &reply) {
            (
                StoreOp::LockRelease { key, .. }
                | StoreOp::LeaderRelease { key, .. }
                | StoreOp::RwReleaseRead { key, .. }
                | StoreOp::RwReleaseWrite { key, .. }
                | StoreOp::RwCancelIntent { key, .. },
                StoreReply::Flag(true),
            )
            | (StoreOp::RwDowngrade { key, .. }, StoreReply::Fence(Some(_)))
            // A waiter leaving the line lets those behind it in too.
            | (StoreOp::SemRelease { key, .. }, _) => self.notify(key.as_str()),
            _ => {}
        }
        reply
    }

    /// How many lock names the store remembers (held or not; fencing counters keep names).
    pub fn lock_names(&self) -> usize {
        self.model().lock_names()
    }

    /// The last fencing token issued for the lock key `name` (`lock:cart`), if any.
    pub fn last_fence(&self, name: &str) -> Option<FencingToken> {
        self.model().last_fence(name)
    }

    /// Vacates expired lock leases, keeping fencing counters (the SQL backends' cleanup).
    pub fn vacate_expired(&self) {
        let mut model = self.model();
        let now = self.now();
        model.vacate_expired(now);
    }

    fn model(&self) -> MutexGuard<'_, StoreModel> {
        // The model never panics mid-update; a poisoned lock still holds a consistent model.
        self.shared.model.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn now(&self) -> Timestamp {
        let elapsed = self.shared.epoch.elapsed();
        Timestamp::from_nanos(u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX))
    }

    fn notify(&self, name: &str) {
        self.shared.released.ring(name);
    }

    fn listen(&self, name: &str) -> Option<Wakeup> {
        Some(self.shared.released.ticket(name))
    }

    fn run(&self, op: &StoreOp) -> BackendFuture<'static, StoreReply> {
        Box::pin(ready(Ok(self.apply(op))))
    }
}

impl Default for MemoryBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for MemoryBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryBackend").field("lock_names", &self.lock_names()).finish_non_exhaustive()
    }
}

/// The memory backend answers every operation at once, from the model.
macro_rules! answered_at_once {
    ($backend:ident { $($more:item)* }) => {
        impl $backend for MemoryBackend {
            $($more)*

            fn execute(&self, op: StoreOp) -> BackendFuture<'static, StoreReply> {
                self.run(&op)
            }

            fn wakeup(&self, name: &str) -> Option<Wakeup> {
                self.listen(name)
            }

            fn answer_now(&self, op: &StoreOp) -> Option<Result<StoreReply, BackendError>> {
                Some(Ok(self.apply(op)))
            }
        }
    };
}

answered_at_once!(LockBackend {
    fn lock_state(&self, key: &str) -> Option<BackendFuture<'static, Option<LockState>>> {
        let (model, now) = (self.model(), self.now());
        let state = model.last_fence(key).map(|fence| {
            let lease = model.lock_lease(key, now);
            let details = model.lock_details(key, now).and_then(|kept| {
                HolderInfo::parse(kept.details.as_str(), model.wall_time(kept.granted_at))
            });
            LockState {
                key: key.to_owned(),
                fence: Some(fence),
                holder: lease.map(|l| l.token.as_str().to_owned()),
                expires_at: lease.map(|l| model.wall_time(l.expires_at)),
                details,
                // (a lock's waiters here are woken by each release: none keeps a place, so there
                // is no line to list)
                waiting: None,
            }
        });
        Some(Box::pin(ready(Ok(state))))
    }

    fn read_write(&self) -> Option<Arc<dyn ReadWriteLockBackend>> {
        Some(Arc::new(self.clone()))
    }

    fn semaphore(&self) -> Option<Arc<dyn SemaphoreBackend>> {
        Some(Arc::new(self.clone()))
    }
});
answered_at_once!(LeaderElectionBackend {});
answered_at_once!(ReadWriteLockBackend {});
answered_at_once!(SemaphoreBackend {});

impl ScheduleBackend for MemoryBackend {
    fn claim<'a>(&'a self, name: &'a str, due: f64) -> BackendFuture<'a, bool> {
        Box::pin(ready(Ok(self.model().schedule_claim(name, due))))
    }

    fn last_fired<'a>(&'a self, name: &'a str) -> BackendFuture<'a, Option<f64>> {
        Box::pin(ready(Ok(self.model().schedule_last_fired(name))))
    }
}
