//! A JavaScript thread's inbox: what other threads hand its event loop (a queue, and a libuv
//! async handle that wakes the loop), the environment its callbacks run JavaScript in, and the
//! teardown of its libuv handles when that environment ends.

use std::cell::RefCell;
use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread::{self, ThreadId};

use napi::sys;

use tenure::host::{Home, Mailbox, Task, Work, scope};

use super::uv::Handle;

thread_local! {
    /// The inbox of this thread's environment, while it lives.
    static HOME: RefCell<Option<Arc<Inbox>>> = const { RefCell::new(None) };
}

/// A JavaScript thread's inbox (see the module).
pub(crate) struct Inbox {
    queue: Mailbox,
    wake: OnceLock<Handle>,
    /// The loop's thread.
    pub(crate) thread: ThreadId,
    env: sys::napi_env,
    event_loop: *mut sys::uv_loop_s,
    context: sys::napi_async_context,
    /// Promises pending on this thread: while there are any, the async handle keeps the loop
    /// alive, as a pending timer does.
    holds: AtomicUsize,
    /// Libuv handles of this inbox not yet closed (its own and its sockets').
    open: AtomicUsize,
    /// Sockets watched on this loop, closed with the environment.
    polls: Mutex<Vec<Watched>>,
    /// The async cleanup hook's handle, once the environment is torn down.
    remove: Mutex<Option<usize>>,
}

/// A socket's poll handle, and what closes it (given the handle's data).
type Watched = (Handle, fn(*mut c_void));

// The raw pointers are the environment's and its loop's, used on their thread only; other
// threads only queue items and send the async handle (thread-safe), under the queue's lock.
unsafe impl Send for Inbox {}
unsafe impl Sync for Inbox {}

fn check(status: sys::napi_status, what: &str) -> napi::Result<()> {
    if status == sys::Status::napi_ok {
        return Ok(());
    }
    Err(napi::Error::from_reason(format!("tenure could not {what} (napi status {status})")))
}

impl Inbox {
    /// This thread's inbox for `env`, made on first use.
    pub(crate) fn of(env: sys::napi_env) -> napi::Result<Arc<Self>> {
        if let Some(inbox) = Self::here().filter(|i| i.env == env) {
            return Ok(inbox);
        }
        let mut event_loop = null_mut();
        let mut name = null_mut();
        let mut resource = null_mut();
        let mut context = null_mut();
        unsafe {
            check(sys::napi_get_uv_event_loop(env, &mut event_loop), "find the event loop")?;
            check(sys::napi_create_string_utf8(env, c"tenure".as_ptr(), 6, &mut name), "name its callbacks")?;
            check(sys::napi_create_object(env, &mut resource), "name its callbacks")?;
            check(sys::napi_async_init(env, resource, name, &mut context), "make an async context")?;
        }
        let inbox = Arc::new(Self {
            queue: Mailbox::default(),
            wake: OnceLock::new(),
            thread: thread::current().id(),
            env,
            event_loop,
            context,
            holds: AtomicUsize::new(0),
            open: AtomicUsize::new(1),
            polls: Mutex::new(Vec::new()),
            remove: Mutex::new(None),
        });
        let wake = Handle::new_async(event_loop, Arc::as_ptr(&inbox).cast_mut().cast(), on_wake)
            .map_err(|e| napi::Error::from_reason(format!("tenure could not watch the event loop: {e}")))?;
        let _ = inbox.wake.set(wake);
        let mut remove = null_mut();
        let arg = Arc::into_raw(inbox.clone()).cast_mut().cast();
        let hooked = unsafe { sys::napi_add_async_cleanup_hook(env, Some(on_teardown), arg, &mut remove) };
        if let Err(e) = check(hooked, "watch the environment's teardown") {
            // Nothing would close the handle at teardown, where an open one aborts a worker.
            drop(unsafe { Arc::from_raw(arg.cast::<Self>().cast_const()) });
            wake.close_async(|_| {});
            return Err(e);
        }
        HOME.set(Some(inbox.clone()));
        Ok(inbox)
    }

    /// The inbox of this thread's environment, if it still lives.
    pub(crate) fn here() -> Option<Arc<Self>> {
        HOME.with_borrow(|home| home.as_ref().filter(|i| i.is_alive()).cloned())
    }

    /// Whether the environment still lives.
    pub(crate) fn is_alive(&self) -> bool {
        !self.queue.is_closed()
    }

    pub(crate) fn event_loop(&self) -> *mut sys::uv_loop_s {
        self.event_loop
    }

    pub(crate) fn env(&self) -> sys::napi_env {
        self.env
    }

