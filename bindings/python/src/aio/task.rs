//! An asyncio event loop as the [`Home`] of Tenure's loop tasks ([`tenure::host`]): the inbox
//! other threads wake it through.

use std::cell::RefCell;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Weak};
use std::thread::{self, ThreadId};

use pyo3::prelude::*;
use tenure::host::{Home, Mailbox, Task, Work, scope};

/// Work for the loop's thread, posted from elsewhere: a closure given the loop.
pub(crate) type LoopCall = Box<dyn FnOnce(Python<'_>, &Bound<'_, PyAny>) -> PyResult<()> + Send>;

thread_local! {
    /// The inbox of the loop this thread ran last: the loop's address, the process's fork
    /// count then (a forked child shares the parent's inbox socket: it makes its own).
    static INBOX: RefCell<Option<(LoopKey, Arc<Inbox>)>> = const { RefCell::new(None) };
}

/// An event loop's address and the process's fork count when it was seen.
type LoopKey = (usize, u64);

/// `call` as work for the loop's thread: given the running loop there.
pub(crate) fn with_loop(call: LoopCall) -> Box<dyn FnOnce() + Send> {
    Box::new(move || {
        Python::attach(|py| {
            let ran = py.import("asyncio").and_then(|a| a.call_method0("get_running_loop")).and_then(|l| call(py, &l));
            if let Err(e) = ran {
                e.print(py);
            }
        });
    })
}

/// Starts `future` as a task of `event_loop`, the running loop of this thread: polls it now.
pub(crate) fn start(event_loop: &Bound<'_, PyAny>, future: Task) -> PyResult<Arc<tenure::host::LoopTask>> {
    Ok(tenure::host::LoopTask::start(Inbox::of(event_loop)?, future))
}

/// What other threads hand an event loop: a queue, and a socket pair whose reading end the loop
/// watches (one byte is written when the queue stops being empty). Posting never touches the
/// interpreter.
pub(crate) struct Inbox {
    /// The posted work, until the loop lets go of the inbox.
    queue: Mailbox,
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
            queue: Mailbox::default(),
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
}

impl Drop for InboxReader {
    /// The loop let go of the inbox (it is closed): what was posted meanwhile never runs.
    fn drop(&mut self) {
        self.inbox.queue.close();
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
    fn __call__(&self) {
        let mut drained = [0u8; 64];
        while matches!((&self.ring).read(&mut drained), Ok(n) if n > 0) {}
        let items = self.inbox.queue.take();
        scope(|| items.into_iter().for_each(Work::run));
    }
}

impl Home for Inbox {
    fn thread(&self) -> ThreadId {
        self.thread
    }

    /// Hands `work` to the loop's thread; a closed loop's work is dropped instead.
    fn post(&self, work: Work) {
        // A full socket buffer already holds a ring.
        self.queue.post(work, || drop((&self.bell).write(&[1])));
    }

    fn enter(&self, poll: &mut dyn FnMut()) {
        let _context = crate::tokio_handle().enter();
        poll();
    }

    fn drop_later(&self, future: Task) {
        drop(crate::tokio_handle().spawn(async move { drop(future) }));
    }
}
