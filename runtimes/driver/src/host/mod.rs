//! For hosts with an event loop of their own (asyncio in the Python package, libuv in the npm
//! package): futures polled by the loop's thread, and sockets whose readiness the loop watches.
//! A binding implements [`Home`] for its loop and [`net::Net`](crate::net::Net) with
//! [`Watched`] sockets; what is the same on every loop lives here once.
//!
//! - A [`LoopTask`] is polled on its home's thread only. A wake-up on that thread inside a
//!   [`scope`] queues the task to run when the outermost scope ends — a request reaches its
//!   socket, and a reply its caller, without a trip around the loop; any other wake-up posts it
//!   to the home ([`Home::post`]), which wakes the loop.
//! - A [`Watched`] socket is read by the loop's readiness callback into a buffer, and written
//!   straight from whichever thread writes (it is non-blocking).
//! - [`Direct`] is the home of a host without a loop (the JVM package): work runs where it is
//!   posted, so the user-written backends of `backend::user` serve such a host too.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, TryLockError};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, ThreadId};

mod socket;

pub use socket::{LoopStream, Watch, Watched, loop_socket};

/// A future a [`LoopTask`] runs.
pub type Task = Pin<Box<dyn Future<Output = ()> + Send>>;

/// An event loop that runs [`LoopTask`]s on its thread.
pub trait Home: Send + Sync + 'static {
    /// The loop's thread.
    fn thread(&self) -> ThreadId;

    /// Queues `work` for the loop's thread and wakes the loop; a loop that is gone
    /// [`Work::discard`]s it.
    fn post(&self, work: Work);

    /// Runs a task's `poll` inside what its futures need (a runtime's context).
    fn enter(&self, poll: &mut dyn FnMut());

    /// Drops a task's future somewhere other than here (its loop is gone, and the dropping
    /// thread may hold locks the future's drop takes).
    fn drop_later(&self, future: Task);
}

/// Work for a loop's thread.
pub enum Work {
    /// Poll a task.
    Poll(Arc<LoopTask>),
    /// Run a call.
    Call(Box<dyn FnOnce() + Send>),
}

impl std::fmt::Debug for Work {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Poll(_) => "Work::Poll",
            Self::Call(_) => "Work::Call",
        })
    }
}

impl Work {
    /// Runs it on this thread, its loop's, inside a scope.
    pub fn run(self) {
        match self {
            Self::Poll(task) => task.poll(),
            Self::Call(call) => call(),
        }
    }

    /// Gives up work its loop will never run: a task's future is dropped elsewhere.
    pub fn discard(self) {
        if let Self::Poll(task) = self {
            task.cancel_later();
        }
    }

    /// Queues it to run at the end of this thread's current scope, for `home`.
    pub fn run_soon(self, home: Arc<dyn Home>) {
        READY.with_borrow_mut(|ready| ready.push_back((home, self)));
    }
}

/// The work other threads posted for a loop's thread, until the loop lets go of it: what a
/// binding's [`Home::post`] queues before it wakes its loop (the queue is then drained there).
#[derive(Debug, Default)]
pub struct Mailbox {
    /// The posted work, and whether the loop let go (nothing is queued then).
    queue: Mutex<(Vec<Work>, bool)>,
}

impl Mailbox {
    /// Queues `work`, or discards it once closed, and calls `wake` if the queue was empty (no
    /// wake-up is on its way). `wake` runs under the queue's lock, so [`Self::close`] never runs
    /// meanwhile: a loop that lets go may free what `wake` uses once closed.
    pub fn post(&self, work: Work, wake: impl FnOnce()) {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if queue.1 {
            drop(queue);
            work.discard();
            return;
        }
        queue.0.push(work);
        if queue.0.len() == 1 {
            wake();
        }
    }

    /// Takes what was posted, to run it on the loop's thread.
    pub fn take(&self) -> Vec<Work> {
        std::mem::take(&mut self.queue.lock().unwrap_or_else(PoisonError::into_inner).0)
    }

    /// The loop let go: what was posted is discarded, and so is what is posted from now on.
    pub fn close(&self) {
        let items = {
            let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            queue.1 = true;
            std::mem::take(&mut queue.0)
        };
        items.into_iter().for_each(Work::discard);
    }

    /// Whether the loop let go.
    pub fn is_closed(&self) -> bool {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner).1
    }
}

thread_local! {
    /// How many scopes are open on this thread.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Work that came up inside a scope (tasks woken, calls made), run when the outermost one
    /// ends, with the loop it belongs to.
    static READY: RefCell<VecDeque<(Arc<dyn Home>, Work)>> = const { RefCell::new(VecDeque::new()) };
}

/// How many pieces of work one scope runs before leaving the rest to the loop's next turn, so
/// tasks that keep waking each other cannot starve it.
const RUN_BUDGET: usize = 64;

/// Runs `f` in a scope of this thread: work of its loop that comes up inside runs when the
/// outermost scope ends, in order (see the module). Only code that holds nothing a task could
/// take opens a scope: a call from the host's language into the binding, a task's poll, the
/// loop's callbacks.
pub fn scope(f: impl FnOnce()) {
    nested(f);
    if DEPTH.get() > 0 {
        return;
    }
    for _ in 0..RUN_BUDGET {
        let Some((_, work)) = READY.with_borrow_mut(VecDeque::pop_front) else { return };
        nested(|| work.run());
    }
    while let Some((home, work)) = READY.with_borrow_mut(VecDeque::pop_front) {
        home.post(work);
    }
}

