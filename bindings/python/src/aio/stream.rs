//! Sockets the event loop's selector watches, for the connections of the network stores (Redis,
//! PostgreSQL): the package hands its loop to them as their runtime ([`Net`]).

use std::io;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::Duration;

use pyo3::prelude::*;
use tenure::host::{Home, LoopStream, Watch, Watched, Work, loop_socket, scope};
use tenure::net::{Net, NetFuture, Socket};

use super::task::{Inbox, with_loop};
use tenure_tokio::Tokio;

use crate::bridge::with_python;

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
            let stream = tenure_tokio::connect_tcp(&host, port, timeout).await?;
            let Some(home) = home else {
                return Ok(Socket::new(stream, |driver| drop(tokio::spawn(driver)), || true));
            };
            loop_socket(home, stream.into_std()?, register, Inbox::is_alive)
        })
    }

    /// A Unix socket stays on the package's runtime (the loop's selector watches TCP only).
    fn connect_unix(&self, path: &Path, timeout: Duration) -> NetFuture<io::Result<Socket>> {
        Tokio::from_handle(crate::tokio_handle()).connect_unix(path, timeout)
    }

    /// On the package's runtime's timer, whoever asks (a loop's thread, a plain thread).
    fn sleep(&self, duration: Duration) -> NetFuture<()> {
        Tokio::from_handle(crate::tokio_handle()).sleep(duration)
    }
}

/// How the event loop's selector watches a socket: its `Readable` callback reads what arrives
/// into the buffer, a `Writable` one waits for room after a write would have blocked.
struct SelectorWatch {
    shared: Arc<Watched>,
    home: Arc<Inbox>,
}

/// Watches `socket` on `home`'s loop (from its thread, or posted there).
fn register(home: &Arc<Inbox>, socket: TcpStream) -> LoopStream<SelectorWatch> {
    let watch = SelectorWatch { shared: Arc::new(Watched::new(socket)), home: home.clone() };
    let readable = Readable(watch.shared.clone());
    watch.on_loop(move |_, event_loop| {
        let fd = readable.0.socket().as_raw_fd();
        event_loop.call_method1("add_reader", (fd, readable)).map(drop)
    });
    LoopStream::new(watch)
}

impl SelectorWatch {
    /// Runs `f` with the loop on its thread: now if this is it, else posted there.
    fn on_loop(&self, f: impl FnOnce(Python<'_>, &Bound<'_, PyAny>) -> PyResult<()> + Send + 'static) {
        if thread::current().id() != self.home.thread {
            self.home.post(Work::Call(with_loop(Box::new(f))));
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

impl Watch for SelectorWatch {
    fn watched(&self) -> &Watched {
        &self.shared
    }

    fn want_write(&self) {
        let shared = self.shared.clone();
        self.on_loop(move |_, event_loop| {
            let fd = shared.socket().as_raw_fd();
            event_loop.call_method1("add_writer", (fd, Writable(shared))).map(drop)
        });
    }

    /// The selector lets go of the descriptor before the last reference closes it.
    fn stop(&self) {
        let shared = self.shared.clone();
        self.on_loop(move |_, event_loop| {
            let fd = shared.socket().as_raw_fd();
            event_loop.call_method1("remove_reader", (fd,))?;
            event_loop.call_method1("remove_writer", (fd,)).map(drop)
        });
    }
}

/// The selector's callback for a readable socket.
#[pyclass(frozen, module = "tenure._tenure")]
struct Readable(Arc<Watched>);

#[pymethods]
impl Readable {
    fn __call__(&self, py: Python<'_>) -> PyResult<()> {
        let mut stop = false;
        scope(|| stop = self.0.read_ready());
        if stop {
            let event_loop = py.import("asyncio")?.call_method0("get_running_loop")?;
            event_loop.call_method1("remove_reader", (self.0.socket().as_raw_fd(),))?;
        }
        Ok(())
    }
}

/// The selector's callback for a writable socket (after a write would have blocked).
#[pyclass(frozen, module = "tenure._tenure")]
struct Writable(Arc<Watched>);

#[pymethods]
impl Writable {
    fn __call__(&self, py: Python<'_>) -> PyResult<()> {
        let event_loop = py.import("asyncio")?.call_method0("get_running_loop")?;
        event_loop.call_method1("remove_writer", (self.0.socket().as_raw_fd(),))?;
        scope(|| self.0.write_ready());
        Ok(())
    }
}
