//! The Redis store as `tenure-open`'s table opens it: its schemes, its options and the open
//! store behind one interface.

use std::sync::Arc;

use tenure::backend::{BackendFuture, Inspect};
use tenure::net::Net;
use tenure_store::{OpenFuture, OpenStore, Opened, StoreOptions, scheme_in};

use crate::{RedisBackend, RedisOptions};

/// The URL schemes of a Redis or Valkey server, cluster or Sentinel group.
pub const SCHEMES: &[&str] = &[
    "redis",
    "rediss",
    "redis+unix",
    "unix",
    "valkey",
    "valkeys",
    "redis+cluster",
    "rediss+cluster",
    "valkey+cluster",
    "valkeys+cluster",
    "redis+sentinel",
    "valkey+sentinel",
    "rediss+sentinel",
    "valkeys+sentinel",
];

/// `url` as messages and logs may show it (see [`tenure_store::shown_url`]).
pub(crate) fn shown_url(url: &str) -> String {
    tenure_store::shown_url(url, |scheme| scheme_in(SCHEMES, scheme))
}

impl StoreOptions for RedisOptions {
    fn open(&self, runtime: Arc<dyn Net>) -> OpenFuture<'_> {
        let options = self.clone();
        Box::pin(async move { Ok(Arc::new(options.open(runtime).await?) as Arc<dyn OpenStore>) })
    }
}

impl Opened for RedisBackend {
    fn inspect(&self) -> Option<Arc<dyn Inspect>> {
        Some(Arc::new(self.clone()))
    }

    /// Closes at once: the leases end by their expiry.
    fn close(&self) -> BackendFuture<'_, ()> {
        RedisBackend::close(self);
        Box::pin(async { Ok(()) })
    }
}
