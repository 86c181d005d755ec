//! The few libuv calls the addon makes on its thread's loop (Node exports libuv to addons). Every
//! call but [`async_send`] is made on the loop's own thread.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::ffi::{c_int, c_void};

use napi::sys::uv_loop_s;

/// `uv_handle_type`'s `UV_ASYNC` and `UV_POLL`.
const ASYNC: c_int = 1;
const POLL: c_int = 8;
/// `uv_poll_event`.
pub(crate) const READABLE: c_int = 1;
pub(crate) const WRITABLE: c_int = 2;

pub(crate) type AsyncCallback = unsafe extern "C" fn(handle: *mut c_void);
pub(crate) type PollCallback = unsafe extern "C" fn(handle: *mut c_void, status: c_int, events: c_int);
type CloseCallback = unsafe extern "C" fn(handle: *mut c_void);

unsafe extern "C" {
    fn uv_handle_size(kind: c_int) -> usize;
    fn uv_async_init(event_loop: *mut uv_loop_s, handle: *mut c_void, callback: AsyncCallback) -> c_int;
    fn uv_async_send(handle: *mut c_void) -> c_int;
    fn uv_poll_init_socket(event_loop: *mut uv_loop_s, handle: *mut c_void, socket: c_int) -> c_int;
    fn uv_poll_start(handle: *mut c_void, events: c_int, callback: PollCallback) -> c_int;
    fn uv_poll_stop(handle: *mut c_void) -> c_int;
    fn uv_close(handle: *mut c_void, callback: CloseCallback);
    fn uv_ref(handle: *mut c_void);
    fn uv_unref(handle: *mut c_void);
}

/// A libuv handle this addon allocated: `data` (its first field, in every handle type) points
/// at what its callbacks need. Freed by its close callback, never before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Handle(*mut c_void);

// A handle is touched on its loop's thread only, except `uv_async_send` (thread-safe).
unsafe impl Send for Handle {}
unsafe impl Sync for Handle {}

fn layout(kind: c_int) -> Layout {
    let size = unsafe { uv_handle_size(kind) };
    Layout::from_size_align(size.max(1), 16).expect("a libuv handle's size")
}

fn failed(call: &str, code: c_int) -> std::io::Error {
    let error = std::io::Error::from_raw_os_error(-code);
    std::io::Error::new(error.kind(), format!("libuv {call}: {error}"))
}

impl Handle {
    fn new(kind: c_int, data: *mut c_void) -> Self {
        let raw = unsafe { alloc_zeroed(layout(kind)) }.cast::<c_void>();
        assert!(!raw.is_null(), "out of memory for a libuv handle");
        unsafe { raw.cast::<*mut c_void>().write(data) };
        Self(raw)
    }

    /// An async handle on `event_loop` calling `callback`; it does not keep the loop alive.
    pub(crate) fn new_async(
        event_loop: *mut uv_loop_s,
        data: *mut c_void,
        callback: AsyncCallback,
    ) -> std::io::Result<Self> {
        let handle = Self::new(ASYNC, data);
        let code = unsafe { uv_async_init(event_loop, handle.0, callback) };
        if code != 0 {
            unsafe { dealloc(handle.0.cast(), layout(ASYNC)) };
            return Err(failed("uv_async_init", code));
        }
        handle.set_ref(false);
        Ok(handle)
    }

    /// A poll handle watching `socket` on `event_loop`; it does not keep the loop alive.
    pub(crate) fn new_poll(event_loop: *mut uv_loop_s, data: *mut c_void, socket: c_int) -> std::io::Result<Self> {
        let handle = Self::new(POLL, data);
        let code = unsafe { uv_poll_init_socket(event_loop, handle.0, socket) };
        if code != 0 {
            unsafe { dealloc(handle.0.cast(), layout(POLL)) };
            return Err(failed("uv_poll_init_socket", code));
        }
        handle.set_ref(false);
        Ok(handle)
    }

    /// What `data` points at.
    pub(crate) fn data_of(raw: *mut c_void) -> *mut c_void {
        unsafe { raw.cast::<*mut c_void>().read() }
    }

    pub(crate) fn send(self) {
        unsafe { uv_async_send(self.0) };
    }

    pub(crate) fn poll_start(self, events: c_int, callback: PollCallback) -> std::io::Result<()> {
        match unsafe { uv_poll_start(self.0, events, callback) } {
            0 => Ok(()),
            code => Err(failed("uv_poll_start", code)),
        }
    }

    pub(crate) fn poll_stop(self) {
        unsafe { uv_poll_stop(self.0) };
    }

    /// Whether the handle keeps its loop alive.
    pub(crate) fn set_ref(self, keep: bool) {
        unsafe {
            if keep {
                uv_ref(self.0);
            } else {
                uv_unref(self.0);
            }
        }
    }

    /// Closes an async handle: `closed` gets its `data` once libuv let go, then it is freed.
    pub(crate) fn close_async(self, closed: fn(*mut c_void)) {
        self.close(closed, async_closed);
    }

    /// Closes a poll handle (see [`Self::close_async`]).
    pub(crate) fn close_poll(self, closed: fn(*mut c_void)) {
        self.close(closed, poll_closed);
    }

    fn close(self, closed: fn(*mut c_void), callback: CloseCallback) {
        // The close callback finds `closed` through a box that replaces `data`.
        let data = Self::data_of(self.0);
        let boxed = Box::into_raw(Box::new((closed, data))).cast::<c_void>();
        unsafe {
            self.0.cast::<*mut c_void>().write(boxed);
            uv_close(self.0, callback);
        }
    }
}

unsafe extern "C" fn async_closed(raw: *mut c_void) {
    unsafe { release(raw, ASYNC) }
}

unsafe extern "C" fn poll_closed(raw: *mut c_void) {
    unsafe { release(raw, POLL) }
}

unsafe fn release(raw: *mut c_void, kind: c_int) {
    let (closed, data) = *unsafe { Box::from_raw(Handle::data_of(raw).cast::<(fn(*mut c_void), *mut c_void)>()) };
    unsafe { dealloc(raw.cast(), layout(kind)) };
    closed(data);
}
