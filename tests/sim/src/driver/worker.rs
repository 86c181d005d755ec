//! The workers of a driver run and what the checker knows of them: who believes it holds what,
//! the fencing tokens seen, and the fenced resource.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tenure::{Error, KeepAlive, Lock, LockGuard, Runtime, TaskLock, TaskLockGuard};
use tenure_core::{FencingToken, Timestamp};

use super::runtime::SimRuntime;
use super::store::{Connection, Store};
use crate::check::Coverage;
use crate::profile::ms;
use crate::rand::Stream;

/// The shape of one seed's run.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub(crate) workers: usize,
    pub(crate) names: usize,
    pub(crate) rounds: u64,
    pub(crate) lease: u64,
    pub(crate) backend_timeout: u64,
    pub(crate) retry: u64,
}

impl Plan {
    pub(crate) fn draw(rng: &mut Stream) -> Self {
        let lease = rng.between(ms(60), ms(400));
        Self {
            workers: rng.between(2, 4) as usize,
            names: rng.between(1, 2) as usize,
            rounds: rng.between(6, 14),
            lease,
            backend_timeout: rng.between(ms(10), lease / 3),
            retry: rng.between(ms(2), ms(40)),
        }
    }
}

/// A belief the checker watches: true while its holder may act as the owner of `key`.
type Believes = Box<dyn Fn() -> bool + Send>;

/// What the checker knows.
pub(crate) struct World {
    beliefs: BTreeMap<u64, (String, usize, Believes)>,
    next_belief: u64,
    /// The highest fencing token seen on each key, and who acquired under it.
    fences: BTreeMap<String, (u64, usize)>,
    /// The fenced resource of each key: the highest token written, and who wrote under it.
    resource: BTreeMap<String, (u64, usize)>,
    pub(crate) coverage: Coverage,
    pub(crate) finished: usize,
    trace: u64,
    print: bool,
    failure: Option<String>,
}

impl World {
    pub(crate) fn new(print: bool) -> Self {
        Self {
            beliefs: BTreeMap::new(),
            next_belief: 0,
            fences: BTreeMap::new(),
            resource: BTreeMap::new(),
            coverage: Coverage::default(),
            finished: 0,
            trace: 0xcbf2_9ce4_8422_2325,
            print,
            failure: None,
        }
    }

    /// The hash of every event so far.
    pub(crate) fn trace(&self) -> u64 {
        self.trace
    }

