//! `tenure exporter`: what a store holds, served in the Prometheus text format for operators
//! whose services are not instrumented (as `redis_exporter` serves Redis). Every scrape reads the
//! store once — locks, task locks, read-write locks, semaphores and elections under `--prefix` —
//! bounded by `--timeout`; a store that cannot be read answers `tenure_store_up 0` and the
//! exporter keeps serving, opening the store again at the next scrape.

mod http;
mod render;

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use tokio::net::TcpListener;
use tokio::sync::{Mutex, OwnedSemaphorePermit};

use crate::listing::{self, Snapshot};
use crate::store::{self, Store, StoreKind};
use crate::{EXIT_USAGE, Failure, say};

/// The longest a read of the store may take unless `--timeout` says otherwise.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most connections served at once; more are closed at once.
const CONNECTIONS: usize = 64;
/// The most names shown unless `--max-names` says otherwise.
const DEFAULT_MAX_NAMES: u32 = 10_000;

#[derive(Args, Debug)]
pub(crate) struct ExporterArgs {
    /// Where to serve: HOST:PORT (127.0.0.1:9477; 0.0.0.0:9477 for every interface; port 0 picks
    /// a free one, printed at start). Metrics at /metrics.
    #[arg(long, value_name = "ADDR")]
    pub(crate) listen: String,
    /// Show only the names that start with PREFIX (the name after its kind: `cart` shows
    /// lock:cart-1 and semaphore:cart).
    #[arg(long, value_name = "PREFIX", default_value = "")]
    pub(crate) prefix: String,
    /// Give up on a read of the store after S seconds (default 10) and answer tenure_store_up 0.
    #[arg(long, value_name = "S", value_parser = crate::seconds, allow_negative_numbers = true)]
    pub(crate) timeout: Option<Duration>,
    /// Show at most N names (default 10000; the rest are counted in tenure_store_names_omitted;
    /// elections first, then locks, then read-write locks and semaphores): every name is a label
    /// value, and a Prometheus server stores every series it is shown.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_NAMES, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_names: u32,
}

/// What every connection shares: the store (opened again after a failure) and the settings.
struct Exporter {
    backend: Option<String>,
    store: Mutex<Option<Store>>,
    prefix: String,
    timeout: Duration,
    max_names: usize,
}

pub(crate) async fn run(backend: Option<&str>, args: ExporterArgs) -> Result<i32, Failure> {
    let url = store::url(backend)?;
    if store::target(&url)?.kind() == StoreKind::Memory {
        return Err(Failure::usage("memory: holds nothing outside the process that uses it; give a shared store"));
    }
    let listener = TcpListener::bind(&args.listen)
        .await
        .map_err(|e| Failure::usage(format!("--listen {}: cannot listen there: {e}", args.listen)))?;
    let address = listener.local_addr().map_err(|e| Failure::usage(format!("--listen {}: {e}", args.listen)))?;
    let exporter = Arc::new(Exporter {
        backend: backend.map(str::to_owned),
        store: Mutex::new(None),
        prefix: args.prefix,
        timeout: args.timeout.unwrap_or(DEFAULT_TIMEOUT),
        max_names: usize::try_from(args.max_names).unwrap_or(usize::MAX),
    });
    // Open now, to say at once when the store cannot be reached (the exporter serves anyway).
    if let Err(e) = exporter.open().await {
        if e.code == EXIT_USAGE {
            return Err(e);
        }
        say!("exporter: {} (tenure_store_up is 0 until it can be read)", e.message);
    }
    say!("exporter: serving http://{address}/metrics for {}", tenure_open::shown_url(&url));
    let connections = Arc::new(tokio::sync::Semaphore::new(CONNECTIONS));
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| Failure::store(format!("cannot watch for SIGTERM: {e}")))?;
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => match Arc::clone(&connections).try_acquire_owned() {
                    Ok(permit) => drop(tokio::spawn(serve(Arc::clone(&exporter), stream, permit))),
                    // More clients at once than any Prometheus setup makes: this one is refused.
                    Err(_) => drop(stream),
                },
                // Out of descriptors, a reset before accept: the next connection may do.
                Err(e) => say!("exporter: accept: {e}"),
            },
            _ = tokio::signal::ctrl_c() => break,
            _ = term.recv() => break,
        }
    }
    if let Some(store) = exporter.store.lock().await.take() {
        store::close(&store).await;
    }
    Ok(0)
}

async fn serve(exporter: Arc<Exporter>, mut stream: tokio::net::TcpStream, _permit: OwnedSemaphorePermit) {
    let Some((request, head_only)) = http::read(&mut stream).await else { return };
    let text = "text/plain; charset=utf-8";
    match request {
        http::Request::Metrics => {
            let body = exporter.scrape().await;
            http::answer(stream, "200 OK", "text/plain; version=0.0.4; charset=utf-8", &body, head_only).await;
        }
        http::Request::Index => {
            http::answer(stream, "200 OK", text, "tenure exporter: metrics at /metrics\n", head_only).await;
        }
        http::Request::NotFound => {
            http::answer(stream, "404 Not Found", text, "not found: try /metrics\n", head_only).await;
        }
        http::Request::Refused(status) => http::answer(stream, status, text, "GET /metrics\n", head_only).await,
    }
}

impl Exporter {
    /// Opens the store if it is not open.
    async fn open(&self) -> Result<(), Failure> {
        let mut slot = self.store.lock().await;
        if slot.is_none() {
            let opened =
                tokio::time::timeout(self.timeout, store::open(self.backend.as_deref())).await.map_err(|_| {
                    Failure::store(format!("opening the store took longer than {:?} (--timeout)", self.timeout))
                })??;
            *slot = Some(opened);
        }
        Ok(())
    }

    /// One read of the store, as the text format; a failure is said once per scrape and shown as
    /// `tenure_store_up 0` (the store is opened again at the next scrape).
    async fn scrape(&self) -> String {
        let started = Instant::now();
        let read = match self.open().await {
            Ok(()) => {
                let mut slot = self.store.lock().await;
                let read = match slot.as_ref() {
                    Some(store) => match tokio::time::timeout(self.timeout, self.read(store)).await {
                        Ok(read) => read,
                        Err(_) => Err(format!("reading the store took longer than {:?} (--timeout)", self.timeout)),
                    },
                    None => Err("the store is not open".to_owned()),
                };
                if read.is_err() {
                    // Dropped, not closed: a close may write (SQLite vacates expired leases) and
                    // would wait behind the read that failed.
                    drop(slot.take());
                }
                read
            }
            Err(e) => Err(e.message),
        };
        if let Err(e) = &read {
            say!("exporter: {e}");
        }
        render::render(read.as_ref().ok(), started.elapsed().as_secs_f64(), crate::status::now_micros())
    }

    async fn read(&self, store: &Store) -> Result<Snapshot, String> {
        let inspect = store.inspect().ok_or_else(|| "this store cannot list what it holds".to_owned())?;
        listing::read(inspect.as_ref(), &self.prefix, self.max_names).await
    }
}
