//! A connection whose reads and writes run where its host chooses.
//!
//! A host with an event loop of its own — the Python package, on asyncio — loses a thread hop
//! each way per command when the socket lives on another runtime's reactor: the caller wakes the
//! runtime to write, the runtime wakes the caller with the reply. Through [`Dial`] the host
//! supplies the socket and runs the connection's driver itself (on its loop's thread), so a
//! command made on that thread is written, answered and completed there.
//!
//! The connection is dialed on first use and again after it drops (a server restart, or the
//! host's loop gone, as [`Socket`]'s liveness check tells); a redial re-subscribes nothing by
//! itself, so it marks every release channel unsubscribed and wakes every waiter, whose next
//! attempt subscribes afresh.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::{
    AsyncConnectionConfig, Cmd, ErrorKind, Pipeline, RedisConnectionInfo, RedisError, RedisFuture, RedisResult, Value,
};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::wake::Subscriptions;

/// A boxed future of a [`Dial`].
pub type DialFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// A byte stream a [`Dial`] opens.
pub trait Io: AsyncRead + AsyncWrite + Send + Unpin + 'static {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Io for T {}

/// Opens the sockets of a backend opened by [`crate::RedisOptions::open_dialed`].
pub trait Dial: Send + Sync + 'static {
    /// Opens a TCP stream to `host:port` within `timeout`.
    fn connect(&self, host: &str, port: u16, timeout: Duration) -> DialFuture<std::io::Result<Socket>>;

    /// A future that completes after `duration` (it bounds the connection's handshake).
    fn sleep(&self, duration: Duration) -> DialFuture<()>;
}

/// An open stream, with how its connection's driver is run and whether it still can be.
pub struct Socket {
    stream: Box<dyn Io>,
    spawn: Box<dyn FnOnce(DialFuture<()>) + Send>,
    alive: Arc<dyn Fn() -> bool + Send + Sync>,
}

impl std::fmt::Debug for Socket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Socket").finish_non_exhaustive()
    }
}

impl Socket {
    /// `stream`, whose connection's driver — the future that reads and writes it — is handed to
    /// `spawn`; `alive` answers whether that driver still runs (a host's loop can stop: the
    /// connection is then dialed again).
    pub fn new(
        stream: impl Io,
        spawn: impl FnOnce(DialFuture<()>) + Send + 'static,
        alive: impl Fn() -> bool + Send + Sync + 'static,
    ) -> Self {
        Self { stream: Box::new(stream), spawn: Box::new(spawn), alive: Arc::new(alive) }
    }
}

/// The live connection of a [`Dialed`].
#[derive(Clone)]
struct Live {
    connection: MultiplexedConnection,
    alive: Arc<dyn Fn() -> bool + Send + Sync>,
    serial: u64,
}

/// A connection dialed through a [`Dial`] on first use and after each drop.
pub(crate) struct Dialed {
    dial: Arc<dyn Dial>,
    host: String,
    port: u16,
    info: RedisConnectionInfo,
    config: AsyncConnectionConfig,
    connect_timeout: Duration,
    subscriptions: Arc<Subscriptions>,
    live: Mutex<(Option<Live>, u64)>,
    dialing: tokio::sync::Mutex<()>,
}

impl Dialed {
    #[allow(clippy::too_many_arguments)] // one constructor, called once
    pub(crate) fn new(
        dial: Arc<dyn Dial>,
        (host, port): (String, u16),
        info: RedisConnectionInfo,
        config: AsyncConnectionConfig,
        connect_timeout: Duration,
        subscriptions: Arc<Subscriptions>,
    ) -> Self {
        Self {
            dial,
            host,
            port,
            info,
            config,
            connect_timeout,
            subscriptions,
            live: Mutex::new((None, 0)),
            dialing: tokio::sync::Mutex::new(()),
        }
    }

    fn current(&self) -> Option<Live> {
        let live = self.live.lock().unwrap_or_else(PoisonError::into_inner).0.clone();
        live.filter(|l| (l.alive)())
    }

    /// The live connection, dialed if there is none (one dial at a time).
    async fn connection(&self) -> RedisResult<Live> {
        if let Some(live) = self.current() {
            return Ok(live);
        }
        let _dialing = self.dialing.lock().await;
        if let Some(live) = self.current() {
            return Ok(live);
        }
        let socket = self.dial.connect(&self.host, self.port, self.connect_timeout).await?;
        let handshake = MultiplexedConnection::new_with_config(&self.info, socket.stream, self.config.clone());
        let sleep = self.dial.sleep(self.connect_timeout);
        let timed_out = async {
            sleep.await;
            Err(RedisError::from((ErrorKind::Io, "the connection's handshake timed out")))
        };
        let (connection, driver) = futures_lite::future::or(handshake, timed_out).await?;
        (socket.spawn)(Box::pin(driver));
        let mut slot = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        slot.1 += 1;
        let live = Live { connection, alive: socket.alive, serial: slot.1 };
        slot.0 = Some(live.clone());
        let redialed = slot.1 > 1;
        drop(slot);
        if redialed {
            self.subscriptions.redialed();
        }
        Ok(live)
    }

    /// Drops `live` if `error` says its connection is gone, so the next call dials again. A
    /// timeout does not (the redis crate reports it as an I/O error): a slow or frozen server
    /// keeps its connection, and a redial would only wake every waiter for nothing.
    fn check(&self, live: &Live, error: &RedisError) {
        if error.is_timeout() {
            return;
        }
        if error.is_connection_dropped() || error.is_io_error() || error.is_unrecoverable_error() {
            let mut slot = self.live.lock().unwrap_or_else(PoisonError::into_inner);
            if slot.0.as_ref().is_some_and(|l| l.serial == live.serial) {
                slot.0 = None;
            }
        }
    }

    pub(crate) async fn subscribe(&self, channel: &str) -> RedisResult<()> {
        let live = self.connection().await?;
        let done = live.connection.clone().subscribe(channel).await;
        done.inspect_err(|e| self.check(&live, e))
    }

    pub(crate) async fn unsubscribe(&self, channels: &[String]) -> RedisResult<()> {
        let live = self.connection().await?;
        let done = live.connection.clone().unsubscribe(channels).await;
        done.inspect_err(|e| self.check(&live, e))
    }

    pub(crate) fn command<'a>(&'a self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let live = self.connection().await?;
            let done = live.connection.clone().req_packed_command(cmd).await;
            done.inspect_err(|e| self.check(&live, e))
        })
    }

    pub(crate) fn commands<'a>(
        &'a self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let live = self.connection().await?;
            let done = live.connection.clone().req_packed_commands(pipeline, offset, count).await;
            done.inspect_err(|e| self.check(&live, e))
        })
    }

    pub(crate) fn db(&self) -> i64 {
        self.info.db()
    }
}
