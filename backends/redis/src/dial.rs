//! A connection on the runtime the backend was handed ([`Net`]): its socket and its timer come
//! from there — a runtime crate's, or a host's own event loop (the Python package puts the
//! socket in its asyncio loop's selector). The connection itself is a [`Wire`]: each call's task
//! writes and reads the socket, and the listener, run where the socket says, reads pushes.
//!
//! The connection is dialed on first use and again after it breaks (a server restart, or the
//! host's loop gone, as the socket's liveness check tells); a redial re-subscribes nothing by
//! itself, so it marks every release channel unsubscribed and wakes every waiter, whose next
//! attempt subscribes afresh.
//!
//! Behind Sentinel ([`crate::sentinel`]) each dial asks the sentinels for the master, each
//! request is preceded by a `ROLE` check, and a connection is dropped when its server says it is
//! a replica, answers `READONLY` (demoted by a failover) or lets a command time out (frozen, or
//! cut off while the sentinels promote another).

use std::io;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::{Cmd, ErrorKind, Pipeline, RedisConnectionInfo, RedisError, RedisFuture, RedisResult, Value};
use tenure::net::{Net, within};

use crate::sentinel::{self, Sentinels};
use crate::tls::Tls;
use crate::wake::Subscriptions;
use crate::wire::{Pushes, Wire};

/// The live connection of a [`Dialed`].
#[derive(Clone)]
struct Live {
    wire: Arc<Wire>,
    alive: Arc<dyn Fn() -> bool + Send + Sync>,
}

/// A connection dialed through a [`Net`] on first use and after each drop.
pub(crate) struct Dialed {
    net: Arc<dyn Net>,
    target: Target,
    info: RedisConnectionInfo,
    pushes: Pushes,
    connect_timeout: Duration,
    command_timeout: Duration,
    tls: Option<Tls>,
    subscriptions: Arc<Subscriptions>,
    live: Mutex<(Option<Live>, u64)>,
    dialing: tokio::sync::Mutex<()>,
}

/// Where a [`Dialed`] connects.
pub(crate) enum Target {
    Server {
        host: String,
        port: u16,
    },
    /// The master the sentinels name at each dial.
    Sentinels(Sentinels),
}

/// `ROLE`, as a request on the wire.
const ROLE: &[u8] = b"*1\r\n$4\r\nROLE\r\n";

/// What a [`Dialed`] is opened with.
pub(crate) struct Dial {
    pub(crate) target: Target,
    pub(crate) info: RedisConnectionInfo,
    pub(crate) connect_timeout: Duration,
    pub(crate) command_timeout: Duration,
    /// TLS to the sentinels and the master (`rediss+sentinel://`).
    pub(crate) tls: Option<Tls>,
}

impl Dialed {
    pub(crate) fn new(net: Arc<dyn Net>, dial: Dial, subscriptions: Arc<Subscriptions>) -> Self {
        let Dial { target, info, connect_timeout, command_timeout, tls } = dial;
        Self {
            net,
            target,
            info,
            pushes: Arc::new(Subscriptions::push_sender(&subscriptions)),
            connect_timeout,
            command_timeout,
            tls,
            subscriptions,
            live: Mutex::new((None, 0)),
            dialing: tokio::sync::Mutex::new(()),
        }
    }

    fn current(&self) -> Option<Live> {
        let live = self.live.lock().unwrap_or_else(PoisonError::into_inner).0.clone();
        live.filter(|l| (l.alive)() && !l.wire.is_broken())
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
        let (host, port) = match &self.target {
            Target::Server { host, port } => (host.clone(), *port),
            Target::Sentinels(sentinels) => {
                sentinel::master_address(&self.net, sentinels, self.tls.as_ref(), self.connect_timeout).await?
            }
        };
        let socket = sentinel::connect(&self.net, &host, port, self.tls.as_ref(), self.connect_timeout).await?;
        let wire = Wire::new(socket.stream, self.pushes.clone());
        (socket.spawn)(Box::pin(Wire::listen(&wire)));
        let master = self.behind_sentinels().map(|name| (name, format!("{host}:{port}")));
        within(&*self.net, self.connect_timeout, handshake(&wire, &self.info, master))
            .await
            .ok_or_else(|| RedisError::from((ErrorKind::Io, "the connection's handshake timed out")))??;
        let mut slot = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        slot.1 += 1;
        let live = Live { wire, alive: socket.alive };
        slot.0 = Some(live.clone());
        let redialed = slot.1 > 1;
        drop(slot);
        if redialed {
            self.subscriptions.redialed();
        }
        Ok(live)
    }

    /// The master's name, behind Sentinel.
    fn behind_sentinels(&self) -> Option<&str> {
        match &self.target {
            Target::Sentinels(sentinels) => Some(&sentinels.master),
            Target::Server { .. } => None,
        }
    }

