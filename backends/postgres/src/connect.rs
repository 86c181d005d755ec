//! One connection: the socket (from the runtime the backend was handed, [`Net`]), TLS, the
//! startup handshake, the task that reads the server's messages (and hands on its
//! notifications), and the prepared statements.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;

use rustls::ClientConfig;
use tenure::net::{Net, Socket};
use tenure_core::{BackendError, BackendErrorKind};
use tokio_postgres::config::Host;
use tokio_postgres::{AsyncMessage, Client, Config, Statement};

use crate::options::{PostgresOptions, SslMode};
use crate::sql::Texts;
use crate::tls::Connector;

/// What the connection's reader calls: with `(channel, payload)` for a notification, and with
/// `None` when the connection ends.
pub(crate) type Listener = Arc<dyn Fn(Option<(&str, &str)>) + Send + Sync>;

/// A connected session and its prepared statements.
pub(crate) struct Session {
    pub(crate) client: Client,
    /// Whether the connection's reader still runs (a host's event loop can stop under it).
    alive: Alive,
    /// It LISTENs for releases (see [`Session::listen`]).
    listening: AtomicBool,
    pub(crate) lock_acquire: Statement,
    pub(crate) lock_acquire_queued: Statement,
    pub(crate) lock_release: Statement,
    pub(crate) lock_locked: Statement,
    pub(crate) lock_owned: Statement,
    pub(crate) leader_acquire: Statement,
    pub(crate) leader_release: Statement,
    pub(crate) leader_get: Statement,
    pub(crate) schedule_claim: Statement,
    pub(crate) schedule_last_fired: Statement,
    /// The read-write lock statements, prepared at the connection's first read-write call.
    pub(crate) rw: tokio::sync::OnceCell<crate::rw::Statements>,
    /// The semaphore statements, prepared at the connection's first semaphore call.
    pub(crate) sem: tokio::sync::OnceCell<crate::sem::Statements>,
}

/// Whether a connection's reader still runs.
pub(crate) type Alive = Arc<dyn Fn() -> bool + Send + Sync>;

/// A connection made, before its statements are prepared.
pub(crate) struct Connected {
    pub(crate) client: Client,
    alive: Alive,
}

impl Session {
    /// Whether the session can still carry calls: its connection is open and read.
    pub(crate) fn is_live(&self) -> bool {
        !self.client.is_closed() && (self.alive)()
    }

    /// LISTENs for releases and for this backend's grants on this session (`listen`, from
    /// [`Texts`]), once: called before the first attempt that has a waiter behind it, and
    /// awaited, so every release or hand-off committed after the attempt is heard.
    pub(crate) async fn listen(&self, listen: &str) -> Result<(), tokio_postgres::Error> {
        if !self.listening.load(Ordering::SeqCst) {
            sent(self.client.batch_execute(listen)).await?;
            self.listening.store(true, Ordering::SeqCst);
        }
        Ok(())
    }
}

/// Connects to the first host of `options` that answers, runs the startup handshake, starts
/// the reader.
pub(crate) async fn connect(
    net: &dyn Net,
    options: &PostgresOptions,
    tls: Option<&Arc<ClientConfig>>,
    listener: Listener,
) -> Result<Connected, BackendError> {
    let config = &options.config;
    let hosts = config.get_hosts();
    let ports = config.get_ports();
    let mut last = None;
    for (i, host) in hosts.iter().enumerate() {
        let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
        match connect_one(net, options, host, port, tls, listener.clone()).await {
            Ok(connected) => return Ok(connected),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| BackendError::new(BackendErrorKind::Unavailable, "the URL names no host")))
}

async fn connect_one(
    net: &dyn Net,
    options: &PostgresOptions,
    host: &Host,
    port: u16,
    tls: Option<&Arc<ClientConfig>>,
    listener: Listener,
) -> Result<Connected, BackendError> {
    let shown = options.shown_url();
    let unreachable = |what: String| BackendError::new(BackendErrorKind::Unavailable, what);
    let timeout = options.connect_timeout;
    let (socket, tls_host): (Socket, String) = match host {
        Host::Tcp(name) => {
            let socket = net
                .connect_tcp(name, port, timeout)
                .await
                .map_err(|e| unreachable(format!("cannot connect to PostgreSQL at {name}:{port} ({shown}): {e}")))?;
            (socket, name.clone())
        }
        Host::Unix(dir) => {
            let path = dir.join(format!(".s.PGSQL.{port}"));
            let socket = net.connect_unix(&path, timeout).await.map_err(|e| {
                unreachable(format!("cannot connect to PostgreSQL at {} ({shown}): {e}", path.display()))
            })?;
            (socket, String::new())
        }
    };
    let Socket { stream, spawn, alive } = socket;
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
    spawn(Box::pin(reader));
    Ok(Connected { client, alive })
}

/// Prepares the statements on `client`.
pub(crate) async fn prepare(connected: Connected, texts: &Texts) -> Result<Session, tokio_postgres::Error> {
    let Connected { client, alive } = connected;
    Ok(Session {
        alive,
        listening: AtomicBool::new(false),
        lock_acquire: sent(client.prepare(&texts.lock_acquire)).await?,
        lock_acquire_queued: sent(client.prepare(&texts.lock_acquire_queued)).await?,
        lock_release: sent(client.prepare(&texts.lock_release)).await?,
        lock_locked: sent(client.prepare(&texts.lock_locked)).await?,
        lock_owned: sent(client.prepare(&texts.lock_owned)).await?,
        leader_acquire: sent(client.prepare(&texts.leader_acquire)).await?,
        leader_release: sent(client.prepare(&texts.leader_release)).await?,
        leader_get: sent(client.prepare(&texts.leader_get)).await?,
        schedule_claim: sent(client.prepare(&texts.schedule_claim)).await?,
        schedule_last_fired: sent(client.prepare(&texts.schedule_last_fired)).await?,
        rw: tokio::sync::OnceCell::new(),
        sem: tokio::sync::OnceCell::new(),
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
