//! Sockets the event loop's selector watches, for the connections of the network stores (Redis,
//! PostgreSQL): the package hands its loop to them as their runtime ([`Net`]).

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::Duration;

use pyo3::prelude::*;
use tenure::net::{Net, NetFuture, Socket};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::task::{Inbox, Item, LoopTask, scope};
use crate::bridge::with_python;

/// The read buffer's capacity kept once it is empty (a burst's peak is given back).
const KEPT_BUFFER: usize = 16 * 1024;

/// Dials a store's sockets onto the event loop it was opened on (see the module).
pub(crate) struct LoopDial {
    home: Mutex<Arc<Inbox>>,
}

impl LoopDial {
    /// Dials onto `event_loop`, the running loop of this thread.
    pub(crate) fn new(event_loop: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(Self { home: Mutex::new(Inbox::of(event_loop)?) })
    }

    /// The loop a new connection belongs to: the home loop until it is closed, then the loop
    /// this thread runs (the new home), else none (tokio then runs the connection).
    fn pick(&self) -> Option<Arc<Inbox>> {
        let mut home = self.home.lock().unwrap_or_else(PoisonError::into_inner);
        if home.is_alive() {
            return Some(home.clone());
        }
        let here = Inbox::here()?;
        *home = here.clone();
        Some(here)
    }
}

impl Net for LoopDial {
    fn connect_tcp(&self, host: &str, port: u16, timeout: Duration) -> NetFuture<io::Result<Socket>> {
        let home = self.pick();
        let host = host.to_owned();
        Box::pin(async move {
            let connecting = tokio::net::TcpStream::connect((host.as_str(), port));
            let stream =
                tokio::time::timeout(timeout, connecting).await.map_err(|_| tenure::net::timed_out(timeout))??;
            stream.set_nodelay(true)?;
            let Some(home) = home else {
                return Ok(Socket::new(stream, |driver| drop(tokio::spawn(driver)), || true));
            };
            let socket = stream.into_std()?;
            socket.set_nonblocking(true)?;
            let stream = LoopStream::register(&home, socket);
            let spawn_home = home.clone();
            let spawn = move |driver| LoopTask::spawn(&spawn_home, driver);
            Ok(Socket::new(stream, spawn, move || home.is_alive()))
        })
    }

    fn connect_unix(&self, path: &Path, timeout: Duration) -> NetFuture<io::Result<Socket>> {
        // A Unix socket stays on the package's runtime (the loop's selector watches TCP only).
        let path = path.to_owned();
        Box::pin(async move {
            let connecting = tokio::net::UnixStream::connect(path);
            let stream =
                tokio::time::timeout(timeout, connecting).await.map_err(|_| tenure::net::timed_out(timeout))??;
            Ok(Socket::new(stream, |driver| drop(tokio::spawn(driver)), || true))
        })
    }

    fn sleep(&self, duration: Duration) -> NetFuture<()> {
        // On the package's runtime's timer, whoever asks (a loop's thread, a plain thread).
        let _entered = crate::tokio_handle().enter();
        Box::pin(tokio::time::sleep(duration))
    }
}

/// A socket the event loop's selector watches: its callback reads what arrives into a buffer
/// and wakes the reader; writes go straight to the (non-blocking) socket.
struct LoopStream {
    shared: Arc<Shared>,
    home: Arc<Inbox>,
}

struct Shared {
    socket: TcpStream,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    buffer: Vec<u8>,
    start: usize,
    eof: bool,
    error: Option<io::Error>,
    reader: Option<Waker>,
    writer: Option<Waker>,
}

impl Shared {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl LoopStream {
    /// Watches `socket` on `home`'s loop (from its thread, or posted there).
    fn register(home: &Arc<Inbox>, socket: TcpStream) -> Self {
        let stream =
            Self { shared: Arc::new(Shared { socket, state: Mutex::new(State::default()) }), home: home.clone() };
        let readable = Readable(stream.shared.clone());
        stream.on_loop(move |_, event_loop| {
            let fd = readable.0.socket.as_raw_fd();
            event_loop.call_method1("add_reader", (fd, readable)).map(drop)
        });
        stream
    }

