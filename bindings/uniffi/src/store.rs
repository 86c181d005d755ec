//! Stores, opened from a URL or grelmicro's environment variables through `tenure-open` (the
//! one scheme table and the one password masking).

use std::sync::Arc;

use tenure::Slots;
use tenure::backend::user::{Fences, UserStore};
use tenure_open::reach::Reach;
use tenure_open::{Backends, Origin, STORES, Target};

use crate::user::{JvmHost, UserCalls};
use crate::{TenureError, block, runtime};

/// An open store: `memory:`, `sqlite:///path.db`, `redis://…`, `postgresql://…`, `etcd://…`,
/// or a backend a user wrote in Kotlin or Java (with the reach it declares, if any). Locks, task
/// locks and elections made on it share its connection (or file, or memory).
#[derive(uniffi::Object)]
pub struct Store {
    pub(crate) inner: Backends<Option<String>>,
}

impl Store {
    fn new(store: tenure_open::Store) -> Arc<Self> {
        Arc::new(Self { inner: Backends::store(store) })
    }

    async fn open_target(target: Result<Target, TenureError>) -> Result<Arc<Self>, TenureError> {
        Ok(Self::new(target?.open(runtime()).await?))
    }
}

/// The target a URL names.
fn url_target(url: &str) -> Result<Target, TenureError> {
    Ok(Target::from_url(url)?)
}

/// The target grelmicro's variables name for a store of `kind` (`redis`, `postgres`, `sqlite`,
/// `etcd`), read with `prefix` (the kind's own, `REDIS_` and so on, when `None`).
fn env_target(kind: &str, prefix: Option<String>) -> Result<Target, TenureError> {
    // The stores grelmicro's variables can name: those of the table with a prefix.
    let named = || STORES.iter().filter(|entry| !entry.env_prefix.is_empty());
    let Some(entry) = named().find(|entry| entry.name == kind) else {
        let kinds: Vec<&str> = named().map(|entry| entry.name).collect();
        let text = format!("kind must be one of {}, not {kind:?}", kinds.join(", "));
        return Err(tenure::core::SettingsError::field("kind", text).into());
    };
    Ok(Target::from_env(entry.kind, prefix.as_deref().unwrap_or(entry.env_prefix))?)
}

#[uniffi::export]
impl Store {
    /// A store in this process's memory: its locks exclude within the process only.
    #[uniffi::constructor]
    pub fn memory() -> Arc<Self> {
        Self::new(tenure_open::Store::memory())
    }

    /// Opens the store `url` names. A bad URL is a `SettingsValidation` error naming the part
    /// that is wrong (never showing a password); an unreachable store a `Store` error.
    #[uniffi::constructor]
    pub async fn open(url: String) -> Result<Arc<Self>, TenureError> {
        Self::open_target(url_target(&url)).await
    }

    /// [`Store::open`], blocking the calling thread.
    #[uniffi::constructor]
    pub fn open_blocking(url: String) -> Result<Arc<Self>, TenureError> {
        block("Store.openBlocking", Self::open(url))
    }

    /// Opens the store grelmicro's environment variables describe for `kind` (`redis`:
    /// `REDIS_URL` xor `REDIS_HOST` + `PORT`, `DB`, `PASSWORD`; `postgres`: `POSTGRES_URL` xor
    /// `POSTGRES_HOST` + …; `sqlite`: `SQLITE_PATH`; `etcd`: `ETCD_URL` xor `ETCD_HOST` + …),
    /// with another `prefix` if given.
    #[uniffi::constructor(default(prefix = None))]
    pub async fn from_env(kind: String, prefix: Option<String>) -> Result<Arc<Self>, TenureError> {
        Self::open_target(env_target(&kind, prefix)).await
    }

    /// [`Store::from_env`], blocking the calling thread.
    #[uniffi::constructor(default(prefix = None))]
    pub fn from_env_blocking(kind: String, prefix: Option<String>) -> Result<Arc<Self>, TenureError> {
        block("Store.fromEnvBlocking", Self::from_env(kind, prefix))
    }

    /// A backend written in Kotlin or Java, called through `calls` (the Kotlin layer's caller of
    /// its methods), named `label` in messages, serving the kinds of call `serves` names (lock
    /// calls serve locks and task locks). `scope` is the reach it declares (`process`, `host` or
    /// `cluster`), if any.
    #[uniffi::constructor(default(scope = None))]
    pub fn custom(
        label: String,
        calls: Box<dyn UserCalls>,
        serves: CustomCalls,
        scope: Option<String>,
    ) -> Result<Arc<Self>, TenureError> {
        let CustomCalls { locks, elections, read_write_locks, semaphores } = serves;
        if !(locks || elections || read_write_locks || semaphores) {
            let text = format!(
                "{label} serves neither lock calls nor election calls, nor read-write lock or semaphore calls: give at least one kind"
            );
            return Err(tenure::core::SettingsError::field("locks", text).into());
        }
        if let Some(scope) = scope.as_deref()
            && Reach::parse(scope).is_none()
        {
            let text = format!("scope must be 'process', 'host' or 'cluster', not {scope:?}");
            return Err(tenure::core::SettingsError::field("scope", text).into());
        }
        let store = UserStore::new(JvmHost::new(calls, label.clone()), label, Fences::default());
        let mut slots = Slots::default();
        slots.lock = locks.then(|| Arc::new(store.clone()) as _);
        slots.election = elections.then(|| Arc::new(store.clone()) as _);
        slots.read_write = read_write_locks.then(|| Arc::new(store.clone()) as _);
        slots.semaphore = semaphores.then(|| Arc::new(store) as _);
        Ok(Arc::new(Self { inner: Backends::user(slots, scope) }))
    }

    /// The kind of store: `memory`, `sqlite`, `redis`, `postgres`, `etcd`, or `user` (written in
    /// Kotlin or Java).
    pub fn kind(&self) -> String {
        self.inner.kind()
    }

    /// How far its locks exclude: `process` (memory), `host` (SQLite) or `cluster`; a user's
    /// backend's declared scope, or none.
    pub fn scope(&self) -> Option<String> {
        match self.inner.origin() {
            Origin::User(scope) => scope.clone(),
            Origin::Store(_) => self.inner.reach(),
        }
    }

    /// Closes the store for every lock made on it: their later calls fail, with a
    /// `STORE_CLOSED` store failure behind the error. SQLite first vacates expired leases. A
    /// user's backend is the user's to close.
    pub async fn shutdown(&self) -> Result<(), TenureError> {
        match self.inner.closer() {
            Some(store) => Ok(store.close().await?),
            None => Ok(()),
        }
    }

    /// [`Store::shutdown`], blocking the calling thread.
    pub fn shutdown_blocking(&self) -> Result<(), TenureError> {
        block("Store.close", self.shutdown())
    }
}

/// Which calls a backend written in Kotlin or Java serves.
#[derive(Debug, Clone, Copy, uniffi::Record)]
pub struct CustomCalls {
    pub locks: bool,
    pub elections: bool,
    pub read_write_locks: bool,
    pub semaphores: bool,
}
