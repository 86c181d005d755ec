//! # tenure-async-std
//!
//! [Tenure](tenure) on [async-std]: distributed locks with fencing tokens, task locks and leader
//! election. This crate is the [`Runtime`] implementation and type aliases; everything else is
//! re-exported from [`tenure`].
//!
//! **async-std is discontinued upstream** (RUSTSEC-2025-0052); it still builds and Tenure keeps
//! it working for existing applications, but new ones should prefer `tenure-smol` (async-std's
//! successor) or `tenure-tokio`.
//!
//! ```
//! use tenure_async_std::{AsyncStd, Lock, MemoryBackend};
//!
//! async_std::task::block_on(async {
//!     let lock = Lock::builder("orders", AsyncStd).backend(MemoryBackend::new()).build()?;
//!     let guard = lock.acquire().await?;
//!     assert_eq!(guard.fencing_token().get(), 1);
//!     guard.release().await
//! })?;
//! # Ok::<(), tenure::Error>(())
//! ```

#![deny(missing_docs)]

use std::io;
use std::path::Path;
use std::time::Duration;

pub use tenure::*;
use tokio_util::compat::FuturesAsyncReadCompatExt;

/// The async-std runtime, as Tenure sees it.
#[derive(Clone, Copy, Debug, Default)]
pub struct AsyncStd;

impl Runtime for AsyncStd {
    type Sleep = async_io::Timer;

    fn sleep_until(&self, deadline: Timestamp) -> async_io::Timer {
        // async-std's own timers are async-io's.
        async_io::Timer::at(runtime::clock::instant(deadline))
    }

    fn spawn<F>(&self, task: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        drop(async_std::task::spawn(task));
    }

    fn blocks_runtime(&self) -> bool {
        // Inside an async-std task, blocking would stall an executor thread.
        async_std::task::try_current().is_some()
    }
}

/// Stores connect with async-std's sockets and async-io's timers, and run their readers as tasks of
/// this runtime (through `tokio_util::compat`, the streams speak the traits the stores read).
impl net::Net for AsyncStd {
    fn connect_tcp(&self, host: &str, port: u16, timeout: Duration) -> net::NetFuture<io::Result<net::Socket>> {
        let (runtime, host) = (*self, host.to_owned());
        Box::pin(async move {
            let connecting = async_std::net::TcpStream::connect((host.as_str(), port));
            let stream = net::within(&runtime, timeout, connecting).await.ok_or_else(|| net::timed_out(timeout))??;
            stream.set_nodelay(true)?;
            Ok(net::Socket::new(stream.compat(), move |reader| runtime.spawn(reader), || true))
        })
    }

    fn connect_unix(&self, path: &Path, timeout: Duration) -> net::NetFuture<io::Result<net::Socket>> {
        let (runtime, path) = (*self, path.to_owned());
        Box::pin(async move {
            let connecting = async_std::os::unix::net::UnixStream::connect(path);
            let stream = net::within(&runtime, timeout, connecting).await.ok_or_else(|| net::timed_out(timeout))??;
            Ok(net::Socket::new(stream.compat(), move |reader| runtime.spawn(reader), || true))
        })
    }

    fn sleep(&self, duration: Duration) -> net::NetFuture<()> {
        let timer = async_io::Timer::after(duration);
        Box::pin(async move {
            timer.await;
        })
    }
}

tenure::runtime_aliases!(AsyncStd);