    /// Runs `f` with the loop on its thread: now if this is it, else posted there.
    fn on_loop(&self, f: impl FnOnce(Python<'_>, &Bound<'_, PyAny>) -> PyResult<()> + Send + 'static) {
        if thread::current().id() != self.home.thread {
            self.home.post(Item::Call(Box::new(f)));
            return;
        }
        with_python(|py| {
            let done = py.import("asyncio").and_then(|a| a.call_method0("get_running_loop")).and_then(|l| f(py, &l));
            if let Err(e) = done {
                tracing::debug!(error = %e, "a socket's event loop call failed");
            }
        });
    }
}

/// The selector's callback for a readable socket.
#[pyclass(frozen, module = "tenure._tenure")]
struct Readable(Arc<Shared>);

#[pymethods]
impl Readable {
    fn __call__(&self, py: Python<'_>) -> PyResult<()> {
        let shared = &self.0;
        let mut state = shared.state();
        let mut chunk = [0u8; 16 * 1024];
        let stop = loop {
            match (&shared.socket).read(&mut chunk) {
                Ok(0) => {
                    state.eof = true;
                    break true;
                }
                Ok(n) => state.buffer.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    state.error = Some(e);
                    break true;
                }
            }
        };
        let reader = state.reader.take();
        drop(state);
        if stop {
            let event_loop = py.import("asyncio")?.call_method0("get_running_loop")?;
            event_loop.call_method1("remove_reader", (shared.socket.as_raw_fd(),))?;
        }
        if let Some(reader) = reader {
            scope(|| reader.wake());
        }
        Ok(())
    }
}

/// The selector's callback for a writable socket (after a write would have blocked).
#[pyclass(frozen, module = "tenure._tenure")]
struct Writable(Arc<Shared>);

#[pymethods]
impl Writable {
    fn __call__(&self, py: Python<'_>) -> PyResult<()> {
        let event_loop = py.import("asyncio")?.call_method0("get_running_loop")?;
        event_loop.call_method1("remove_writer", (self.0.socket.as_raw_fd(),))?;
        let writer = self.0.state().writer.take();
        if let Some(writer) = writer {
            scope(|| writer.wake());
        }
        Ok(())
    }
}

impl AsyncRead for LoopStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let mut state = self.shared.state();
        if state.start < state.buffer.len() {
            let n = buf.remaining().min(state.buffer.len() - state.start);
            let start = state.start;
            buf.put_slice(&state.buffer[start..start + n]);
            state.start += n;
            if state.start == state.buffer.len() {
                state.buffer.clear();
                state.buffer.shrink_to(KEPT_BUFFER);
                state.start = 0;
            }
            return Poll::Ready(Ok(()));
        }
        if let Some(e) = &state.error {
            // Every read from now on fails alike.
            return Poll::Ready(Err(io::Error::new(e.kind(), e.to_string())));
        }
        if state.eof {
            return Poll::Ready(Ok(()));
        }
        state.reader = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl AsyncWrite for LoopStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        loop {
            match (&self.shared.socket).write(buf) {
                Ok(n) => return Poll::Ready(Ok(n)),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        self.shared.state().writer = Some(cx.waker().clone());
        let shared = self.shared.clone();
        self.on_loop(move |_, event_loop| {
            let fd = shared.socket.as_raw_fd();
            event_loop.call_method1("add_writer", (fd, Writable(shared))).map(drop)
        });
        Poll::Pending
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        let _ = self.shared.socket.shutdown(Shutdown::Write);
        Poll::Ready(Ok(()))
    }
}

impl Drop for LoopStream {
    /// Stops watching the socket on the loop's thread, then closes it: the descriptor stays
    /// open until the selector let go of it, so a new socket reusing the number is never hit.
    fn drop(&mut self) {
        let _ = self.shared.socket.shutdown(Shutdown::Both);
        let shared = self.shared.clone();
        self.on_loop(move |_, event_loop| {
            let fd = shared.socket.as_raw_fd();
            event_loop.call_method1("remove_reader", (fd,))?;
            event_loop.call_method1("remove_writer", (fd,)).map(drop)
        });
    }
}
