//! # tenure-open
//!
//! Opens any Tenure store from a URL or from grelmicro's environment variables: the one place
//! the CLI and every binding turn text into a store. Each store is behind a cargo feature
//! (`backend-sqlite`, `backend-redis`, `backend-postgres`, `backend-etcd`, all on by default); the in-process
//! memory store is always there.
//!
//! - [`open`] takes a URL: `memory:`, `sqlite:///abs/path.db`, `redis://…`, `rediss://…`,
//!   `redis+cluster://…`, `redis+sentinel://…`, `postgresql://…`, `etcd://…` (every scheme is
//!   in [`STORES`], the one table of stores).
//! - [`Target::from_env`] reads grelmicro's variables (`REDIS_URL` xor `REDIS_HOST` + `PORT`,
//!   `DB`, `PASSWORD`; `POSTGRES_URL` xor `POSTGRES_HOST` + `PORT`, `DB`/`DATABASE`, `USER`,
//!   `PASSWORD`, `COMMAND_TIMEOUT`; `SQLITE_PATH`, `SQLITE_SYNCHRONOUS`; and Tenure's own
//!   `ETCD_URL` xor `ETCD_HOST` + `PORT`, `USER`, `PASSWORD`), and [`resolve_url`]
//!   merges them with settings given in code ([`Keywords`]) as grelmicro's providers do.
//! - A bad URL or variable is an [`OpenError::Settings`] whose field names the part of the URL
//!   or the variable that is wrong; an unknown scheme lists the known ones. No message shows a
//!   password: URLs are shown through [`shown_url`], the one masking.
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use tenure::Coordination;
//!
//! let store = tenure_open::open("sqlite:///var/lib/app/locks.db", tenure_tokio::Tokio::current()).await?;
//! let coordination = Coordination::new(tenure_tokio::Tokio::current()).source(&store);
//! let guard = coordination.lock("orders")?.build()?.acquire().await?;
//! guard.release().await?;
//! store.close().await?;
//! # Ok(()) }
//! ```

#![deny(missing_docs)]

mod backends;
mod env;
mod kind;
pub mod reach;
mod store;
mod target;

pub use backends::{Backends, Origin};
pub use env::{Keywords, resolve_url};
pub use kind::{Entry, STORES, StoreKind, shown_url};
pub use store::Store;
pub use target::Target;
pub use tenure::net::Net;
pub use tenure_store::OpenError;

/// Opens the store `url` names (see [`Target::from_url`]) on `runtime` (see [`Target::open`]).
pub async fn open(url: &str, runtime: impl Net) -> Result<Store, OpenError> {
    Target::from_url(url)?.open(runtime).await
}
