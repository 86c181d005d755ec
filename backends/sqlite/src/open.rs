//! The SQLite store as `tenure-open`'s table opens it: its schemes, its options and the open
//! store behind one interface.

use std::path::Path;
use std::sync::Arc;

use tenure::backend::{BackendFuture, Inspect};
use tenure::net::Net;
use tenure_store::{OpenFuture, OpenStore, Opened, StoreOptions};

use crate::{SqliteBackend, SqliteOptions};

/// The URL schemes of a SQLite store: `sqlite:///abs/path.db`, `sqlite::memory:`.
pub const SCHEMES: &[&str] = &["sqlite"];

impl StoreOptions for SqliteOptions {
    /// Opens the file on a thread of the store's own: `runtime` is not needed.
    fn open(&self, _runtime: Arc<dyn Net>) -> OpenFuture<'_> {
        let options = self.clone();
        Box::pin(async move { Ok(Arc::new(options.open().await?) as Arc<dyn OpenStore>) })
    }

    /// The file, or `None` for `sqlite::memory:`.
    fn file(&self) -> Option<&Path> {
        Some(self.path()).filter(|path| path.as_os_str() != ":memory:")
    }
}

impl Opened for SqliteBackend {
    fn inspect(&self) -> Option<Arc<dyn Inspect>> {
        Some(Arc::new(self.clone()))
    }

    /// Vacates expired leases (keeping fencing counters) first.
    fn close(&self) -> BackendFuture<'_, ()> {
        Box::pin(SqliteBackend::close(self))
    }
}
