//! The stores, opened from a URL through `tenure-open` (the one scheme table).

use std::sync::Arc;

use napi::Env;
use napi_derive::napi;
use tenure::Provider;
use tenure::backend::user::UserStore;
use tenure::backend::{LeaderElectionBackend, LockBackend, ReadWriteLockBackend, SemaphoreBackend};
use tenure_open::{Store, Target};

use crate::event_loop::{Inbox, JsDial};
use crate::fail::{Fail, sync};
use crate::promise::{Settled, promise};
use crate::user::JsHost;

/// An open store: a built-in one, or a backend a user wrote in JavaScript.
#[napi]
pub struct Backend {
    pub(crate) lock: Arc<dyn LockBackend>,
    pub(crate) leader: Arc<dyn LeaderElectionBackend>,
    /// Its read-write locks and semaphores (a built-in store's; not a backend written in
    /// JavaScript).
    read_write: Option<Arc<dyn ReadWriteLockBackend>>,
    semaphore: Option<Arc<dyn SemaphoreBackend>>,
    kind: Kind,
}

enum Kind {
    Store(Store),
    /// A user's backend, and the reach it declares (`scope`), if any.
    User(Option<String>),
}

impl Backend {
    fn new(store: Store) -> Self {
        let (read_write, semaphore) = (store.read_write_lock_backend(), store.semaphore_backend());
        Self { lock: store.locks(), leader: store.elections(), read_write, semaphore, kind: Kind::Store(store) }
    }

    pub(crate) fn user(store: UserStore<JsHost>, scope: Option<String>) -> Self {
        let (lock, leader) = (Arc::new(store.clone()), Arc::new(store.clone()));
        let (read_write, semaphore) = (Some(Arc::new(store.clone()) as _), Some(Arc::new(store) as _));
        Self { lock, leader, read_write, semaphore, kind: Kind::User(scope) }
    }

    /// Its read-write locks, or the error naming the missing slot.
    pub(crate) fn read_write(&self) -> Result<Arc<dyn ReadWriteLockBackend>, Fail> {
        let missing = tenure::Error::BackendMissing { slot: tenure::core::BackendSlot::ReadWriteLock };
        self.read_write.clone().ok_or(Fail::Core(missing))
    }

    /// Its semaphores, or the error naming the missing slot.
    pub(crate) fn semaphore(&self) -> Result<Arc<dyn SemaphoreBackend>, Fail> {
        let missing = tenure::Error::BackendMissing { slot: tenure::core::BackendSlot::Semaphore };
        self.semaphore.clone().ok_or(Fail::Core(missing))
    }
}

#[napi]
impl Backend {
    /// The kind of store: `memory`, `sqlite`, `redis`, `postgres`, `etcd`, or `user` (written in
    /// JavaScript).
    #[napi(getter)]
    pub fn kind(&self) -> String {
        match &self.kind {
            Kind::Store(store) => store.kind().to_string(),
            Kind::User(_) => "user".to_owned(),
        }
    }

    /// How far its locks exclude: `process` (memory), `host` (SQLite) or `cluster`; a user's
    /// backend's declared `scope`, or `null` if it declares none.
    #[napi(getter)]
    pub fn scope(&self) -> Option<String> {
        match &self.kind {
            Kind::Store(store) => Some(store.kind().reach().to_string()),
            Kind::User(scope) => scope.clone(),
        }
    }

    /// Closes the store (SQLite vacates expired leases); later calls fail. A user's backend is
    /// the user's to close.
    #[napi]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<Settled<'env, ()>> {
        let store = match &self.kind {
            Kind::Store(store) => Some(store.clone()),
            Kind::User(_) => None,
        };
        promise(env, async move {
            match store {
                Some(store) => store.close().await.map_err(Fail::Store),
                None => Ok(()),
            }
        })
    }
}

/// The workspace version the addon was built from; `lib/` refuses an addon of another version.
#[napi]
pub fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// A store in this process's memory.
#[napi]
pub fn memory_backend() -> Backend {
    Backend::new(Store::memory())
}

/// Opens the store at `url` (`memory:`, `sqlite:///path.db`, `redis://…`, `postgresql://…`,
/// `etcd://…`). A Redis or PostgreSQL store's TCP connections are watched by this thread's event
/// loop; etcd's gRPC client runs on the addon's runtime.
#[napi]
pub fn open_backend<'env>(env: &'env Env, url: String) -> napi::Result<Settled<'env, Backend>> {
    let target = sync(Target::from_url(&url).map_err(|e| Fail::Core(tenure::Error::Settings(e))))?;
    let dial = JsDial::new(Inbox::of(env.raw())?);
    promise(env, async move { Ok(Backend::new(target.open(dial).await?)) })
}

/// The store opener's judgement of backends' reach (`tenure_open::reach::judge`): `['fine']`,
/// `['refused', message]` or `['warned', message, unknownEnvironmentMessage?]`. `backends` are
/// `[label, scope]` pairs.
#[napi]
pub fn judge_reach(
    owner: String,
    backends: Vec<(String, String)>,
    requires: String,
    environment: Option<String>,
) -> napi::Result<Vec<String>> {
    use tenure_open::reach::{Reach, Verdict, judge};
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
