//! What a store's connection needs from the runtime it runs on — sockets, a timer, somewhere to
//! run the connection's reader — handed to the store when it opens, never guessed from a global
//! runtime.
//!
//! `tenure-tokio`, `tenure-smol` and `tenure-async-std` implement [`Net`] for their runtime; a
//! host with an event loop of its own (the Python package, on asyncio) implements it to keep a
//! connection on its loop's thread. Streams speak tokio's I/O traits (the traits only: any
//! runtime's socket fits through `tokio_util::compat`).

use std::future::Future;
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};

/// A boxed future of a [`Net`].
pub type NetFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// The byte stream of a store connection.
pub trait Stream: AsyncRead + AsyncWrite + Send + Unpin + 'static {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Stream for T {}

/// The sockets, timer and background tasks of a runtime, as a store's connection uses them.
pub trait Net: Send + Sync + 'static {
    /// Opens a TCP stream to `host:port` (with `TCP_NODELAY`) within `timeout`.
    fn connect_tcp(&self, host: &str, port: u16, timeout: Duration) -> NetFuture<io::Result<Socket>>;

    /// Opens a Unix-domain stream to `path` within `timeout`.
    fn connect_unix(&self, path: &Path, timeout: Duration) -> NetFuture<io::Result<Socket>>;

    /// A future that completes after `duration`, on this runtime's timer.
    fn sleep(&self, duration: Duration) -> NetFuture<()>;
}

/// A shared runtime is that runtime.
impl<T: Net + ?Sized> Net for Arc<T> {
    fn connect_tcp(&self, host: &str, port: u16, timeout: Duration) -> NetFuture<io::Result<Socket>> {
        (**self).connect_tcp(host, port, timeout)
    }

    fn connect_unix(&self, path: &Path, timeout: Duration) -> NetFuture<io::Result<Socket>> {
        (**self).connect_unix(path, timeout)
    }

    fn sleep(&self, duration: Duration) -> NetFuture<()> {
        (**self).sleep(duration)
    }
}

/// An open stream, with where its connection's reader runs and whether it still can.
pub struct Socket {
    /// The stream.
    pub stream: Box<dyn Stream>,
    /// Runs the connection's reader (the future that reads the stream) in the background.
    pub spawn: Box<dyn FnOnce(NetFuture<()>) + Send>,
    /// Whether that reader still runs (a host's loop can stop: the connection is then opened
    /// again).
    pub alive: Arc<dyn Fn() -> bool + Send + Sync>,
}

impl Socket {
    /// `stream`, whose reader `spawn` runs; `alive` answers whether it still runs.
    pub fn new(
        stream: impl Stream,
        spawn: impl FnOnce(NetFuture<()>) + Send + 'static,
        alive: impl Fn() -> bool + Send + Sync + 'static,
    ) -> Self {
        Self { stream: Box::new(stream), spawn: Box::new(spawn), alive: Arc::new(alive) }
    }
}

impl std::fmt::Debug for Socket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Socket").finish_non_exhaustive()
    }
}

/// `work`'s output, or `None` if `limit` passes first on `net`'s timer.
pub async fn within<T>(net: &dyn Net, limit: Duration, work: impl Future<Output = T>) -> Option<T> {
    let sleep = net.sleep(limit);
    futures_lite::future::or(async { Some(work.await) }, async {
        sleep.await;
        None
    })
    .await
}

/// The error of a connection not made within `timeout`.
pub fn timed_out(timeout: Duration) -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, format!("no connection within {timeout:?}"))
}
