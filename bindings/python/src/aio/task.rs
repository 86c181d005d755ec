//! Futures polled by an event loop's thread, and the inbox other threads wake them through.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, TryLockError, Weak};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, ThreadId};

use pyo3::prelude::*;

pub(crate) type Task = Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// Work for the loop's thread, posted from elsewhere: a closure given the loop.
pub(crate) type LoopCall = Box<dyn FnOnce(Python<'_>, &Bound<'_, PyAny>) -> PyResult<()> + Send>;

thread_local! {
    /// How many scopes are open on this thread.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Work for this thread's loop that came up inside a scope (tasks woken, calls made), run
    /// when the outermost one ends.
    static READY: RefCell<VecDeque<Item>> = const { RefCell::new(VecDeque::new()) };
    /// The inbox of the loop this thread ran last: the loop's address, the process's fork
    /// count then (a forked child shares the parent's inbox socket: it makes its own).
    static INBOX: RefCell<Option<(LoopKey, Arc<Inbox>)>> = const { RefCell::new(None) };
}

/// An event loop's address and the process's fork count when it was seen.
type LoopKey = (usize, u64);

/// How many woken tasks one loop callback runs before leaving the rest to the loop's next turn,
/// so tasks that keep waking each other cannot starve it.
const RUN_BUDGET: usize = 64;

/// Runs `f` in a scope of this thread: tasks of its loop woken inside run when the outermost
/// scope ends, in the order they were woken — a command's request reaches its connection's
/// driver, and a reply its caller, without a trip around the loop. Only code that holds nothing
/// a task could take opens a scope: a task's poll (its own future is its own), the inbox's
/// callback, a socket's readiness callback.
pub(crate) fn scope(f: impl FnOnce()) {
    nested(f);
    if DEPTH.get() > 0 {
        return;
    }
    for _ in 0..RUN_BUDGET {
        let Some(item) = READY.with_borrow_mut(VecDeque::pop_front) else { return };
        nested(|| item.run_here());
    }
    while let Some(item) = READY.with_borrow_mut(VecDeque::pop_front) {
        match item {
            Item::Poll(task) => task.inbox.clone().post(Item::Poll(task)),
            // A call can only be queued by a scope on its loop's thread: this one.
            Item::Call(call) => match Inbox::here() {
                Some(inbox) => inbox.post(Item::Call(call)),
                None => drop(call),
            },
        }
    }
}

/// Whether this thread is inside a scope: running a callback of its event loop (so that loop is
/// the one running here now).
pub(crate) fn in_scope() -> bool {
    DEPTH.get() > 0
}

/// Runs `call` on `inbox`'s loop: at the end of the current scope when this is the loop's thread
/// inside one (no trip around the loop), else at the loop's next turn.
pub(crate) fn call_on(inbox: &Arc<Inbox>, call: LoopCall) {
    if thread::current().id() == inbox.thread && DEPTH.get() > 0 {
        READY.with_borrow_mut(|ready| ready.push_back(Item::Call(call)));
    } else {
        inbox.post(Item::Call(call));
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

/// A future run on an event loop's thread.
pub(crate) struct LoopTask {
    future: Mutex<Option<Task>>,
    inbox: Arc<Inbox>,
    scheduled: AtomicBool,
}

impl LoopTask {
    /// Starts `future` on the running loop of this thread: polls it now.
    pub(crate) fn start(event_loop: &Bound<'_, PyAny>, future: Task) -> PyResult<Arc<Self>> {
        let task = Arc::new(Self {
            future: Mutex::new(Some(future)),
            inbox: Inbox::of(event_loop)?,
            scheduled: AtomicBool::new(false),
        });
        scope(|| task.poll());
        Ok(task)
    }

    /// Starts `future` on `inbox`'s loop from any thread: its first poll is posted there.
    pub(crate) fn spawn(inbox: &Arc<Inbox>, future: Task) {
        let task = Self { future: Mutex::new(Some(future)), inbox: inbox.clone(), scheduled: AtomicBool::new(true) };
        inbox.post(Item::Poll(Arc::new(task)));
    }

    fn poll(self: &Arc<Self>) {
        let mut slot = match self.future.try_lock() {
            Ok(slot) => slot,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => {
                // Polled on another thread right now (its loop moved threads): try again later.
                self.inbox.post(Item::Poll(self.clone()));
                return;
            }
        };
        self.scheduled.store(false, Ordering::SeqCst);
        let waker = Waker::from(self.clone());
        let _context = crate::tokio_handle().enter();
        let Some(future) = slot.as_mut() else { return };
        let polled = catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(&mut Context::from_waker(&waker))));
        if let Err(panic) = &polled {
            tracing::error!(panic = panic_message(panic.as_ref()), "a task of tenure's panicked; it is dropped");
        }
        if !matches!(polled, Ok(Poll::Pending)) {
            let finished = slot.take();
            drop(slot);
            drop(finished);
        }
    }

    pub(crate) fn is_done(&self) -> bool {
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
    pub(crate) fn cancel(&self) {
        drop(self.take());
    }

    /// Drops the future on the runtime, never here: the caller may be a waker, holding locks
    /// the future's drop takes.
    fn cancel_later(&self) {
        if let Some(future) = self.take() {
            drop(crate::tokio_handle().spawn(async move { drop(future) }));
        }
    }
}

/// The text a panic carried, if any.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic.downcast_ref::<&str>().copied().or_else(|| panic.downcast_ref::<String>().map(String::as_str)).unwrap_or("")
}

