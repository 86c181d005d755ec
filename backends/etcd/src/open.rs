//! The etcd store as `tenure-open`'s table opens it: its schemes, its options and the open
//! store behind one interface.

use std::sync::Arc;

use tenure::backend::{BackendFuture, Inspect};
use tenure::net::Net;
use tenure_store::{OpenFuture, OpenStore, Opened, StoreOptions, scheme_in};

use crate::{EtcdBackend, EtcdOptions};

/// The URL schemes of an etcd cluster: `etcd://`, or `etcds://` with TLS.
pub const SCHEMES: &[&str] = &["etcd", "etcds"];

/// `url` as messages and logs may show it (see [`tenure_store::shown_url`]).
pub(crate) fn shown_url(url: &str) -> String {
    tenure_store::shown_url(url, |scheme| scheme_in(SCHEMES, scheme))
}

impl StoreOptions for EtcdOptions {
    /// etcd's client runs on tokio: where it is polled, else on a runtime of its own; `runtime`
    /// is not needed.
    fn open(&self, _runtime: Arc<dyn Net>) -> OpenFuture<'_> {
        let options = self.clone();
        Box::pin(async move { Ok(Arc::new(EtcdBackend::open(options).await?) as Arc<dyn OpenStore>) })
    }
}

impl Opened for EtcdBackend {
    fn inspect(&self) -> Option<Arc<dyn Inspect>> {
        Some(Arc::new(self.clone()))
    }

    /// Closes at once: the leases end by their expiry.
    fn close(&self) -> BackendFuture<'_, ()> {
        EtcdBackend::close(self);
        Box::pin(async { Ok(()) })
    }
}
