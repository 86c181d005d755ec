//! The PostgreSQL store as `tenure-open`'s table opens it: its schemes, its options and the open
//! store behind one interface.

use std::sync::Arc;

use tenure::backend::{BackendFuture, Inspect};
use tenure::net::Net;
use tenure_store::{OpenFuture, OpenStore, Opened, StoreOptions, scheme_in};

use crate::{PostgresBackend, PostgresOptions};

/// The URL schemes of a PostgreSQL database (`postgresql+asyncpg` as SQLAlchemy writes it is read as `postgresql`).
pub const SCHEMES: &[&str] = &["postgresql", "postgres", "postgresql+*"];

/// `url` as messages and logs may show it (see [`tenure_store::shown_url`]).
pub(crate) fn shown_url(url: &str) -> String {
    tenure_store::shown_url(url, |scheme| scheme_in(SCHEMES, scheme))
}

impl StoreOptions for PostgresOptions {
    fn open(&self, runtime: Arc<dyn Net>) -> OpenFuture<'_> {
        let options = self.clone();
        Box::pin(async move { Ok(Arc::new(options.open(runtime).await?) as Arc<dyn OpenStore>) })
    }
}

impl Opened for PostgresBackend {
    fn inspect(&self) -> Option<Arc<dyn Inspect>> {
        Some(Arc::new(self.clone()))
    }

    /// Closes at once: the leases end by their expiry.
    fn close(&self) -> BackendFuture<'_, ()> {
        PostgresBackend::close(self);
        Box::pin(async { Ok(()) })
    }
}
