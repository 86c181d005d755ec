//! `LeaderElection`: the election loop runs on Tenure's runtime; JavaScript starts and stops it,
//! asks who leads, waits for leadership to come or go, and hears every change through a callback
//! (a weak threadsafe function: what keeps the process alive while the election runs is a timer
//! of the JavaScript half, which `unref()` lets go).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures_lite::StreamExt as _;
use napi::bindgen_prelude::{Function, Unknown};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status};
use napi_derive::napi;
use tenure::Metadata;
use tenure::binding::{self, Spelling, Unit};
use tenure_tokio::Tokio;

use crate::backend::Backend;
use crate::cancel::{Cancel, Flag, unless};
use crate::fail::{Fail, sync};
use crate::promise::{Settled, promise};

/// An election's settings, in milliseconds; what is not given comes from `GREL_*` variables or
/// the defaults, as grelmicro's `LeaderElection(...)`.
#[napi(object)]
#[derive(Debug, Default)]
pub struct ElectionOptions {
    pub worker: Option<String>,
    pub lease_duration: Option<f64>,
    pub renew_deadline: Option<f64>,
    pub retry_interval: Option<f64>,
    pub retry_jitter: Option<f64>,
    pub backend_timeout: Option<f64>,
    pub error_interval: Option<f64>,
    pub env_prefix: Option<String>,
    pub env_load: Option<bool>,
    pub metadata: Option<HashMap<String, String>>,
    /// What this worker leads for, shown with it while it leads (given when it is made).
    pub purpose: Option<String>,
}

/// Who leads, as the store last said.
#[napi(object)]
#[derive(Debug)]
pub struct LeaderRecord {
    pub holder: String,
    /// ms.
    pub lease_duration: f64,
    /// ms since the Unix epoch.
    pub acquired_at: f64,
    /// ms since the Unix epoch.
    pub renewed_at: f64,
    pub transitions: f64,
    pub metadata: HashMap<String, String>,
}

#[allow(clippy::cast_precision_loss)] // ms since 1970 and transition counts stay far below 2^53
fn record(r: tenure::LeaderRecord) -> LeaderRecord {
    LeaderRecord {
        holder: r.holder,
        lease_duration: r.lease_duration.as_secs_f64() * 1000.0,
        acquired_at: r.acquired_at.as_unix_micros() as f64 / 1000.0,
        renewed_at: r.renewed_at.as_unix_micros() as f64 / 1000.0,
        transitions: r.transitions as f64,
        metadata: r.metadata.iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect(),
    }
}

/// The callback that hears leadership changes (`true`: leads now).
type OnChange = ThreadsafeFunction<bool, Unknown<'static>, bool, Status, false, true>;

/// The settings `o` gives, from milliseconds, checked: a settings error names the JavaScript
/// option (the metadata is set apart).
fn election_options(o: &ElectionOptions) -> Result<binding::ElectionOptions, Fail> {
    let given = [o.lease_duration, o.renew_deadline, o.retry_interval, o.backend_timeout, o.error_interval];
    let given = binding::ElectionOptions::from_numbers(Unit::Millis, Spelling::Camel, given)?;
    let (worker, env_prefix) = (o.worker.clone(), o.env_prefix.clone());
    Ok(binding::ElectionOptions { worker, retry_jitter: o.retry_jitter, env_prefix, env_load: o.env_load, ..given })
}

/// A leader election on a store.
#[napi]
pub struct Election {
    inner: tenure::LeaderElection<Tokio>,
    /// While started: the callback, and what stops its watcher.
    watching: Mutex<Option<(Arc<OnChange>, Arc<Flag>)>>,
}

#[napi]
impl Election {
    #[napi(constructor)]
    pub fn new(name: String, backend: &Backend, options: Option<ElectionOptions>) -> napi::Result<Self> {
        sync((|| {
            let o = options.unwrap_or_default();
            let b =
                tenure::LeaderElection::builder(&name, crate::runtime()).shared_backend(backend.0.slots().election()?);
            let mut b = election_options(&o)?.apply(b)?;
            if let Some(metadata) = o.metadata {
                b = b.metadata(Metadata::try_from(metadata.into_iter().collect::<std::collections::BTreeMap<_, _>>())?);
            }
            let inner = b.build()?;
            inner.set_purpose(o.purpose.as_deref())?;
            Ok(Self { inner, watching: Mutex::new(None) })
        })())
    }

    /// The resolved settings, in ms.
    #[napi]
    pub fn settings(&self) -> HashMap<String, f64> {
        let c = self.inner.config();
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
        HashMap::from([
            ("leaseDuration".to_owned(), ms(c.lease_duration())),
            ("renewDeadline".to_owned(), ms(c.renew_deadline())),
            ("retryInterval".to_owned(), ms(c.retry_interval())),
            ("retryJitter".to_owned(), c.retry_jitter()),
            ("backendTimeout".to_owned(), ms(c.backend_timeout())),
            ("errorInterval".to_owned(), ms(c.error_interval())),
        ])
    }

