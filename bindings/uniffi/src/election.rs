//! `LeaderElection`: the election loop runs on Tenure's runtime; the foreign side starts and
//! stops it, asks who leads, waits for leadership to come or go, and hears every change through
//! a [`LeadershipListener`], called on a thread of the blocking pool so that a slow listener
//! never holds up renewals.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures_lite::StreamExt as _;
use tenure::binding::{self, Spelling, Unit};
use tenure::{Metadata, Runtime};
use tenure_tokio::Tokio;

use crate::seconds::{optional, seconds, secs};
use crate::store::Store;
use crate::{TenureError, block, process_runtime, runtime};

/// An election's settings; what is not given comes from `GREL_LEADERELECTION_*` variables
/// (unless `env_load` is false) or grelmicro's defaults. Durations in seconds.
#[derive(Debug, Clone, Default, uniffi::Record)]
pub struct ElectionOptions {
    /// This process's identity in the election (a random one if not given).
    #[uniffi(default = None)]
    pub worker: Option<String>,
    /// How long leadership lasts unless renewed (default 15 s).
    #[uniffi(default = None)]
    pub lease_duration: Option<f64>,
    /// How long a leader keeps trying to renew before it gives up leading (default 10 s).
    #[uniffi(default = None)]
    pub renew_deadline: Option<f64>,
    /// Time between attempts (default 2 s).
    #[uniffi(default = None)]
    pub retry_interval: Option<f64>,
    /// Spread of each retry, a factor in [0, 1) (default 0.1).
    #[uniffi(default = None)]
    pub retry_jitter: Option<f64>,
    /// Bound on each store call (default 5 s).
    #[uniffi(default = None)]
    pub backend_timeout: Option<f64>,
    /// Least time between two logged errors (default 30 s).
    #[uniffi(default = None)]
    pub error_interval: Option<f64>,
    /// Prefix of the environment variables read (default `GREL_LEADERELECTION_{NAME}_`).
    #[uniffi(default = None)]
    pub env_prefix: Option<String>,
    /// Whether to read environment variables (default: `GREL_ENV_LOAD`, else yes).
    #[uniffi(default = None)]
    pub env_load: Option<bool>,
    /// Stored on the record while this worker leads (pod name, version, region).
    #[uniffi(default = None)]
    pub metadata: Option<HashMap<String, String>>,
    /// What this worker leads for, shown with its host, pid and program by `tenure locks` while
    /// it leads (1 to 256 bytes), given when it is made.
    #[uniffi(default = None)]
    pub purpose: Option<String>,
}

/// An election's resolved settings, in seconds.
#[derive(Debug, Clone, uniffi::Record)]
pub struct ElectionSettings {
    pub worker: String,
    pub lease_duration: f64,
    pub renew_deadline: f64,
    pub retry_interval: f64,
    pub retry_jitter: f64,
    pub backend_timeout: f64,
    pub error_interval: f64,
}

/// Who leads, as the store last said.
#[derive(Debug, Clone, uniffi::Record)]
pub struct LeaderRecord {
    /// The leader's worker identity.
    pub holder: String,
    /// Seconds the lease lasts from `renewed_at`.
    pub lease_duration: f64,
    pub acquired_at: SystemTime,
    pub renewed_at: SystemTime,
    /// How many times leadership changed hands.
    pub transitions: u64,
    pub metadata: HashMap<String, String>,
}

fn wall(t: tenure::core::time::WallTime) -> SystemTime {
    let micros = t.as_unix_micros();
    let offset = Duration::from_micros(micros.unsigned_abs());
    if micros >= 0 { SystemTime::UNIX_EPOCH + offset } else { SystemTime::UNIX_EPOCH - offset }
}

impl From<tenure::LeaderRecord> for LeaderRecord {
    fn from(r: tenure::LeaderRecord) -> Self {
        Self {
            holder: r.holder,
            lease_duration: secs(r.lease_duration),
            acquired_at: wall(r.acquired_at),
            renewed_at: wall(r.renewed_at),
            transitions: r.transitions,
            metadata: r.metadata.iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect(),
        }
    }
}

/// A listener's failure (what it threw), logged and otherwise ignored.
#[derive(Debug, thiserror::Error, uniffi::Error)]
pub enum ListenerError {
    #[error("{reason}")]
    Failed { reason: String },
}

impl From<uniffi::UnexpectedUniFFICallbackError> for ListenerError {
    fn from(e: uniffi::UnexpectedUniFFICallbackError) -> Self {
        Self::Failed { reason: e.reason }
    }
}

