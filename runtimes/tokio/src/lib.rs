//! # tenure-tokio
//!
//! [Tenure](tenure) on [tokio]: distributed locks with fencing tokens, task locks and leader
//! election. This crate is the [`Runtime`] implementation and type aliases; everything else is
//! re-exported from [`tenure`].
//!
//! ```
//! use tenure_tokio::{Lock, MemoryBackend, Tokio};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), tenure::Error> {
//! let lock = Lock::builder("orders", Tokio::current()).backend(MemoryBackend::new()).build()?;
//! let guard = lock.acquire().await?;
//! assert_eq!(guard.fencing_token().get(), 1);
//! guard.release().await?;
//! # Ok(()) }
//! ```

#![deny(missing_docs)]

use std::io;
use std::path::Path;
use std::time::Duration;

pub use tenure::*;
use tokio::runtime::{Handle, RuntimeFlavor};

/// The tokio runtime, as Tenure sees it: timers and background tasks on one runtime handle.
#[derive(Clone, Debug)]
pub struct Tokio {
    handle: Handle,
}

impl Tokio {
    /// The runtime of the calling task.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime, like [`Handle::current`]; use [`Tokio::try_current`] to get an
    /// error instead.
    pub fn current() -> Self {
        Self { handle: Handle::current() }
    }

    /// The runtime of the calling task, or [`Error::NotOpen`] outside one.
    pub fn try_current() -> Result<Self, Error> {
        Handle::try_current()
            .map(|handle| Self { handle })
            .map_err(|_| Error::NotOpen { what: "the tokio runtime (call from inside a tokio runtime)".into() })
    }

    /// The runtime behind `handle`.
    pub fn from_handle(handle: Handle) -> Self {
        Self { handle }
    }
}

/// A tokio runtime for a whole process that has none of its own — what the Node and JVM
/// packages run Tenure on: made on first use with two worker threads named `tenure`, and never
/// dropped (at exit its threads end with the process, so there is nothing to wait for). A
/// process that forks makes its own in the child (the Python package does).
pub fn process_runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("tenure")
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("cannot start tenure's runtime threads: {e}"))
    })
}

impl Runtime for Tokio {
    type Sleep = tokio::time::Sleep;

    fn sleep_until(&self, deadline: Timestamp) -> Self::Sleep {
        // Timers belong to a runtime's driver: create them in ours, whoever asks.
        let _entered = self.handle.enter();
        tokio::time::sleep_until(tokio::time::Instant::from_std(runtime::clock::instant(deadline)))
    }

    fn spawn<F>(&self, task: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        drop(self.handle.spawn(task));
    }

    fn blocks_runtime(&self) -> bool {
        // A current-thread runtime's one thread cannot block; a multi-thread runtime's can,
        // handing its tasks to the other workers (`block_in_place`).
        Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::CurrentThread)
    }

    fn block_on<F: std::future::Future>(&self, what: &str, work: F) -> Result<F::Output, Error> {
        match Handle::try_current() {
            Err(_) => {
                // On a plain thread: in this runtime's context, so that what the work makes on
                // the way (a store's socket, timer or reader task) finds its reactor.
                let _entered = self.handle.enter();
                Ok(futures_lite::future::block_on(work))
            }
            Ok(h) if h.runtime_flavor() == RuntimeFlavor::CurrentThread => {
                Err(Error::Deadlock { what: what.to_owned() })
            }
            Ok(_) => Ok(tokio::task::block_in_place(|| futures_lite::future::block_on(work))),
        }
    }
}

/// Stores connect with tokio's sockets and timers, and run their readers as tasks of this
/// runtime.
impl net::Net for Tokio {
    fn connect_tcp(&self, host: &str, port: u16, timeout: Duration) -> net::NetFuture<io::Result<net::Socket>> {
        let host = host.to_owned();
        // Connected by a task of this runtime, so that whoever awaits it needs no tokio context.
        self.connect(async move { connect_tcp(&host, port, timeout).await })
    }

    fn connect_unix(&self, path: &Path, timeout: Duration) -> net::NetFuture<io::Result<net::Socket>> {
        let path = path.to_owned();
        self.connect(async move {
            tokio::time::timeout(timeout, tokio::net::UnixStream::connect(path))
                .await
                .map_err(|_| net::timed_out(timeout))?
        })
    }

    fn sleep(&self, duration: Duration) -> net::NetFuture<()> {
        let _entered = self.handle.enter();
        Box::pin(tokio::time::sleep(duration))
    }
}

/// A TCP connection to `host:port` made within `timeout`, with Nagle's algorithm off: how every
/// store dials on tokio (the npm and Python packages then hand the socket to their own event
/// loop). Needs a tokio context for its timer.
pub async fn connect_tcp(host: &str, port: u16, timeout: Duration) -> io::Result<tokio::net::TcpStream> {
    let stream = tokio::time::timeout(timeout, tokio::net::TcpStream::connect((host, port)))
        .await
        .map_err(|_| net::timed_out(timeout))??;
    stream.set_nodelay(true)?;
    Ok(stream)
}

impl Tokio {
    /// Runs `connecting` as a task of this runtime; the stream's reader runs as one too.
    fn connect<S: net::Stream>(
        &self,
        connecting: impl std::future::Future<Output = io::Result<S>> + Send + 'static,
    ) -> net::NetFuture<io::Result<net::Socket>> {
        let handle = self.handle.clone();
        let task = handle.spawn(connecting);
        Box::pin(async move {
            let stream = task.await.map_err(io::Error::other)??;
            Ok(net::Socket::new(stream, move |reader| drop(handle.spawn(reader)), || true))
        })
    }
}

tenure::runtime_aliases!(Tokio);
