//! With the `bench` feature only: the acquire + release cycle the Kotlin benchmark times, run in
//! Rust — in the same process, on the same store and runtime — as a tokio program runs it
//! (`block_on` of one task), so the two differ by the uniffi crossing and the Kotlin layer alone.

use std::sync::Arc;
use std::time::Instant;

use crate::store::Store;
use crate::{TenureError, process_runtime, runtime};

/// Microseconds per acquire + release of lock `name` on `store`, over `cycles` cycles.
#[uniffi::export]
pub fn bench_rust_cycles(store: Arc<Store>, name: String, cycles: u32) -> Result<f64, TenureError> {
    let lock = tenure::Lock::builder(&name, runtime()).shared_backend(store.inner.locks()).env_load(false).build()?;
    let start = Instant::now();
    process_runtime().block_on(async {
        for _ in 0..cycles {
            lock.acquire().await?.release().await?;
        }
        Ok::<_, tenure::Error>(())
    })?;
    Ok(start.elapsed().as_secs_f64() * 1e6 / f64::from(cycles.max(1)))
}

/// Completes once a task of Tenure's runtime has woken it: what a store's answer costs a
/// suspended coroutine beyond the store (the wake-up from a runtime thread, and its poll).
#[uniffi::export]
pub async fn bench_woken() {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    process_runtime().spawn(async move {
        let _ = tx.send(());
    });
    let _ = rx.await;
}

/// [`bench_woken`], blocking the calling thread.
#[uniffi::export]
pub fn bench_woken_blocking() -> Result<(), TenureError> {
    crate::block("bench", async {
        bench_woken().await;
        Ok(())
    })
}