/// Hears every change of leadership: `true` when this worker starts leading, `false` when it
/// stops (lost, or the election stopped). Changes come in order, one call at a time.
#[uniffi::export(callback_interface)]
pub trait LeadershipListener: Send + Sync {
    fn on_change(&self, leading: bool) -> Result<(), ListenerError>;
}

/// The settings `o` gives, from seconds, checked (the metadata is set apart).
fn election_options(o: &ElectionOptions) -> Result<binding::ElectionOptions, TenureError> {
    let given = [o.lease_duration, o.renew_deadline, o.retry_interval, o.backend_timeout, o.error_interval];
    let given = binding::ElectionOptions::from_numbers(Unit::Seconds, Spelling::Camel, given)?;
    let (worker, env_prefix) = (o.worker.clone(), o.env_prefix.clone());
    Ok(binding::ElectionOptions { worker, retry_jitter: o.retry_jitter, env_prefix, env_load: o.env_load, ..given })
}

/// A leader election on a store.
#[derive(uniffi::Object)]
pub struct LeaderElection {
    inner: tenure::LeaderElection<Tokio>,
    /// The start the current listener belongs to: a stop or a new start moves it on, and the
    /// listener's watcher ends; dropping this object ends it too (and with it the election,
    /// whose last handle the watcher held).
    epoch: tokio::sync::watch::Sender<u64>,
}

#[uniffi::export]
impl LeaderElection {
    /// The election `name` on `store`.
    #[uniffi::constructor(default(options = None))]
    pub fn new(name: String, store: Arc<Store>, options: Option<ElectionOptions>) -> Result<Arc<Self>, TenureError> {
        let o = options.unwrap_or_default();
        let builder = tenure::LeaderElection::builder(&name, runtime()).shared_backend(store.inner.slots().election()?);
        let mut builder = election_options(&o)?.apply(builder)?;
        if let Some(metadata) = o.metadata {
            builder = builder.metadata(Metadata::try_from(metadata.into_iter().collect::<BTreeMap<_, _>>())?);
        }
        let inner = builder.build()?;
        inner.set_purpose(o.purpose.as_deref())?;
        Ok(Arc::new(Self { inner, epoch: tokio::sync::watch::Sender::new(0) }))
    }

    /// The election name.
    pub fn name(&self) -> String {
        self.inner.name().as_str().to_owned()
    }

    /// This worker's identity (the record's `holder` while it leads).
    pub fn worker(&self) -> String {
        self.inner.config().worker().as_str().to_owned()
    }

    /// The resolved settings.
    pub fn settings(&self) -> ElectionSettings {
        let c = self.inner.config();
        ElectionSettings {
            worker: c.worker().as_str().to_owned(),
            lease_duration: secs(c.lease_duration()),
            renew_deadline: secs(c.renew_deadline()),
            retry_interval: secs(c.retry_interval()),
            retry_jitter: c.retry_jitter(),
            backend_timeout: secs(c.backend_timeout()),
            error_interval: secs(c.error_interval()),
        }
    }

    /// Applies the durations and jitter of `options` at the loop's next turn (the worker and
    /// metadata stay).
    pub fn reconfigure(&self, options: ElectionOptions) -> Result<(), TenureError> {
        binding::refuse_purpose(options.purpose.as_deref())?;
        Ok(self.inner.reconfigure(election_options(&options)?.reconfigure(&self.inner.config())?)?)
    }

    /// Starts the election loop in the background (false if it runs already); `listener`, if
    /// given, hears every change of leadership from now on.
    #[uniffi::method(default(listener = None))]
    pub fn start(&self, listener: Option<Box<dyn LeadershipListener>>) -> bool {
        // Made before the loop starts, so that no term goes untold.
        let changes = listener.is_some().then(|| self.inner.changes());
        if !self.inner.start() {
            return false;
        }
        let mine = self.next_epoch();
        if let (Some(listener), Some(changes)) = (listener, changes) {
            let told = tell(self.name(), changes, Arc::from(listener), self.epoch.subscribe(), mine);
            process_runtime().spawn(told);
        }
        true
    }

    /// Stops the loop: leadership ends at once, and the call completes once the lease is
    /// released (bounded by the backend timeout), so a follower takes over without waiting.
    pub async fn stop(&self) {
        self.inner.stop().await;
        self.next_epoch();
    }

    /// [`LeaderElection::stop`], blocking the calling thread.
    pub fn stop_blocking(&self) -> Result<(), TenureError> {
        block("LeaderElection.stopBlocking", async {
            self.stop().await;
            Ok(())
        })
    }