    fn event(&mut self, now: Timestamp, worker: usize, what: &str) {
        let line = format!("{} w{worker} {what}", now.as_nanos());
        if self.print {
            #[allow(clippy::print_stdout)]
            {
                println!("{:>12.3} ms  w{worker}  {what}", now.as_nanos() as f64 / 1e6);
            }
        }
        for byte in line.bytes().chain(std::iter::once(b'\n')) {
            self.trace = (self.trace ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    /// Every rule that must hold at `now`; the first broken one.
    pub(crate) fn check(&self, now: u64) -> Result<(), String> {
        if let Some(failure) = &self.failure {
            return Err(failure.clone());
        }
        let mut believing: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (key, worker, believes) in self.beliefs.values() {
            if believes() {
                believing.entry(key).or_default().push(*worker);
            }
        }
        match believing.into_iter().find(|(_, workers)| workers.len() > 1) {
            Some((key, workers)) => Err(format!("workers {workers:?} all believe they hold {key} at {now} ns")),
            None => Ok(()),
        }
    }

    fn believe(&mut self, key: &str, worker: usize, believes: Believes) -> u64 {
        self.next_belief += 1;
        self.beliefs.insert(self.next_belief, (key.to_owned(), worker, believes));
        self.next_belief
    }

    fn forget(&mut self, belief: u64) {
        self.beliefs.remove(&belief);
    }

    /// A new acquisition of `key` under `fence` by `worker`: above every token seen on the key —
    /// or, for a task lock, the token of the same instance's previous run, whose hold-over lease
    /// (kept until the min hold ends, under the same ownership token) the new run renews.
    fn acquired(&mut self, key: &str, worker: usize, fence: FencingToken) {
        self.coverage.acquisitions += 1;
        let (seen, by) = self.fences.entry(key.to_owned()).or_insert((0, worker));
        let renewed_hold_over = key.starts_with("tasklock:") && fence.get() == *seen && *by == worker;
        if fence.get() <= *seen && !renewed_hold_over && self.failure.is_none() {
            self.failure = Some(format!("{key} acquired under fencing token {fence} after {seen} was seen"));
        }
        if fence.get() >= *seen {
            (*seen, *by) = (fence.get(), worker);
        }
    }

    /// A write to `key`'s resource under `fence`, by a holder who believes it holds the key.
    fn write(&mut self, key: &str, worker: usize, fence: FencingToken) {
        self.coverage.writes += 1;
        let (highest, writer) = self.resource.entry(key.to_owned()).or_insert((0, worker));
        if fence.get() < *highest {
            self.coverage.stale_rejected += 1;
        } else if fence.get() == *highest && *writer != worker && self.failure.is_none() {
            self.failure = Some(format!("workers {} and {worker} both wrote to {key} under token {fence}", *writer));
        } else {
            (*highest, *writer) = (fence.get(), worker);
        }
    }
}

/// One worker's view.
struct Worker {
    id: usize,
    rt: SimRuntime,
    world: Arc<Mutex<World>>,
    rng: Stream,
    plan: Plan,
}

impl Worker {
    fn world(&self) -> MutexGuard<'_, World> {
        self.world.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn event(&self, what: &str) {
        let now = self.rt.now();
        self.world().event(now, self.id, what);
    }

    async fn sleep(&mut self, low: u64, high: u64) {
        let pause = self.rng.between(low, high);
        self.rt.sleep_until(self.rt.now() + Duration::from_nanos(pause)).await;
    }

    /// How an acquire or enter that did not succeed went, for the trace and coverage.
    fn refused(&self, what: &str, e: &Error) {
        if e.is_would_block() {
            self.world().coverage.contention += 1;
        }
        self.event(&format!("{what} failed: {}", e.code()));
    }

    /// `command`, a one-shot call (no waiting for the lock), which must end within a few
    /// backend timeouts: its own call, a call of the command before it on the same holder, and
    /// what an earlier command left — never behind a store call the machine gave up on.
    async fn prompt<T>(&self, what: &str, command: impl Future<Output = T>) -> T {
        let started = self.rt.now();
        let out = command.await;
        let took = self.rt.now().saturating_duration_since(started);
        let bound = Duration::from_nanos(4 * self.plan.backend_timeout + ms(50));
        if took > bound {
            let mut world = self.world();
            if world.failure.is_none() {
                world.failure = Some(format!("{what} by worker {} took {took:?} (bound {bound:?})", self.id));
            }
        }
        out
    }

    /// `command`, or `None` if the worker gives up on it after a drawn pause (its future is
    /// dropped mid-call: the driver abandons it and finishes in the background).
    async fn or_give_up<T>(&mut self, what: &str, command: impl Future<Output = T> + Send) -> Option<T> {
        let patience = Duration::from_nanos(self.rng.between(ms(1), self.plan.lease));
        let out = self.rt.timeout_at(self.rt.now() + patience, command).await;
        if out.is_none() {
            self.world().coverage.abandoned += 1;
            self.event(&format!("gave up on {what}"));
        }
        out
    }

    /// Holds `guard` for a while, writing under its token while it may, then lets go.
    async fn hold(&mut self, mut guard: LockGuard<SimRuntime>, key: &str) {
        let fence = guard.fencing_token();
        self.world().acquired(key, self.id, fence);
        self.event(&format!("acquired {key} under {fence}"));
        let holder = guard.holder().clone();
        let belief = self.world().believe(key, self.id, Box::new(move || holder.is_held()));
        for _ in 0..self.rng.between(1, 4) {
            self.sleep(0, self.plan.lease / 2).await;
            if guard.is_valid() {
                self.world().write(key, self.id, guard.fencing_token());
            }
            if self.rng.chance(0.3) {
                let extended = self.prompt("an extend", async { guard.extend().await.map(|h| h.fencing_token) }).await;
                self.event(&format!("extend {key}: {}", outcome(&extended.map(|f| f.get()))));
            }
        }
        match self.rng.between(0, 2) {
            0 => {
                drop(guard);
                self.event(&format!("dropped the guard of {key}"));
            }
            1 => {
                let released = self.or_give_up("a release", guard.release()).await;
                self.event(&format!("release {key}: {}", released.map_or("abandoned".into(), |r| outcome(&r))));
            }
            _ => {
                let released = self.prompt("a release", guard.release()).await;
                self.event(&format!("release {key}: {}", outcome(&released)));
            }
        }
        self.world().forget(belief);
    }

    /// Keeps `guard`'s lease alive past its lease, writing while it is valid.
    async fn keep(&mut self, guard: LockGuard<SimRuntime>, key: &str) {
        let fence = guard.fencing_token();
        self.world().acquired(key, self.id, fence);
        self.world().coverage.kept += 1;
        let max_hold = Duration::from_nanos(self.rng.between(self.plan.lease / 2, 4 * self.plan.lease));
        let kept: KeepAlive<LockGuard<SimRuntime>> = guard.keep_alive(max_hold);
        self.event(&format!("keeping {key} under {fence} for at most {} ms", max_hold.as_millis()));
        let holder = kept.guard().holder().clone();
        let belief = self.world().believe(key, self.id, Box::new(move || holder.is_held()));
        for _ in 0..self.rng.between(1, 6) {
            self.sleep(0, self.plan.lease).await;
            if kept.is_valid() {
                self.world().write(key, self.id, kept.fencing_token());
            }
        }
        self.event(&format!("kept {key}: {:?}", kept.ended()));
        if self.rng.chance(0.5) {
            drop(kept);
        } else {
            let released = self.prompt("a release", kept.stop().release()).await;
            self.event(&format!("release {key}: {}", outcome(&released)));
        }
        self.world().forget(belief);
    }

    /// Runs the job once if the task lock can be taken.
    async fn job(&mut self, task: &TaskLock<SimRuntime>) {
        let key = "tasklock:job";
        let guard: TaskLockGuard<SimRuntime> = match self.prompt("an enter", task.enter()).await {
            Ok(guard) => guard,
            Err(e) => return self.refused("enter", &e),
        };
        let fence = guard.fencing_token();
        self.world().acquired(key, self.id, fence);
        self.world().coverage.bodies += 1;
        self.event(&format!("entered {key} under {fence}"));
        let run = task.clone();
        let belief = self.world().believe(key, self.id, Box::new(move || run.is_held()));
        self.sleep(0, self.plan.lease / 2).await;
        if guard.is_valid() {
            self.world().write(key, self.id, fence);
        }
        if self.rng.chance(0.3) {
            drop(guard);
            self.event(&format!("dropped the run of {key}"));
        } else {
            let exited = self.prompt("an exit", guard.exit()).await;
            self.event(&format!("exit {key}: {}", outcome(&exited)));
        }
        self.world().forget(belief);
    }

    async fn run(mut self, locks: Vec<Lock<SimRuntime>>, task: TaskLock<SimRuntime>) {
        for _ in 0..self.plan.rounds {
            let n = self.rng.between(0, locks.len() as u64 - 1) as usize;
            let (lock, key) = (locks[n].clone(), format!("lock:name{n}"));
            match self.rng.between(0, 9) {
                0..=2 => match lock.acquire().await {
                    Ok(guard) => self.hold(guard, &key).await,
                    Err(e) => self.refused("acquire", &e),
                },
                3 => {
                    let timeout = Duration::from_nanos(self.rng.between(0, 2 * self.plan.lease));
                    match lock.acquire_timeout(timeout).await {
                        Ok(guard) => self.hold(guard, &key).await,
                        Err(e) => self.refused("acquire_timeout", &e),
                    }
                }
                4 => match self.prompt("a one-shot acquire", lock.acquire_nowait()).await {
                    Ok(guard) => self.hold(guard, &key).await,
                    Err(e) => self.refused("acquire_nowait", &e),
                },
                5 | 6 => match self.or_give_up("an acquire", lock.acquire()).await {
                    Some(Ok(guard)) => self.hold(guard, &key).await,
                    Some(Err(e)) => self.refused("acquire", &e),
                    None => {}
                },
                7 => match lock.acquire().await {
                    Ok(guard) => self.keep(guard, &key).await,
                    Err(e) => self.refused("acquire", &e),
                },
                _ => self.job(&task).await,
            }
            self.sleep(0, self.plan.lease).await;
        }
        self.event("done");
        self.world().finished += 1;
    }
}

/// Starts worker `id` on its own connection to the store.
pub(crate) fn spawn(
    rt: &SimRuntime,
    store: &Arc<Mutex<Store>>,
    world: &Arc<Mutex<World>>,
    plan: &Plan,
    id: usize,
    rng: Stream,
) {
    let connection = Connection::new(rt, store);
    let (lease, timeout, retry) = (
        Duration::from_nanos(plan.lease),
        Duration::from_nanos(plan.backend_timeout),
        Duration::from_nanos(plan.retry),
    );
    let locks = (0..plan.names)
        .map(|n| {
            Lock::builder(&format!("name{n}"), rt.clone())
                .backend(connection.clone())
                .lease_duration(lease)
                .backend_timeout(timeout)
                .retry_interval(retry)
                .env_load(false)
                .build()
        })
        .collect::<Result<Vec<_>, _>>();
    let task = TaskLock::builder("job", rt.clone())
        .backend(connection)
        .lease_duration(lease)
        .min_hold_duration(lease / 4)
        .backend_timeout(timeout)
        .env_load(false)
        .build();
    let (Ok(locks), Ok(task)) = (locks, task) else {
        world.lock().unwrap_or_else(PoisonError::into_inner).failure = Some("a worker's locks were refused".into());
        return;
    };
    let worker = Worker { id, rt: rt.clone(), world: world.clone(), rng, plan: plan.clone() };
    rt.spawn(worker.run(locks, task));
}

/// Once every worker has finished — after the faults settled (the last call they delayed has
/// reached the store) and a lease later, so no lease from the faulty time is left — and a few
/// round trips have passed, no lock may still be held:
/// what was let go (dropped guards, acquires and releases given up mid-call) was finished.
pub(crate) async fn all_let_go(rt: SimRuntime, store: Arc<Mutex<Store>>, world: Arc<Mutex<World>>, plan: Plan) {
    let tick = Duration::from_millis(5);
    while world.lock().unwrap_or_else(PoisonError::into_inner).finished < plan.workers {
        rt.sleep_until(rt.now() + tick).await;
    }
    let quiet_since = store.lock().unwrap_or_else(PoisonError::into_inner).faults_settled() + plan.lease;
    if rt.now().as_nanos() < quiet_since {
        return;
    }
    let round_trips = Duration::from_nanos(4 * (plan.backend_timeout + ms(10)));
    rt.sleep_until(rt.now() + round_trips).await;
    let now = rt.now();
    let held: Vec<String> = (0..plan.names)
        .map(|n| format!("lock:name{n}"))
        .filter(|key| store.lock().unwrap_or_else(PoisonError::into_inner).locked(key, now))
        .collect();
    let mut world = world.lock().unwrap_or_else(PoisonError::into_inner);
    world.coverage.let_go += 1;
    if !held.is_empty() && world.failure.is_none() {
        world.failure = Some(format!("{held:?} still held {round_trips:?} after every holder let go"));
    }
}

fn outcome<T: std::fmt::Debug>(result: &Result<T, Error>) -> String {
    match result {
        Ok(value) => format!("ok {value:?}"),
        Err(e) => e.code().to_owned(),
    }
}
