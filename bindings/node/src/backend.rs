//! The stores, opened from a URL through `tenure-open` (the one scheme table).

use std::sync::Arc;

use napi::Env;
use napi_derive::napi;
use tenure::MemoryBackend;
use tenure::backend::{LeaderElectionBackend, LockBackend};
use tenure_open::{Store, Target};

use crate::event_loop::{Inbox, JsDial};
use crate::fail::{Fail, sync};
use crate::promise::{Settled, promise};

/// An open store.
#[napi]
pub struct Backend {
    pub(crate) lock: Arc<dyn LockBackend>,
    pub(crate) leader: Arc<dyn LeaderElectionBackend>,
    store: Store,
}

impl Backend {
    fn new(store: Store) -> Self {
        Self { lock: store.locks(), leader: store.elections(), store }
    }
}

#[napi]
impl Backend {
    /// The kind of store: `memory`, `sqlite`, `redis` or `postgres`.
    #[napi(getter)]
    pub fn kind(&self) -> String {
        self.store.kind().to_string()
    }

    /// How far its locks exclude: `process` (memory), `host` (SQLite) or `cluster`.
    #[napi(getter)]
    pub fn scope(&self) -> String {
        self.store.kind().reach().to_string()
    }

    /// Closes the store (SQLite vacates expired leases); later calls fail.
    #[napi]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<Settled<'env, ()>> {
        let store = self.store.clone();
        promise(env, async move { store.close().await.map_err(Fail::Store) })
    }
}

/// A store in this process's memory.
#[napi]
pub fn memory_backend() -> Backend {
    Backend::new(Store::Memory(MemoryBackend::new()))
}

/// Opens the store at `url` (`memory:`, `sqlite:///path.db`, `redis://…`, `postgresql://…`). A
/// network store's TCP connections are watched by this thread's event loop.
#[napi]
pub fn open_backend<'env>(env: &'env Env, url: String) -> napi::Result<Settled<'env, Backend>> {
    let target = sync(Target::from_url(&url).map_err(|e| Fail::Core(tenure::Error::Settings(e))))?;
    let dial = JsDial::new(Inbox::of(env.raw())?);
    promise(env, async move { Ok(Backend::new(target.open(dial).await?)) })
}

/// The driver's judgement of backends' reach (`tenure::reach::judge`): `['fine']`,
/// `['refused', message]` or `['warned', message, unknownEnvironmentMessage?]`. `backends` are
/// `[label, scope]` pairs.
#[napi]
pub fn judge_reach(
    owner: String,
    backends: Vec<(String, String)>,
    requires: String,
    environment: Option<String>,
) -> napi::Result<Vec<String>> {
    use tenure::reach::{Reach, Verdict, judge};
    let reach = |text: &str| {
        Reach::parse(text).ok_or_else(|| {
            Fail::Core(tenure::Error::Settings(tenure::core::SettingsError::field(
                "requires",
                "requires must be one of process, host, cluster",
            )))
        })
    };
    let judged =
        backends.into_iter().map(|(label, scope)| Ok((label, reach(&scope)?))).collect::<Result<Vec<_>, Fail>>();
    let judged = sync(judged)?;
    let requires = sync(reach(&requires))?;
    Ok(match judge(&owner, &judged, requires, environment.as_deref()) {
        Verdict::Fine => vec!["fine".to_owned()],
        Verdict::Refused(message) => vec!["refused".to_owned(), message],
        Verdict::Warned { unknown_environment, message } => {
            let mut verdict = vec!["warned".to_owned(), message];
            verdict.extend(unknown_environment);
            verdict
        }
    })
}
