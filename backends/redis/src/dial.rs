//! A connection on the runtime the backend was handed ([`Net`]): its socket, its timer, and the
//! task that drives it come from there — a runtime crate's, or a host's own event loop (the
//! Python package puts the socket in its asyncio loop's selector and drives the connection on
//! the loop's thread, so a command made there is written, answered and completed there).
//!
//! The connection is dialed on first use and again after it drops (a server restart, or the
//! host's loop gone, as the socket's liveness check tells); a redial re-subscribes nothing by
//! itself, so it marks every release channel unsubscribed and wakes every waiter, whose next
//! attempt subscribes afresh.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::{
    AsyncConnectionConfig, Cmd, ErrorKind, Pipeline, RedisConnectionInfo, RedisError, RedisFuture, RedisResult, Value,
};
use tenure::net::{Net, within};

use crate::wake::Subscriptions;

/// The live connection of a [`Dialed`].
#[derive(Clone)]
struct Live {
    connection: MultiplexedConnection,
    alive: Arc<dyn Fn() -> bool + Send + Sync>,
    serial: u64,
}

/// A connection dialed through a [`Net`] on first use and after each drop.
pub(crate) struct Dialed {
    net: Arc<dyn Net>,
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
        net: Arc<dyn Net>,
        (host, port): (String, u16),
        info: RedisConnectionInfo,
        config: AsyncConnectionConfig,
        connect_timeout: Duration,
        subscriptions: Arc<Subscriptions>,
    ) -> Self {
        Self {
            net,
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
        let socket = self.net.connect_tcp(&self.host, self.port, self.connect_timeout).await?;
        let handshake = MultiplexedConnection::new_with_config(&self.info, socket.stream, self.config.clone());
        let (connection, driver) = within(&*self.net, self.connect_timeout, handshake)
            .await
            .ok_or_else(|| RedisError::from((ErrorKind::Io, "the connection's handshake timed out")))??;
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
