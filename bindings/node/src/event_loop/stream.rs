//! Sockets a JavaScript thread's event loop watches, for the connections of the network stores
//! (Redis, PostgreSQL): a backend opened on a JavaScript thread hands that loop to them as their
//! runtime ([`Net`]).

use std::ffi::{c_int, c_void};
use std::io;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::Duration;

use tenure::host::{Home, LoopStream, Watch, Watched, Work, loop_socket};
use tenure::net::{Net, NetFuture, Socket};

use super::inbox::Inbox;
use super::uv::{self, Handle};

/// Dials a store's TCP sockets onto a JavaScript thread's loop (see the module). Once that
/// thread's environment is gone, new connections run on the addon's runtime instead.
pub(crate) struct JsDial {
    home: Arc<Inbox>,
}

impl JsDial {
    pub(crate) fn new(home: Arc<Inbox>) -> Self {
        Self { home }
    }
}

impl Net for JsDial {
    fn connect_tcp(&self, host: &str, port: u16, timeout: Duration) -> NetFuture<io::Result<Socket>> {
        let home = self.home.clone();
        let host = host.to_owned();
        Box::pin(async move {
            let stream = tenure_tokio::connect_tcp(&host, port, timeout).await?;
            if !home.is_alive() {
                return Ok(Socket::new(stream, |driver| drop(crate::process_runtime().spawn(driver)), || true));
            }
            loop_socket(home, stream.into_std()?, register, Inbox::is_alive)
        })
    }

    /// A Unix socket stays on the addon's runtime.
    fn connect_unix(&self, path: &Path, timeout: Duration) -> NetFuture<io::Result<Socket>> {
        crate::runtime().connect_unix(path, timeout)
    }

    /// On the addon's runtime's timer, whoever asks.
    fn sleep(&self, duration: Duration) -> NetFuture<()> {
        crate::runtime().sleep(duration)
    }
}

/// A socket its loop watches (a libuv poll handle): the poll callback reads what arrives into the
/// buffer and wakes the reader; writes go straight to the (non-blocking) socket, from any thread.
struct Shared {
    watched: Watched,
    home: Arc<Inbox>,
    /// The loop's poll handle, once watched (until closed).
    handle: Mutex<Option<Handle>>,
}

impl Shared {
    fn handle(&self) -> Option<Handle> {
        *self.handle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on the loop's thread: now if this is it, else posted there.
    fn on_loop(self: &Arc<Self>, f: impl FnOnce(&Arc<Self>) + Send + 'static) {
        let shared = self.clone();
        if thread::current().id() == self.home.thread {
            f(&shared);
        } else {
            self.home.post(Work::Call(Box::new(move || f(&shared))));
        }
    }

    /// Starts watching the socket (on the loop's thread).
    fn watch(self: &Arc<Self>) {
        let data = Arc::into_raw(self.clone()).cast_mut().cast::<c_void>();
        let socket = self.watched.socket().as_raw_fd();
        let handle = match Handle::new_poll(self.home.event_loop(), data, socket) {
            Ok(handle) => handle,
            Err(e) => {
                drop(unsafe { Arc::from_raw(data.cast::<Self>()) });
                return self.watched.fail(e);
            }
        };
        self.home.watch(handle, poll_closed);
        *self.handle.lock().unwrap_or_else(PoisonError::into_inner) = Some(handle);
        if let Err(e) = handle.poll_start(uv::READABLE, on_poll) {
            self.stop();
            self.watched.fail(e);
        }
    }

    /// Stops watching and closes the handle (on the loop's thread).
    fn stop(&self) {
        let handle = self.handle.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(handle) = handle {
            self.home.unwatch(handle);
        }
    }

    /// Watches for room to write too, until the next poll finds it (on the loop's thread).
    fn want_write(self: &Arc<Self>) {
        if let Some(handle) = self.handle().filter(|_| self.home.is_alive())
            && let Err(e) = handle.poll_start(uv::READABLE | uv::WRITABLE, on_poll)
        {
            self.watched.fail(e);
        }
    }

    /// The poll callback's work (on the loop's thread, in a scope).
    fn ready(&self, status: c_int, events: c_int) {
        if status < 0 {
            self.stop();
            return self.watched.fail(io::Error::from_raw_os_error(-status));
        }
        if events & uv::WRITABLE != 0 {
            if let Some(handle) = self.handle()
                && let Err(e) = handle.poll_start(uv::READABLE, on_poll)
            {
                self.watched.fail(e);
            }
            self.watched.write_ready();
        }
        if events & uv::READABLE != 0 && self.watched.read_ready() {
            self.stop();
        }
    }
}

unsafe extern "C" fn on_poll(handle: *mut c_void, status: c_int, events: c_int) {
    let shared = unsafe { &*Handle::data_of(handle).cast::<Shared>() };
    shared.home.turn(|| shared.ready(status, events));
}

/// A poll handle was closed: its reference to the socket goes (the descriptor closes with the
/// last one, never while libuv watches it).
fn poll_closed(data: *mut c_void) {
    let shared = unsafe { Arc::from_raw(data.cast::<Shared>()) };
    let home = shared.home.clone();
    drop(shared);
    Inbox::closed(Arc::as_ptr(&home));
}

/// Watches `socket` on `home`'s loop (from its thread, or posted there).
fn register(home: &Arc<Inbox>, socket: TcpStream) -> LoopStream<PollWatch> {
    let shared = Arc::new(Shared { watched: Watched::new(socket), home: home.clone(), handle: Mutex::new(None) });
    shared.on_loop(Shared::watch);
    LoopStream::new(PollWatch(shared))
}

/// How libuv's poll handle watches a socket (see [`Shared`]).
struct PollWatch(Arc<Shared>);

impl Watch for PollWatch {
    fn watched(&self) -> &Watched {
        &self.0.watched
    }

    fn want_write(&self) {
        self.0.on_loop(Shared::want_write);
    }

    /// libuv lets go of the descriptor before the last reference closes it.
    fn stop(&self) {
        self.0.on_loop(|shared| shared.stop());
    }
}
