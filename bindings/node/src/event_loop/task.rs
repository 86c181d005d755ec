//! Futures polled by a JavaScript thread, woken through its [`Inbox`] from other threads.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, TryLockError};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;

use super::inbox::Inbox;

pub(crate) type Task = Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// Work for a JavaScript thread posted from elsewhere.
pub(crate) type LoopCall = Box<dyn FnOnce() + Send>;

thread_local! {
    /// How many scopes are open on this thread.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Tasks of this thread woken inside a scope, and calls made there, run when the outermost
    /// one ends.
    static READY: RefCell<VecDeque<Item>> = const { RefCell::new(VecDeque::new()) };
}

/// How many woken tasks one scope runs before leaving the rest to the loop's next turn, so tasks
/// that keep waking each other cannot starve it.
const RUN_BUDGET: usize = 64;

/// Runs `f` in a scope of this thread: tasks of its loop woken inside run when the outermost
/// scope ends, in the order they were woken — a request reaches the socket, and a reply its
/// caller, without a trip around the loop. Only code that holds nothing a task could take opens
/// a scope: a JavaScript call into the addon, a task's poll, the inbox's and a socket's
/// callbacks.
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
        match (&item, Inbox::here()) {
            (Item::Poll(task), _) => task.inbox.clone().post(item),
            // A call is only queued by a scope on its loop's thread: this one.
            (Item::Call(_), Some(inbox)) => inbox.post(item),
            (Item::Call(_), None) => item.discard(),
        }
    }
}

/// Runs `call` on `inbox`'s thread: at the end of the current scope when this is that thread
/// inside one, else at the loop's next turn.
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

/// A future run on a JavaScript thread.
pub(crate) struct LoopTask {
    future: Mutex<Option<Task>>,
    inbox: Arc<Inbox>,
    scheduled: AtomicBool,
}

impl LoopTask {
    /// A task on `inbox`'s thread with no future yet: its waker can be handed out before the
    /// future is given ([`Self::install`]).
    pub(crate) fn empty(inbox: &Arc<Inbox>) -> Arc<Self> {
        Arc::new(Self { future: Mutex::new(None), inbox: inbox.clone(), scheduled: AtomicBool::new(false) })
    }

    /// Gives the task its future; a wake-up that came before runs it.
    pub(crate) fn install(&self, future: Task) {
        *self.future.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(future);
    }

    /// Starts `future` on `inbox`'s thread from any thread: its first poll is posted there.
    pub(crate) fn spawn(inbox: &Arc<Inbox>, future: Task) {
        let task = Self { future: Mutex::new(Some(future)), inbox: inbox.clone(), scheduled: AtomicBool::new(true) };
        call_on(inbox, Box::new(|| Arc::new(task).poll()));
    }

    fn poll(self: Arc<Self>) {
        let mut slot = match self.future.try_lock() {
            Ok(slot) => slot,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => {
                self.inbox.post(Item::Poll(self.clone()));
                return;
            }
        };
        self.scheduled.store(false, Ordering::SeqCst);
        let waker = Waker::from(self.clone());
        let _context = crate::process_runtime().enter();
        let Some(future) = slot.as_mut() else { return };
        let polled = catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(&mut Context::from_waker(&waker))));
        if let Err(panic) = &polled {
            tracing::error!(
                panic = crate::promise::panic_text(panic.as_ref()),
                "a task of tenure's panicked; it is dropped"
            );
        }
        if !matches!(polled, Ok(Poll::Pending)) {
            let finished = slot.take();
            drop(slot);
            drop(finished);
        }
    }

    /// Drops the future on the runtime, never here: the caller may be a waker holding locks the
    /// future's drop takes.
    fn cancel_later(&self) {
        let taken = match self.future.try_lock() {
            Ok(mut slot) => slot.take(),
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner().take(),
            Err(TryLockError::WouldBlock) => None,
        };
        if let Some(future) = taken {
            drop(crate::process_runtime().spawn(async move { drop(future) }));
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
    pub(crate) fn run_here(self) {
        match self {
            Self::Poll(task) => task.poll(),
            Self::Call(call) => call(),
        }
    }

    /// Gives up work its loop will never run (the thread's environment is torn down).
    pub(crate) fn discard(self) {
        if let Self::Poll(task) = self {
            task.cancel_later();
        }
    }

    /// Queues it to run at the end of this thread's current scope.
    pub(crate) fn ready(self) {
        READY.with_borrow_mut(|ready| ready.push_back(self));
    }
}
