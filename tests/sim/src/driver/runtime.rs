//! A simulated [`Runtime`] for the driver: one thread, virtual time, and a seeded choice of which
//! ready task runs next, so a seed replays every interleaving.
//!
//! Tasks are polled with the executor's lock released (a task may spawn, sleep or wake others);
//! when no task is ready, time jumps to the earliest timer.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll, Wake, Waker};

use tenure::Runtime;
use tenure_core::Timestamp;

use crate::rand::Stream;

type Task = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The simulated runtime: clones share one executor.
#[derive(Clone)]
pub(crate) struct SimRuntime {
    exec: Arc<Mutex<Exec>>,
}

struct Exec {
    now: u64,
    /// Sleeping tasks by `(deadline, registration)`.
    timers: BTreeMap<(u64, u64), Waker>,
    registrations: u64,
    /// Task futures by id; `None` once done (or while being polled).
    tasks: Vec<Option<Task>>,
    /// Woken tasks, by id (an ordered set: the seeded pick among them is reproducible).
    ready: BTreeSet<usize>,
    /// Picks which ready task runs next.
    schedule: Stream,
    /// Seeds the machines' jitter.
    seeds: Stream,
}

impl std::fmt::Debug for SimRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SimRuntime")
    }
}

/// What one step of the executor did.
pub(crate) enum Step {
    /// A task was polled.
    Polled,
    /// Time moved to the next timer.
    Advanced,
    /// Nothing is ready and no timer is set.
    Idle,
}

impl SimRuntime {
    pub(crate) fn new(seed: u64) -> Self {
        let exec = Exec {
            now: 0,
            timers: BTreeMap::new(),
            registrations: 0,
            tasks: Vec::new(),
            ready: BTreeSet::new(),
            schedule: Stream::new(seed, "driver-schedule"),
            seeds: Stream::new(seed, "driver-jitter"),
        };
        Self { exec: Arc::new(Mutex::new(exec)) }
    }

    fn exec(&self) -> MutexGuard<'_, Exec> {
        self.exec.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Virtual nanoseconds since the start.
    pub(crate) fn nanos(&self) -> u64 {
        self.exec().now
    }

    /// Runs one ready task (a seeded pick), or moves time to the next timer no later than
    /// `until`.
    pub(crate) fn step(&self, until: u64) -> Step {
        let picked = {
            let mut exec = self.exec();
            // Wake-ups of tasks that have finished since are dropped here.
            let live: Vec<usize> = exec.ready.iter().copied().filter(|&id| exec.tasks[id].is_some()).collect();
            exec.ready.clear();
            exec.ready.extend(live.iter().copied());
            if live.is_empty() {
                None
            } else {
                let id = live[(exec.schedule.bits() % live.len() as u64) as usize];
                exec.ready.remove(&id);
                exec.tasks[id].take().map(|task| (id, task))
            }
        };
        if let Some((id, mut task)) = picked {
            let waker = Waker::from(Arc::new(TaskWaker { id, exec: Arc::downgrade(&self.exec) }));
            let done = task.as_mut().poll(&mut Context::from_waker(&waker)).is_ready();
            if done {
                // Dropped with the lock released: a drop may spawn.
                drop(task);
            } else if let Some(slot) = self.exec().tasks.get_mut(id) {
                *slot = Some(task);
            }
            return Step::Polled;
        }
        let due = {
            let mut exec = self.exec();
            let Some((&(deadline, _), _)) = exec.timers.iter().next() else { return Step::Idle };
            if deadline > until {
                return Step::Idle;
            }
            exec.now = exec.now.max(deadline);
            let now = exec.now;
            let later = exec.timers.split_off(&(now + 1, 0));
            std::mem::replace(&mut exec.timers, later)
        };
        for waker in due.into_values() {
            waker.wake();
        }
        Step::Advanced
    }

    /// Whether any task is left (running or waiting).
    pub(crate) fn tasks_left(&self) -> usize {
        let exec = self.exec();
        // A task being polled is out of its slot; `step` is not running while this is asked.
        exec.tasks.iter().filter(|t| t.is_some()).count()
    }

    /// Drops every task left, with the lock released (their drops may spawn more).
    pub(crate) fn shut_down(&self) {
        for _ in 0..100 {
            let tasks: Vec<Task> = self.exec().tasks.iter_mut().filter_map(Option::take).collect();
            if tasks.is_empty() {
                break;
            }
            drop(tasks);
        }
        self.exec().timers.clear();
    }
}

impl Runtime for SimRuntime {
    type Sleep = Sleep;

    fn sleep_until(&self, deadline: Timestamp) -> Sleep {
        Sleep { exec: Arc::downgrade(&self.exec), deadline: deadline.as_nanos(), registration: None }
    }

    fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let mut exec = self.exec();
        let id = exec.tasks.len();
        exec.tasks.push(Some(Box::pin(task)));
        exec.ready.insert(id);
    }

    fn now(&self) -> Timestamp {
        Timestamp::from_nanos(self.nanos())
    }

    fn jitter_seed(&self) -> u64 {
        self.exec().seeds.bits()
    }
}

struct TaskWaker {
    id: usize,
    exec: Weak<Mutex<Exec>>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        if let Some(exec) = self.exec.upgrade() {
            let mut exec = exec.lock().unwrap_or_else(PoisonError::into_inner);
            if exec.tasks.get(self.id).is_some() {
                exec.ready.insert(self.id);
            }
        }
    }
}

/// A virtual-time timer.
pub(crate) struct Sleep {
    exec: Weak<Mutex<Exec>>,
    deadline: u64,
    registration: Option<u64>,
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let Some(exec) = self.exec.upgrade() else { return Poll::Ready(()) };
        let mut exec = exec.lock().unwrap_or_else(PoisonError::into_inner);
        if exec.now >= self.deadline {
            return Poll::Ready(());
        }
        let registration = match self.registration {
            Some(r) => r,
            None => {
                exec.registrations += 1;
                exec.registrations
            }
        };
        exec.timers.insert((self.deadline, registration), cx.waker().clone());
        drop(exec);
        self.registration = Some(registration);
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let (Some(registration), Some(exec)) = (self.registration, self.exec.upgrade()) {
            exec.lock().unwrap_or_else(PoisonError::into_inner).timers.remove(&(self.deadline, registration));
        }
    }
}
