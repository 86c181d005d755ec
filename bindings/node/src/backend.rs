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
