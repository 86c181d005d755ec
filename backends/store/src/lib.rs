//! # tenure-store
//!
//! What Tenure's stores share, for whoever writes one: the driver (`tenure`) knows the backend
//! traits and no store; each store is a crate of its own built on these pieces, and
//! `tenure-open` lists the stores in one table.
//!
//! - [`open`]: what a store implements so that `tenure-open` opens it by URL.
//! - [`url`]: the error of an open, a URL's scheme against a store's list, percent escapes,
//!   a parameter in seconds, and [`url::shown_url`], the one masking of passwords in URLs.
//! - [`tls`] (feature `rustls`): the roots a server is checked against, and the verifier of an
//!   encrypted connection whose certificate is not checked.
//! - [`wait`]: waiters on pushed releases, queued per name (Redis pub/sub, PostgreSQL
//!   LISTEN/NOTIFY, etcd watches).
//! - [`grant`](mod@grant): the message a store pushes when it hands a lock to a queued waiter, and the
//!   route it is pushed on.
//! - [`record`]: grelmicro's JSON metadata, fences and generations as the stores keep them.

#![deny(missing_docs)]

pub mod grant;
pub mod open;
pub mod record;
#[cfg(feature = "rustls")]
pub mod tls;
pub mod url;
pub mod wait;

pub use grant::{grant, route_id};
pub use open::{OpenFuture, OpenStore, Opened, StoreOptions};
pub use url::{OpenError, percent_decode, percent_encode, scheme_in, shown_url, url_seconds};
pub use wait::{Entry, WaitQueues, Wake};
