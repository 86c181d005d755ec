//! One connection: the socket (on tokio when the caller runs on tokio, else on async-io, which
//! serves smol, async-std or no runtime at all), TLS, the startup handshake, the task that reads
//! the server's messages (and hands on its notifications), and the prepared statements.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;
use std::time::Duration;

use rustls::ClientConfig;
use tenure_core::{BackendError, BackendErrorKind};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_postgres::config::Host;
use tokio_postgres::{AsyncMessage, Client, Config, Statement};
use tokio_util::compat::FuturesAsyncReadCompatExt as _;

use crate::options::{PostgresOptions, SslMode};
use crate::sql::{LISTEN, Texts};
use crate::tls::Connector;

/// A byte stream to the server.
trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

/// What the connection's reader calls: with `(channel, payload)` for a notification, and with
/// `None` when the connection ends.
pub(crate) type Listener = Arc<dyn Fn(Option<(&str, &str)>) + Send + Sync>;

/// A connected session and its prepared statements.
pub(crate) struct Session {
    pub(crate) client: Client,
    /// It LISTENs for releases (see [`Session::listen`]).
    listening: AtomicBool,
    pub(crate) lock_acquire: Statement,
    pub(crate) lock_release: Statement,
    pub(crate) lock_locked: Statement,
    pub(crate) lock_owned: Statement,
    pub(crate) leader_acquire: Statement,
    pub(crate) leader_release: Statement,
    pub(crate) leader_get: Statement,
    pub(crate) schedule_claim: Statement,
    pub(crate) schedule_last_fired: Statement,
}

impl Session {
    /// LISTENs for releases on this session, once: called before the first attempt that has a
    /// waiter behind it, and awaited, so every release committed after the attempt is heard.
    pub(crate) async fn listen(&self) -> Result<(), tokio_postgres::Error> {
        if !self.listening.load(Ordering::SeqCst) {
            sent(self.client.batch_execute(LISTEN)).await?;
            self.listening.store(true, Ordering::SeqCst);
        }
        Ok(())
    }
}

/// Runs `work`, giving up after `limit`: on tokio's timer inside a tokio runtime, else on
/// async-io's.
pub(crate) async fn within<T>(limit: Duration, work: impl Future<Output = T>) -> Option<T> {
    if tokio::runtime::Handle::try_current().is_ok() {
        tokio::time::timeout(limit, work).await.ok()
    } else {
        futures_lite::future::or(async { Some(work.await) }, async {
            async_io::Timer::after(limit).await;
            None
        })
        .await
    }
}

/// Connects to the first host of `options` that answers, runs the startup handshake, starts
/// the reader.
pub(crate) async fn connect(
    options: &PostgresOptions,
    tls: Option<&Arc<ClientConfig>>,
    listener: Listener,
) -> Result<Client, BackendError> {
    let config = &options.config;
    let hosts = config.get_hosts();
    let ports = config.get_ports();
    let mut last = None;
    for (i, host) in hosts.iter().enumerate() {
        let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
        match connect_one(options, host, port, tls, listener.clone()).await {
            Ok(client) => return Ok(client),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| BackendError::new(BackendErrorKind::Unavailable, "the URL names no host")))
}

