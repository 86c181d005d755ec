//! # tenure-smol
//!
//! [Tenure](tenure) on [smol]: distributed locks with fencing tokens, task locks and leader
//! election. This crate is the [`Runtime`] implementation and type aliases; everything else is
//! re-exported from [`tenure`].
//!
//! ```
//! use tenure_smol::{Lock, MemoryBackend, Smol};
//!
//! smol::block_on(async {
//!     let lock = Lock::builder("orders", Smol::global()).backend(MemoryBackend::new()).build()?;
//!     let guard = lock.acquire().await?;
//!     assert_eq!(guard.fencing_token().get(), 1);
//!     guard.release().await
//! })?;
//! # Ok::<(), tenure::Error>(())
//! ```
//!
//! Background work (releases handed over by dropped guards, election loops) runs on an
//! executor: smol's global one by default, or yours with [`Smol::with_executor`] — which must
//! then be run. Blocking adapters cannot tell whether they are called from an executor thread;
//! call them from plain threads.

#![deny(missing_docs)]

use std::sync::Arc;

use std::io;
use std::path::Path;
use std::time::Duration;

pub use tenure::*;
use tokio_util::compat::FuturesAsyncReadCompatExt;

/// The smol runtime, as Tenure sees it: `async-io` timers and an executor for background tasks.
#[derive(Clone, Debug, Default)]
pub struct Smol {
    executor: Option<Arc<smol::Executor<'static>>>,
}

impl Smol {
    /// Background tasks on smol's global executor (threads started on first use).
    pub fn global() -> Self {
        Self { executor: None }
    }

    /// Background tasks on `executor` (which the application runs).
    pub fn with_executor(executor: Arc<smol::Executor<'static>>) -> Self {
        Self { executor: Some(executor) }
    }
}

impl Runtime for Smol {
    type Sleep = async_io::Timer;

    fn sleep_until(&self, deadline: Timestamp) -> async_io::Timer {
        async_io::Timer::at(runtime::clock::instant(deadline))
    }

    fn spawn<F>(&self, task: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        match &self.executor {
            Some(executor) => executor.spawn(task).detach(),
            None => smol::spawn(task).detach(),
        }
    }
}

/// Stores connect with smol's sockets and async-io's timers, and run their readers as tasks of
/// this runtime (through `tokio_util::compat`, the streams speak the traits the stores read).
impl net::Net for Smol {
    fn connect_tcp(&self, host: &str, port: u16, timeout: Duration) -> net::NetFuture<io::Result<net::Socket>> {
        let (runtime, host) = (self.clone(), host.to_owned());
        Box::pin(async move {
            let connecting = smol::net::TcpStream::connect((host.as_str(), port));
            let stream = net::within(&runtime, timeout, connecting).await.ok_or_else(|| net::timed_out(timeout))??;
            stream.set_nodelay(true)?;
            Ok(net::Socket::new(stream.compat(), move |reader| runtime.spawn(reader), || true))
        })
    }

    fn connect_unix(&self, path: &Path, timeout: Duration) -> net::NetFuture<io::Result<net::Socket>> {
        let (runtime, path) = (self.clone(), path.to_owned());
        Box::pin(async move {
            let connecting = smol::net::unix::UnixStream::connect(path);
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

tenure::runtime_aliases!(Smol);
