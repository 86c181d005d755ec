//! What a store crate implements so that `tenure-open`'s table can open it by URL and hand it
//! out as one `Store`, whatever its kind: its options ([`StoreOptions`], read from a URL) and
//! the open store ([`OpenStore`]).

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use tenure::backend::{BackendFuture, Inspect, LeaderElectionBackend, LockBackend};
use tenure::net::Net;
use tenure::{MemoryBackend, Provider};

use crate::OpenError;

/// The future of an open.
pub type OpenFuture<'a> = Pin<Box<dyn Future<Output = Result<Arc<dyn OpenStore>, OpenError>> + Send + 'a>>;

/// A store's options, read from its URL: what [`open`](StoreOptions::open) connects to.
pub trait StoreOptions: std::fmt::Debug + Send + Sync + 'static {
    /// Connects (or opens the file) and prepares the store on `runtime`: a network store
    /// connects with its sockets and timers and runs its connections as its tasks.
    fn open(&self, runtime: Arc<dyn Net>) -> OpenFuture<'_>;

    /// The file the store lives in, for a store kept in one (a caller may make its directory).
    fn file(&self) -> Option<&Path> {
        None
    }
}

/// An open store: the provider of every primitive it serves, whatever its kind. Every
/// [`Opened`] backend is one.
pub trait OpenStore: Provider + std::fmt::Debug + Send + Sync + 'static {
    /// The lock backend (locks and task locks): every store serves them.
    fn locks(&self) -> Arc<dyn LockBackend>;

    /// The leader-election backend: every store serves elections.
    fn elections(&self) -> Arc<dyn LeaderElectionBackend>;

    /// The store as something that lists what it holds (what `tenure status` shows); `None` for
    /// a store only this process sees.
    fn inspect(&self) -> Option<Arc<dyn Inspect>>;

    /// Closes the store: later calls through any clone fail.
    fn close(&self) -> BackendFuture<'_, ()>;
}

/// What a store crate implements for its backend (clones share its connection, file or
/// memory) to be an [`OpenStore`].
pub trait Opened: LockBackend + LeaderElectionBackend + Provider + Clone + std::fmt::Debug {
    /// The store as something that lists what it holds; `None` for a store only this process
    /// sees.
    fn inspect(&self) -> Option<Arc<dyn Inspect>>;

    /// Closes the store: later calls through any clone fail.
    fn close(&self) -> BackendFuture<'_, ()>;
}

impl<T: Opened> OpenStore for T {
    fn locks(&self) -> Arc<dyn LockBackend> {
        Arc::new(self.clone())
    }

    fn elections(&self) -> Arc<dyn LeaderElectionBackend> {
        Arc::new(self.clone())
    }

    fn inspect(&self) -> Option<Arc<dyn Inspect>> {
        Opened::inspect(self)
    }

    fn close(&self) -> BackendFuture<'_, ()> {
        Opened::close(self)
    }
}

/// The in-process store: nothing to inspect from outside, nothing to close.
impl Opened for MemoryBackend {
    fn inspect(&self) -> Option<Arc<dyn Inspect>> {
        None
    }

    fn close(&self) -> BackendFuture<'_, ()> {
        Box::pin(async { Ok(()) })
    }
}
