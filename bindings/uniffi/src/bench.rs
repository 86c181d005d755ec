//! With the `bench` feature only: the acquire + release cycle the Kotlin benchmark times, run in
//! Rust — in the same process, on the same store and runtime — as a tokio program runs it (one
//! task of the runtime), so the two differ by the uniffi crossing and the Kotlin layer alone.

use std::sync::Arc;
use std::time::Instant;

use tenure::Runtime;

use crate::store::Store;
use crate::{TenureError, process_runtime, runtime};

/// Microseconds per acquire + release of lock `name` on `store`, over `cycles` cycles: run by a
/// task of the runtime (`in_task`, a Rust program's task), or by the calling thread blocked on
/// each step (a Rust program's `block_on` on its own thread: the store's answers then cross to
/// it from the runtime's threads, as they cross to the JVM's).
#[uniffi::export]
pub fn bench_rust_cycles(store: Arc<Store>, name: String, cycles: u32, in_task: bool) -> Result<f64, TenureError> {
    let lock =
        tenure::Lock::builder(&name, runtime()).shared_backend(store.inner.slots().lock()?).env_load(false).build()?;
    let cycle = async move {
        let start = Instant::now();
        for _ in 0..cycles {
            lock.acquire().await?.release().await?;
        }
        Ok::<_, tenure::Error>(start.elapsed())
    };
    let took = if in_task {
        let task = process_runtime().spawn(cycle);
        process_runtime().block_on(task).map_err(|e| tenure::Error::settings("bench", e.to_string()))??
    } else {
        runtime().block_on("bench", cycle)??
    };
    Ok(took.as_secs_f64() * 1e6 / f64::from(cycles.max(1)))
}

/// Completes once Tenure's runtime has woken it, `after_micros` after the call (0: at once, from a
/// task; else from a thread of its blocking pool, as a store's answer comes later): what a
/// store's answer costs a suspended coroutine beyond the store (the wake-up from a runtime
/// thread, the dispatcher's resume, and the poll).
#[uniffi::export]
pub async fn bench_woken(after_micros: u64) {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    if after_micros == 0 {
        process_runtime().spawn(async move {
            let _ = tx.send(());
        });
    } else {
        process_runtime().spawn_blocking(move || {
            std::thread::sleep(std::time::Duration::from_micros(after_micros));
            let _ = tx.send(());
        });
    }
    let _ = rx.await;
}

/// [`bench_woken`], blocking the calling thread.
#[uniffi::export]
pub fn bench_woken_blocking(after_micros: u64) -> Result<(), TenureError> {
    crate::block("bench", bench_woken_with_ok(after_micros))
}

async fn bench_woken_with_ok(after_micros: u64) -> Result<(), TenureError> {
    bench_woken(after_micros).await;
    Ok(())
}
