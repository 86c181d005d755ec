//! Helpers of the suite: short settings, waiting on conditions, a backend that fails or freezes
//! on demand, and running blocking code on a plain thread.

use std::future::Future;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use event_listener::Event;
use tenure::{
    BackendError, BackendErrorKind, BackendFuture, LeaderElection, LeaderElectionBackend, Lock, LockBackend,
    MemoryBackend, Metadata, Runtime, StoreOp, StoreReply, TaskLock, WorkerId,
};

pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Waits until `condition` holds, checking every 2 ms; fails the test after 5 s.
pub async fn eventually<R: Runtime>(rt: &R, what: &str, mut condition: impl FnMut() -> bool) {
    let give_up = rt.now() + Duration::from_secs(5);
    while !condition() {
        assert!(rt.now() < give_up, "timed out waiting for: {what}");
        rt.sleep_until(rt.now() + ms(2)).await;
    }
}

/// Like [`eventually`] for an async condition.
pub async fn eventually_async<R: Runtime, F: Future<Output = bool>>(
    rt: &R,
    what: &str,
    mut condition: impl FnMut() -> F,
) {
    let give_up = rt.now() + Duration::from_secs(5);
    while !condition().await {
        assert!(rt.now() < give_up, "timed out waiting for: {what}");
        rt.sleep_until(rt.now() + ms(2)).await;
    }
}

/// Sleeps for `d` (only to let a lease run out, never to let a task make progress).
pub async fn sleep<R: Runtime>(rt: &R, d: Duration) {
    rt.sleep_until(rt.now() + d).await;
}

/// A lock with a short lease and fast retries, the environment ignored.
pub fn lock<R: Runtime>(rt: &R, backend: impl LockBackend, name: &str, lease: Duration) -> Lock<R> {
    lock_bounded(rt, backend, name, lease, ms(200))
}

/// [`lock`] with a backend timeout of `backend_timeout`.
pub fn lock_bounded<R: Runtime>(
    rt: &R,
    backend: impl LockBackend,
    name: &str,
    lease: Duration,
    backend_timeout: Duration,
) -> Lock<R> {
    Lock::builder(name, rt.clone())
        .backend(backend)
        .lease_duration(lease)
        .retry_interval(ms(5))
        .backend_timeout(backend_timeout)
        .env_load(false)
        .build()
        .unwrap()
}

/// A task lock with the given min hold and lease, the environment ignored.
pub fn task_lock<R: Runtime>(
    rt: &R,
    backend: impl LockBackend,
    name: &str,
    min_hold: Duration,
    lease: Duration,
) -> TaskLock<R> {
    TaskLock::builder(name, rt.clone())
        .backend(backend)
        .min_hold_duration(min_hold)
        .lease_duration(lease)
        .backend_timeout(ms(200))
        .env_load(false)
        .build()
        .unwrap()
}

/// The reference election fixture: lease 100 ms, renew deadline 70 ms, retry 5 ms, backend
/// timeout 20 ms, worker `worker`.
pub fn election<R: Runtime>(rt: &R, backend: impl LeaderElectionBackend, worker: &str) -> LeaderElection<R> {
    LeaderElection::builder("svc", rt.clone())
        .backend(backend)
        .worker(WorkerId::new(worker).unwrap())
        .lease_duration(ms(100))
        .renew_deadline(ms(70))
        .retry_interval(ms(5))
        .backend_timeout(ms(20))
        .error_interval(ms(10))
        .metadata(Metadata::from_pairs([("pod", worker)]).unwrap())
        .env_load(false)
        .build()
        .unwrap()
}

const HEALTHY: u8 = 0;
const FAILING: u8 = 1;
const FROZEN: u8 = 2;
const SLOW: u8 = 3;
const LATE: u8 = 4;

/// Sleeps for a duration on the test's runtime.
type Sleeper = Arc<dyn Fn(Duration) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// A memory backend that can be made to fail every call, to never answer, to apply and answer
/// each call only after a delay, or to apply each call at once and answer it after a delay — and
/// back.
#[derive(Clone, Default)]
pub struct Faulty {
    pub memory: MemoryBackend,
    mode: Arc<AtomicU8>,
    slow: Arc<Mutex<Option<(Duration, Sleeper)>>>,
}