async fn connect_one(
    options: &PostgresOptions,
    host: &Host,
    port: u16,
    tls: Option<&Arc<ClientConfig>>,
    listener: Listener,
) -> Result<Client, BackendError> {
    let shown = options.shown_url();
    let unreachable = |what: String| BackendError::new(BackendErrorKind::Unavailable, what);
    let (stream, tls_host): (Box<dyn Io>, String) = match host {
        Host::Tcp(name) => {
            let stream = tcp(name, port)
                .await
                .map_err(|e| unreachable(format!("cannot connect to PostgreSQL at {name}:{port} ({shown}): {e}")))?;
            (stream, name.clone())
        }
        Host::Unix(dir) => {
            let path = dir.join(format!(".s.PGSQL.{port}"));
            let stream = unix(&path).await.map_err(|e| {
                unreachable(format!("cannot connect to PostgreSQL at {} ({shown}): {e}", path.display()))
            })?;
            (stream, String::new())
        }
    };
    let mut config: Config = options.config.clone();
    config.ssl_mode(match (options.ssl_mode, host) {
        // libpq does not use TLS over a Unix socket either.
        (SslMode::Disable, _) | (_, Host::Unix(_)) => tokio_postgres::config::SslMode::Disable,
        (SslMode::Prefer, _) => tokio_postgres::config::SslMode::Prefer,
        _ => tokio_postgres::config::SslMode::Require,
    });
    if let Some(timeout) = options.statement_timeout {
        let set = format!("-c statement_timeout={}", timeout.as_millis());
        let all = config.get_options().map_or(set.clone(), |o| format!("{o} {set}"));
        config.options(&all);
    }
    let connector = Connector { config: tls.cloned(), host: tls_host };
    let (client, mut connection) = sent(config.connect_raw(stream, connector)).await.map_err(|e| {
        let kind = if e.as_db_error().is_some() { BackendErrorKind::Rejected } else { BackendErrorKind::Unavailable };
        BackendError::new(kind, format!("cannot connect to PostgreSQL at {shown}: {}", crate::describe(&e)))
    })?;
    let reader = async move {
        let end = futures_lite::future::poll_fn(|cx| {
            loop {
                match connection.poll_message(cx) {
                    Poll::Ready(Some(Ok(AsyncMessage::Notification(n)))) => {
                        listener(Some((n.channel(), n.payload())));
                    }
                    Poll::Ready(Some(Ok(AsyncMessage::Notice(notice)))) => {
                        tracing::debug!(notice = %notice, "PostgreSQL notice");
                    }
                    Poll::Ready(Some(Ok(_))) => {}
                    Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(e)),
                    Poll::Ready(None) => return Poll::Ready(None),
                    Poll::Pending => return Poll::Pending,
                }
            }
        })
        .await;
        if let Some(e) = end {
            tracing::debug!(error = %e, "PostgreSQL connection ended");
        }
        listener(None);
    };
    spawn(reader).map_err(|e| unreachable(format!("cannot start the PostgreSQL connection's reader: {e}")))?;
    Ok(client)
}

/// Prepares the statements on `client`.
pub(crate) async fn prepare(client: Client, texts: &Texts) -> Result<Session, tokio_postgres::Error> {
    Ok(Session {
        listening: AtomicBool::new(false),
        lock_acquire: sent(client.prepare(&texts.lock_acquire)).await?,
        lock_release: sent(client.prepare(&texts.lock_release)).await?,
        lock_locked: sent(client.prepare(&texts.lock_locked)).await?,
        lock_owned: sent(client.prepare(&texts.lock_owned)).await?,
        leader_acquire: sent(client.prepare(&texts.leader_acquire)).await?,
        leader_release: sent(client.prepare(&texts.leader_release)).await?,
        leader_get: sent(client.prepare(&texts.leader_get)).await?,
        schedule_claim: sent(client.prepare(&texts.schedule_claim)).await?,
        schedule_last_fired: sent(client.prepare(&texts.schedule_last_fired)).await?,
        client,
    })
}

/// A tokio-postgres future, boxed as `Send`: its `impl Future`, borrowing the client, defeats
/// the compiler's proof that a future awaiting it is `Send`.
pub(crate) fn sent<'a, T>(
    future: impl Future<Output = Result<T, tokio_postgres::Error>> + Send + 'a,
) -> crate::Query<'a, T> {
    Box::pin(future)
}

async fn tcp(host: &str, port: u16) -> std::io::Result<Box<dyn Io>> {
    if tokio::runtime::Handle::try_current().is_ok() {
        let stream = tokio::net::TcpStream::connect((host, port)).await?;
        stream.set_nodelay(true)?;
        Ok(Box::new(stream))
    } else {
        let stream = async_net::TcpStream::connect((host, port)).await?;
        stream.set_nodelay(true)?;
        Ok(Box::new(stream.compat()))
    }
}

async fn unix(path: &std::path::Path) -> std::io::Result<Box<dyn Io>> {
    if tokio::runtime::Handle::try_current().is_ok() {
        Ok(Box::new(tokio::net::UnixStream::connect(path).await?))
    } else {
        Ok(Box::new(async_net::unix::UnixStream::connect(path).await?.compat()))
    }
}

/// Runs the connection's reader: on the caller's tokio runtime, else on a thread of its own
/// (driven by async-io, so it serves any runtime).
fn spawn(reader: impl Future<Output = ()> + Send + 'static) -> std::io::Result<()> {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => {
            handle.spawn(reader);
            Ok(())
        }
        Err(_) => std::thread::Builder::new()
            .name("tenure-postgres".into())
            .spawn(move || async_io::block_on(reader))
            .map(drop),
    }
}