    /// A promise is pending on this thread (on the thread only).
    pub(crate) fn hold(&self) {
        if self.holds.fetch_add(1, Ordering::Relaxed) == 0 && self.is_alive() {
            self.wake.get().into_iter().for_each(|w| w.set_ref(true));
        }
    }

    /// A promise of this thread settled (on the thread only).
    pub(crate) fn unhold(&self) {
        if self.holds.fetch_sub(1, Ordering::Relaxed) == 1 && self.is_alive() {
            self.wake.get().into_iter().for_each(|w| w.set_ref(false));
        }
    }

    /// Runs `f` from a libuv callback as JavaScript's own callbacks run: in a handle scope and a
    /// callback scope (promises settled inside have their reactions run when it ends), inside a
    /// [`scope`].
    pub(crate) fn turn(&self, f: impl FnOnce()) {
        let env = self.env;
        let mut handles = null_mut();
        let mut global = null_mut();
        let mut callback = null_mut();
        unsafe {
            sys::napi_open_handle_scope(env, &mut handles);
            sys::napi_get_global(env, &mut global);
            let opened = sys::napi_open_callback_scope(env, global, self.context, &mut callback);
            scope(f);
            if opened == sys::Status::napi_ok {
                sys::napi_close_callback_scope(env, callback);
            }
            sys::napi_close_handle_scope(env, handles);
        }
    }

    /// Watches a socket's poll handle: closed by `close` (given its data) with the environment
    /// unless [`Self::unwatch`]ed first.
    pub(crate) fn watch(&self, handle: Handle, close: fn(*mut c_void)) {
        self.open.fetch_add(1, Ordering::SeqCst);
        self.polls.lock().unwrap_or_else(PoisonError::into_inner).push((handle, close));
    }

    /// Stops watching `handle` and closes it (on the thread only); false if the environment's
    /// teardown closed it already.
    pub(crate) fn unwatch(&self, handle: Handle) -> bool {
        let mut polls = self.polls.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(at) = polls.iter().position(|(h, _)| *h == handle) else { return false };
        let (handle, close) = polls.swap_remove(at);
        drop(polls);
        handle.poll_stop();
        handle.close_poll(close);
        true
    }

    /// A handle of this inbox was closed; the last one ends the teardown.
    pub(crate) fn closed(inbox: *const Self) {
        let this = unsafe { &*inbox };
        if this.open.fetch_sub(1, Ordering::SeqCst) != 1 {
            return;
        }
        let remove = this.remove.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(remove) = remove {
            unsafe { sys::napi_remove_async_cleanup_hook(remove as sys::napi_async_cleanup_hook_handle) };
            // The hook's reference.
            unsafe { Arc::decrement_strong_count(inbox) };
        }
    }

    /// The environment is torn down: queued work is dropped, later posts too, and every libuv
    /// handle is closed; Node waits for the last close.
    fn tear_down(&self, remove: sys::napi_async_cleanup_hook_handle) {
        *self.remove.lock().unwrap_or_else(PoisonError::into_inner) = Some(remove as usize);
        self.queue.close();
        HOME.with_borrow_mut(|home| {
            if home.as_ref().is_some_and(|h| std::ptr::eq(Arc::as_ptr(h), self)) {
                *home = None;
            }
        });
        unsafe { sys::napi_async_destroy(self.env, self.context) };
        let polls = std::mem::take(&mut *self.polls.lock().unwrap_or_else(PoisonError::into_inner));
        for (handle, close) in polls {
            handle.poll_stop();
            handle.close_poll(close);
        }
        if let Some(wake) = self.wake.get() {
            wake.close_async(|inbox| Self::closed(inbox.cast()));
        }
    }
}

impl Home for Inbox {
    fn thread(&self) -> ThreadId {
        self.thread
    }

    /// Hands `work` to the loop's thread; a torn-down environment's work is dropped instead.
    fn post(&self, work: Work) {
        self.queue.post(work, || {
            if let Some(wake) = self.wake.get() {
                wake.send();
            }
        });
    }

    fn enter(&self, poll: &mut dyn FnMut()) {
        let _runtime = crate::process_runtime().enter();
        poll();
    }

    fn drop_later(&self, future: Task) {
        drop(crate::process_runtime().spawn(async move { drop(future) }));
    }
}

/// The async handle's callback: runs what other threads posted.
unsafe extern "C" fn on_wake(handle: *mut c_void) {
    let inbox = unsafe { &*Handle::data_of(handle).cast::<Inbox>() };
    let items = inbox.queue.take();
    if items.is_empty() {
        return;
    }
    inbox.turn(|| items.into_iter().for_each(Work::run));
}

unsafe extern "C" fn on_teardown(remove: sys::napi_async_cleanup_hook_handle, arg: *mut c_void) {
    let inbox = unsafe { &*arg.cast::<Inbox>() };
    inbox.tear_down(remove);
}