impl std::fmt::Debug for Faulty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Faulty").field("mode", &self.mode.load(Ordering::SeqCst)).finish_non_exhaustive()
    }
}

impl Faulty {
    /// Every call is applied, and answered, `delay` after it is made (timed on `rt`).
    pub fn slow<R: Runtime>(&self, rt: &R, delay: Duration) {
        let rt = rt.clone();
        let sleeper: Sleeper = Arc::new(move |d| {
            let rt = rt.clone();
            Box::pin(async move { sleep(&rt, d).await })
        });
        *self.slow.lock().unwrap() = Some((delay, sleeper));
        self.mode.store(SLOW, Ordering::SeqCst);
    }

    /// Every call is applied at once and answered `delay` after it is made (timed on `rt`).
    pub fn late<R: Runtime>(&self, rt: &R, delay: Duration) {
        self.slow(rt, delay);
        self.mode.store(LATE, Ordering::SeqCst);
    }

    pub fn fail(&self) {
        self.mode.store(FAILING, Ordering::SeqCst);
    }

    pub fn freeze(&self) {
        self.mode.store(FROZEN, Ordering::SeqCst);
    }

    pub fn heal(&self) {
        self.mode.store(HEALTHY, Ordering::SeqCst);
    }

    fn run(&self, op: &StoreOp) -> BackendFuture<'static, StoreReply> {
        match self.mode.load(Ordering::SeqCst) {
            HEALTHY => {
                let reply = self.memory.apply(op);
                Box::pin(std::future::ready(Ok(reply)))
            }
            FAILING => Box::pin(std::future::ready(Err(BackendError::new(BackendErrorKind::Unavailable, "injected")))),
            SLOW => {
                let Some((delay, sleeper)) = self.slow.lock().unwrap().clone() else {
                    return Box::pin(std::future::pending());
                };
                let (memory, op) = (self.memory.clone(), op.clone());
                Box::pin(async move {
                    sleeper(delay).await;
                    Ok(memory.apply(&op))
                })
            }
            LATE => {
                let Some((delay, sleeper)) = self.slow.lock().unwrap().clone() else {
                    return Box::pin(std::future::pending());
                };
                let reply = self.memory.apply(op);
                Box::pin(async move {
                    sleeper(delay).await;
                    Ok(reply)
                })
            }
            _ => Box::pin(std::future::pending()),
        }
    }
}

/// A store that fails over ([`Promoted::fail_over`]) to a replica that missed every grant the
/// first one made: its fencing tokens start again from 1 (Redis without `min_replicas`).
#[derive(Clone, Default)]
pub struct Promoted {
    stores: [MemoryBackend; 2],
    failed_over: Arc<std::sync::atomic::AtomicBool>,
}

impl Promoted {
    pub fn fail_over(&self) {
        self.failed_over.store(true, Ordering::SeqCst);
    }
}

impl std::fmt::Debug for Promoted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Promoted").field("failed_over", &self.failed_over).finish_non_exhaustive()
    }
}

impl LockBackend for Promoted {
    fn execute(&self, op: StoreOp) -> BackendFuture<'static, StoreReply> {
        let store = &self.stores[usize::from(self.failed_over.load(Ordering::SeqCst))];
        Box::pin(std::future::ready(Ok(store.apply(&op))))
    }
}

impl LockBackend for Faulty {
    fn execute(&self, op: StoreOp) -> BackendFuture<'static, StoreReply> {
        self.run(&op)
    }
}

impl LeaderElectionBackend for Faulty {
    fn execute(&self, op: StoreOp) -> BackendFuture<'static, StoreReply> {
        self.run(&op)
    }
}

/// Runs blocking `work` on a new OS thread and awaits its result without blocking the executor;
/// a panic in `work` fails the test.
pub fn in_thread<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> impl Future<Output = T> {
    let done = Arc::new((Mutex::new(None), Event::new()));
    let signal = done.clone();
    std::thread::spawn(move || {
        let value = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
        *signal.0.lock().unwrap() = Some(value);
        signal.1.notify(usize::MAX);
    });
    async move {
        loop {
            let listener = done.1.listen();
            let finished = done.0.lock().unwrap().take();
            match finished {
                Some(Ok(value)) => return value,
                Some(Err(panic)) => std::panic::resume_unwind(panic),
                None => listener.await,
            }
        }
    }
}