    /// This worker's identity in the election (the record's `holder` when it leads).
    #[napi(getter)]
    pub fn worker(&self) -> String {
        self.inner.config().worker().as_str().to_owned()
    }

    /// Applies new settings at the loop's next turn (the worker stays).
    #[napi]
    pub fn reconfigure(&self, options: ElectionOptions) -> napi::Result<()> {
        sync((|| {
            tenure::binding::refuse_purpose(options.purpose.as_deref())?;
            Ok(self.inner.reconfigure(election_options(&options)?.reconfigure(&self.inner.config())?)?)
        })())
    }

    /// Starts the loop (false if it runs already); `onChange(leading)` hears every change.
    #[napi]
    pub fn start(&self, on_change: Function<'_, bool, Unknown<'static>>) -> napi::Result<bool> {
        // Made before the loop starts, so that no term goes untold.
        let changes = self.inner.changes();
        if !self.inner.start() {
            return Ok(false);
        }
        let on_change: OnChange =
            on_change.build_threadsafe_function::<bool>().callee_handled::<false>().weak::<true>().build()?;
        let on_change = Arc::new(on_change);
        let stopped = Arc::new(Flag::default());
        let (tell, stop) = (on_change.clone(), stopped.clone());
        crate::process_runtime().spawn(async move {
            let mut changes = std::pin::pin!(changes);
            loop {
                let ended = async {
                    stop.raised().await;
                    None
                };
                let Some(leading) = futures_lite::future::or(ended, changes.next()).await else { return };
                tell.call(leading, ThreadsafeFunctionCallMode::NonBlocking);
            }
        });
        *self.watching.lock().unwrap_or_else(PoisonError::into_inner) = Some((on_change, stopped));
        Ok(true)
    }

    /// Stops the loop: leadership ends now; settles once the lease is released.
    #[napi]
    pub fn stop<'env>(&self, env: &'env Env) -> napi::Result<Settled<'env, ()>> {
        let stopping = self.inner.stop();
        let watching = self.watching.lock().unwrap_or_else(PoisonError::into_inner).take();
        promise(env, async move {
            stopping.await;
            if let Some((on_change, stopped)) = watching {
                stopped.raise();
                drop(on_change);
            }
            Ok(())
        })
    }

    #[napi(getter)]
    pub fn is_running(&self) -> bool {
        self.inner.is_running()
    }

    #[napi(getter)]
    pub fn is_leader(&self) -> bool {
        self.inner.is_leader()
    }

    /// The leader health check: null when healthy, else why not (`toleranceMs` past the renew
    /// deadline without a confirmation while still believing it leads).
    #[napi]
    pub fn health(&self, tolerance_ms: f64) -> napi::Result<Option<String>> {
        let tolerance = crate::fail::sync(crate::millis::millis("toleranceMs", tolerance_ms))?;
        let health = self.inner.health(tolerance);
        Ok((!health.is_healthy()).then(|| health.to_string()))
    }

    /// While leading: the term's fencing token.
    #[napi(getter)]
    pub fn fencing_token(&self) -> Option<napi::bindgen_prelude::BigInt> {
        self.inner.fence().map(|f| napi::bindgen_prelude::BigInt::from(f.get()))
    }

    /// Waits until this worker leads, unless `cancel` fires first.
    #[napi]
    pub fn wait_for_leader<'env>(&self, env: &'env Env, cancel: Option<&Cancel>) -> napi::Result<Settled<'env, ()>> {
        let election = self.inner.clone();
        promise(
            env,
            unless(cancel, async move {
                election.wait_for_leader().await;
                Ok(())
            }),
        )
    }

    /// Waits until this worker does not lead, unless `cancel` fires first.
    #[napi]
    pub fn wait_lose_leader<'env>(&self, env: &'env Env, cancel: Option<&Cancel>) -> napi::Result<Settled<'env, ()>> {
        let election = self.inner.clone();
        promise(
            env,
            unless(cancel, async move {
                election.wait_lose_leader().await;
                Ok(())
            }),
        )
    }

    /// Throws the core's `WOULD_BLOCK` "Not leader" error (what `lead` aborts its work with).
    #[napi]
    pub fn not_leader_error(&self) -> napi::Result<()> {
        crate::fail::sync(Err(crate::fail::Fail::Core(self.inner.not_leader())))
    }

    /// The last record the store returned, if any.
    #[napi]
    pub fn record(&self) -> Option<LeaderRecord> {
        self.inner.record().map(record)
    }
}