    /// Whether the loop runs (until the release after a stop has finished).
    pub fn is_running(&self) -> bool {
        self.inner.is_running()
    }

    /// Whether this worker leads, as far as it knows (see `is_leader_confirmed_within`).
    pub fn is_leader(&self) -> bool {
        self.inner.is_leader()
    }

    /// Whether this worker leads and the store confirmed it at most `max_age` seconds ago.
    pub fn is_leader_confirmed_within(&self, max_age: f64) -> Result<bool, TenureError> {
        Ok(self.inner.is_leader_confirmed_within(seconds("maxAge", max_age)?))
    }

    /// The leader health check: `None` when healthy, else why not (this worker believes it
    /// leads but the store has not confirmed it within its renew deadline plus `tolerance` seconds).
    pub fn health(&self, tolerance: f64) -> Result<Option<String>, TenureError> {
        let health = self.inner.health(seconds("tolerance", tolerance)?);
        Ok((!health.is_healthy()).then(|| health.to_string()))
    }

    /// While leading: the term's fencing token.
    pub fn fencing_token(&self) -> Option<i64> {
        self.inner.fence().map(crate::guard::fence)
    }

    /// Seconds since the store last confirmed this worker's leadership, while it leads.
    pub fn last_confirmation_age(&self) -> Option<f64> {
        self.inner.last_confirmation_age().map(secs)
    }

    /// Completes once this worker leads.
    pub async fn wait_for_leader(&self) {
        self.inner.wait_for_leader().await;
    }

    /// Completes once this worker does not lead.
    pub async fn wait_lose_leader(&self) {
        self.inner.wait_lose_leader().await;
    }

    /// Waits until this worker leads, up to `timeout` seconds (forever without one): whether
    /// it leads.
    #[uniffi::method(default(timeout = None))]
    pub fn wait_for_leader_blocking(&self, timeout: Option<f64>) -> Result<bool, TenureError> {
        self.wait_blocking("LeaderElection.waitForLeaderBlocking", timeout, self.inner.wait_for_leader())
    }

    /// Waits until this worker does not lead, up to `timeout` seconds (forever without one):
    /// whether it has stopped leading.
    #[uniffi::method(default(timeout = None))]
    pub fn wait_lose_leader_blocking(&self, timeout: Option<f64>) -> Result<bool, TenureError> {
        self.wait_blocking("LeaderElection.waitLoseLeaderBlocking", timeout, self.inner.wait_lose_leader())
    }

    /// The last record the store returned, if any.
    pub fn record(&self) -> Option<LeaderRecord> {
        self.inner.record().map(LeaderRecord::from)
    }
}

impl LeaderElection {
    /// Moves to the next start: the current listener's watcher ends. The new epoch.
    fn next_epoch(&self) -> u64 {
        let mut next = 0;
        self.epoch.send_modify(|e| {
            *e += 1;
            next = *e;
        });
        next
    }

    /// `wait` run on the calling thread up to `timeout` seconds: whether it completed.
    fn wait_blocking(
        &self,
        what: &str,
        timeout: Option<f64>,
        wait: impl std::future::Future<Output = ()> + Send,
    ) -> Result<bool, TenureError> {
        let timeout = optional("timeout", timeout)?;
        block(what, async move {
            Ok(match timeout {
                Some(t) => {
                    let rt = runtime();
                    rt.timeout_at(rt.now().saturating_add(t), wait).await.is_some()
                }
                None => {
                    wait.await;
                    true
                }
            })
        })
    }
}

/// Tells `listener` every change of leadership until the election's epoch moves past `mine`.
async fn tell(
    name: String,
    changes: impl futures_lite::Stream<Item = bool> + Send,
    listener: Arc<dyn LeadershipListener>,
    mut epoch: tokio::sync::watch::Receiver<u64>,
    mine: u64,
) {
    let mut changes = std::pin::pin!(changes);
    loop {
        let change = changes.next();
        let ended = async {
            // An error: the election object is gone.
            let _ = epoch.wait_for(|e| *e != mine).await;
            None
        };
        // A change ready when the epoch moves on (a stop's loss) is told first.
        let Some(leading) = futures_lite::future::or(change, ended).await else { return };
        let listener = listener.clone();
        match tokio::task::spawn_blocking(move || listener.on_change(leading)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(name = name.as_str(), "the leadership listener failed: {e}"),
            Err(e) => tracing::warn!(name = name.as_str(), "the leadership listener failed: {e}"),
        }
    }
}