    /// Runs one request on the live connection within the command timeout. A timeout leaves
    /// the connection to a server as it is: a slow or frozen server keeps it (its late replies
    /// are read and discarded), and a redial would only wake every waiter for nothing.
    ///
    /// Behind Sentinel every request (but a subscription's) goes after a `ROLE` in the same
    /// write: a server demoted since the dial answers reads from stale data and writes with
    /// `READONLY`, so its answer is not taken. A demotion, a `READONLY` or a timeout drops the
    /// connection: the sentinels may have promoted another server, which the next call asks them
    /// for.
    async fn run(
        &self,
        write: impl FnOnce(&mut Vec<u8>) + Unpin,
        replies: usize,
        confirmations: bool,
    ) -> RedisResult<Vec<Value>> {
        let live = self.connection().await?;
        let check = self.behind_sentinels().is_some() && !confirmations;
        let write = move |out: &mut Vec<u8>| {
            if check {
                out.extend_from_slice(ROLE);
            }
            write(out);
        };
        let request = live.wire.request(write, replies + usize::from(check), confirmations);
        let mut result = within(&*self.net, self.command_timeout, request).await.unwrap_or_else(|| {
            let text = format!("no reply within the command timeout ({:?})", self.command_timeout);
            Err(RedisError::from(io::Error::new(io::ErrorKind::TimedOut, text)))
        });
        if self.behind_sentinels().is_none() {
            return result;
        }
        if check && let Ok(values) = &mut result {
            let role = if values.is_empty() { Value::Nil } else { values.remove(0) };
            if !sentinel::is_master(&role.extract_error()?) {
                live.wire.abandon("the server is a replica now");
                return Err(RedisError::from((
                    ErrorKind::Io,
                    "not the master",
                    "the server is a replica now (a failover); the next call asks the sentinels for the master"
                        .to_owned(),
                )));
            }
        }
        let demoted = match &result {
            Ok(values) => values.iter().any(sentinel::is_demoted_reply),
            Err(e) => e.is_timeout() || sentinel::is_demoted(e),
        };
        if demoted {
            live.wire.abandon("the server stopped answering as the master");
        }
        result
    }

    pub(crate) async fn subscribe(&self, channel: &str) -> RedisResult<()> {
        self.connection().await?.wire.subscribed();
        let cmd = redis::cmd("SUBSCRIBE").arg(channel).clone();
        confirmed(self.run(|out| cmd.write_packed_command(out), 1, true).await?)
    }

    pub(crate) async fn unsubscribe(&self, channels: &[String]) -> RedisResult<()> {
        let cmd = redis::cmd("UNSUBSCRIBE").arg(channels).clone();
        confirmed(self.run(|out| cmd.write_packed_command(out), channels.len().max(1), true).await?)
    }

    pub(crate) fn command<'a>(&'a self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let mut values = self.run(|out| cmd.write_packed_command(out), 1, false).await?;
            Ok(values.pop().unwrap_or(Value::Nil))
        })
    }

    pub(crate) fn commands<'a>(
        &'a self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let packed = pipeline.get_packed_pipeline();
            let mut values = self.run(move |out| out.extend_from_slice(&packed), offset + count, false).await?;
            Ok(values.split_off(offset.min(values.len())))
        })
    }

    pub(crate) fn db(&self) -> i64 {
        self.info.db()
    }
}

/// Subscription confirmations: the first error among them, if any.
fn confirmed(values: Vec<Value>) -> RedisResult<()> {
    values.into_iter().try_for_each(|v| v.extract_error().map(drop))
}

/// Greets the server on a new connection, in one round trip: RESP3 (with the credentials, if
/// any), the database, and the library's name (which old servers may refuse: ignored); behind
/// Sentinel (`master`: the master's name, and the address a sentinel gave for it), checks with
/// `ROLE` that the server is a master.
async fn handshake(wire: &Wire, info: &RedisConnectionInfo, master: Option<(&str, String)>) -> RedisResult<()> {
    let mut pipeline = redis::pipe();
    let hello = pipeline.cmd("HELLO").arg(3);
    if let Some(password) = info.password() {
        hello.arg("AUTH").arg(info.username().unwrap_or("default")).arg(password);
    }
    let select = info.db() != 0;
    if select {
        pipeline.cmd("SELECT").arg(info.db());
    }
    pipeline.cmd("CLIENT").arg("SETINFO").arg("LIB-NAME").arg("tenure");
    pipeline.cmd("CLIENT").arg("SETINFO").arg("LIB-VER").arg(env!("CARGO_PKG_VERSION"));
    if master.is_some() {
        pipeline.cmd("ROLE");
    }
    let packed = pipeline.get_packed_pipeline();
    let count = 3 + usize::from(select) + usize::from(master.is_some());
    let replies = wire.request(move |out| out.extend_from_slice(&packed), count, false).await?;
    let role = replies.last().filter(|_| master.is_some()).cloned();
    let mut replies = replies.into_iter();
    let hello = replies.next().unwrap_or(Value::Nil).extract_error()?;
    if !matches!(hello, Value::Map(_)) {
        return Err(RedisError::from((
            ErrorKind::Client,
            "the server does not speak RESP3 (Redis 6 or later is needed)",
        )));
    }
    if select {
        replies.next().unwrap_or(Value::Nil).extract_error()?;
    }
    let (Some(role), Some((name, address))) = (role, master) else { return Ok(()) };
    if sentinel::is_master(&role.extract_error()?) {
        return Ok(());
    }
    Err(RedisError::from((
        ErrorKind::Io,
        "not the master",
        format!("{address}, which a sentinel named as master {name:?}, is a replica (a failover is under way)"),
    )))
}