/// Whether this thread is inside a scope: running a callback of its loop.
pub fn in_scope() -> bool {
    DEPTH.get() > 0
}

/// Runs `call` on `home`'s thread: at the end of the current scope when this is that thread
/// inside one (no trip around the loop), else at the loop's next turn.
pub fn call_on(home: &Arc<dyn Home>, call: Box<dyn FnOnce() + Send>) {
    if thread::current().id() == home.thread() && in_scope() {
        Work::Call(call).run_soon(home.clone());
    } else {
        home.post(Work::Call(call));
    }
}

fn nested(f: impl FnOnce()) {
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            DEPTH.set(DEPTH.get() - 1);
        }
    }
    DEPTH.set(DEPTH.get() + 1);
    let _leave = Leave;
    f();
}

/// The home of a host without an event loop of its own (the JVM package, whose calls are
/// coroutines that any thread may start): work runs at once, on the thread that posts it. No
/// [`LoopTask`] runs on it.
#[derive(Debug, Default, Clone, Copy)]
pub struct Direct;

impl Home for Direct {
    /// Whichever thread asks: work made inside a scope runs at its end, other work at once.
    fn thread(&self) -> ThreadId {
        thread::current().id()
    }

    fn post(&self, work: Work) {
        scope(|| work.run());
    }

    fn enter(&self, poll: &mut dyn FnMut()) {
        poll();
    }

    /// Nothing waits on this thread for a loop: the future is dropped here.
    fn drop_later(&self, future: Task) {
        drop(future);
    }
}

/// A future run on a loop's thread (see the module).
pub struct LoopTask {
    future: Mutex<Option<Task>>,
    home: Arc<dyn Home>,
    scheduled: AtomicBool,
}

impl std::fmt::Debug for LoopTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopTask").field("done", &self.is_done()).finish_non_exhaustive()
    }
}

impl LoopTask {
    /// Starts `future` on `home`, whose thread this is: polls it now, in a scope.
    pub fn start(home: Arc<dyn Home>, future: Task) -> Arc<Self> {
        let task = Arc::new(Self { future: Mutex::new(Some(future)), home, scheduled: AtomicBool::new(false) });
        scope(|| task.clone().poll());
        task
    }

    /// Starts `future` on `home` from any thread: its first poll is posted there.
    pub fn spawn(home: Arc<dyn Home>, future: Task) {
        let task = Arc::new(Self { future: Mutex::new(Some(future)), home, scheduled: AtomicBool::new(true) });
        let home = task.home.clone();
        home.post(Work::Poll(task));
    }

    /// A task on `home` with no future yet: its waker can be handed out before the future is
    /// given ([`Self::install`]).
    pub fn empty(home: Arc<dyn Home>) -> Arc<Self> {
        Arc::new(Self { future: Mutex::new(None), home, scheduled: AtomicBool::new(false) })
    }

    /// Gives the task its future (a wake-up that came before polls it).
    pub fn install(&self, future: Task) {
        *self.future.lock().unwrap_or_else(PoisonError::into_inner) = Some(future);
    }

    fn poll(self: Arc<Self>) {
        let mut slot = match self.future.try_lock() {
            Ok(slot) => slot,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => {
                // Polled on another thread right now (its loop moved threads): try again later.
                self.home.post(Work::Poll(self.clone()));
                return;
            }
        };
        self.scheduled.store(false, Ordering::SeqCst);
        let waker = Waker::from(self.clone());
        let Some(future) = slot.as_mut() else { return };
        let mut polled = Ok(Poll::Pending);
        self.home.enter(&mut || {
            polled = catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(&mut Context::from_waker(&waker))));
        });
        if let Err(panic) = &polled {
            tracing::error!(panic = panic_message(panic.as_ref()), "a task of tenure's panicked; it is dropped");
        }
        if !matches!(polled, Ok(Poll::Pending)) {
            let finished = slot.take();
            drop(slot);
            drop(finished);
        }
    }

    /// Whether its future finished (or was dropped).
    pub fn is_done(&self) -> bool {
        self.future.lock().unwrap_or_else(PoisonError::into_inner).is_none()
    }

    /// Takes the future out, unless it is being polled right now (by the caller itself).
    fn take(&self) -> Option<Task> {
        match self.future.try_lock() {
            Ok(mut slot) => slot.take(),
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner().take(),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// Drops the future (unless it is being polled right now, by the caller itself).
    pub fn cancel(&self) {
        drop(self.take());
    }

    fn cancel_later(&self) {
        if let Some(future) = self.take() {
            self.home.drop_later(future);
        }
    }
}

impl Wake for LoopTask {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.scheduled.swap(true, Ordering::SeqCst) {
            return;
        }
        if thread::current().id() == self.home.thread() && in_scope() {
            Work::Poll(self.clone()).run_soon(self.home.clone());
        } else {
            // Outside a scope whoever wakes may hold a lock the task takes: it runs later.
            self.home.post(Work::Poll(self.clone()));
        }
    }
}

/// The text a panic carried, if any.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic.downcast_ref::<&str>().copied().or_else(|| panic.downcast_ref::<String>().map(String::as_str)).unwrap_or("")
}