impl Wake for LoopTask {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.scheduled.swap(true, Ordering::SeqCst) {
            return;
        }
        if thread::current().id() == self.inbox.thread && DEPTH.get() > 0 {
            READY.with_borrow_mut(|ready| ready.push_back(Item::Poll(self.clone())));
        } else {
            // Outside a scope whoever wakes may hold a lock the task takes: it runs later.
            self.inbox.post(Item::Poll(self.clone()));
        }
    }
}

pub(crate) enum Item {
    Poll(Arc<LoopTask>),
    Call(LoopCall),
}

impl Item {
    /// Runs it on this thread, its loop's, inside a scope.
    fn run_here(self) {
        match self {
            Self::Poll(task) => task.poll(),
            Self::Call(call) => Python::attach(|py| {
                let ran =
                    py.import("asyncio").and_then(|a| a.call_method0("get_running_loop")).and_then(|l| call(py, &l));
                if let Err(e) = ran {
                    e.print(py);
                }
            }),
        }
    }

    /// Gives up work its loop will never run (the loop is closed): a task's future is dropped,
    /// on the runtime.
    fn discard(self) {
        if let Self::Poll(task) = self {
            task.cancel_later();
        }
    }
}

/// What other threads hand an event loop: a queue, and a socket pair whose reading end the loop
/// watches (one byte is written when the queue stops being empty). Posting never touches the
/// interpreter.
pub(crate) struct Inbox {
    /// The posted work, and whether the loop let go of the inbox (nothing is queued then).
    queue: Mutex<(Vec<Item>, bool)>,
    bell: UnixStream,
    /// The loop's thread.
    pub(crate) thread: ThreadId,
    /// Alive while the loop watches the inbox (its selector holds the callback, which owns
    /// this): gone once the loop is closed.
    watched: Weak<()>,
}

impl Inbox {
    /// The inbox of `event_loop`, the running loop of this thread (made and watched on first use).
    pub(crate) fn of(event_loop: &Bound<'_, PyAny>) -> PyResult<Arc<Self>> {
        let key = (event_loop.as_ptr() as usize, crate::forks());
        let known =
            INBOX.with_borrow(|i| i.as_ref().filter(|(k, i)| *k == key && i.is_alive()).map(|(_, i)| i.clone()));
        if let Some(inbox) = known {
            return Ok(inbox);
        }
        let (ring, bell) = UnixStream::pair()?;
        ring.set_nonblocking(true)?;
        bell.set_nonblocking(true)?;
        let watched = Arc::new(());
        let inbox = Arc::new(Self {
            queue: Mutex::new((Vec::new(), false)),
            bell,
            thread: thread::current().id(),
            watched: Arc::downgrade(&watched),
        });
        let fd = ring.as_raw_fd();
        let reader = InboxReader { inbox: inbox.clone(), ring, _watched: watched };
        event_loop.call_method1("add_reader", (fd, reader))?;
        INBOX.set(Some((key, inbox.clone())));
        Ok(inbox)
    }

    /// The inbox of the loop this thread runs, if it still runs one.
    pub(crate) fn here() -> Option<Arc<Self>> {
        let forks = crate::forks();
        INBOX.with_borrow(|i| i.as_ref().filter(|((_, f), i)| *f == forks && i.is_alive()).map(|(_, i)| i.clone()))
    }

    /// Whether the loop still watches this inbox (it is not closed).
    pub(crate) fn is_alive(&self) -> bool {
        self.watched.strong_count() > 0
    }

    /// Hands `item` to the loop's thread; a closed loop's work is dropped instead.
    pub(crate) fn post(&self, item: Item) {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if queue.1 {
            drop(queue);
            item.discard();
            return;
        }
        let ring = queue.0.is_empty();
        queue.0.push(item);
        drop(queue);
        if ring {
            // A full socket buffer already holds a ring.
            let _ = (&self.bell).write(&[1]);
        }
    }

    /// Takes what was posted; `close` also refuses what is posted from now on.
    fn take(&self, close: bool) -> Vec<Item> {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        queue.1 |= close;
        std::mem::take(&mut queue.0)
    }
}

impl Drop for InboxReader {
    /// The loop let go of the inbox (it is closed): what was posted meanwhile never runs.
    fn drop(&mut self) {
        self.inbox.take(true).into_iter().for_each(Item::discard);
    }
}

/// The loop's callback for its inbox.
#[pyclass(frozen, module = "tenure._tenure")]
struct InboxReader {
    inbox: Arc<Inbox>,
    ring: UnixStream,
    _watched: Arc<()>,
}

#[pymethods]
impl InboxReader {
    fn __call__(&self, py: Python<'_>) -> PyResult<()> {
        let mut drained = [0u8; 64];
        while matches!((&self.ring).read(&mut drained), Ok(n) if n > 0) {}
        let items = self.inbox.take(false);
        let event_loop = py.import("asyncio")?.call_method0("get_running_loop")?;
        let mut failed = Ok(());
        scope(|| {
            for item in items {
                match item {
                    Item::Poll(_) => READY.with_borrow_mut(|ready| ready.push_back(item)),
                    Item::Call(call) => {
                        if let Err(e) = call(py, &event_loop) {
                            failed = Err(e);
                        }
                    }
                }
            }
        });
        failed
    }
}
