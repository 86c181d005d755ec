//! Benchmarks of the driver on the memory backend, written once and run by each runtime crate's
//! `cargo bench` (they print a table; nothing here asserts a time).

#![allow(unsafe_code, clippy::print_stdout, clippy::cast_precision_loss)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use event_listener::Event;
use tenure::{Lock, MemoryBackend, Runtime};

use crate::support::{election, ms};

/// A global allocator that counts live heap bytes; a bench binary installs it with
/// `#[global_allocator] static A: Counting = Counting;`.
#[derive(Debug)]
pub struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's layout contract is passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `System.alloc` with this `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: as for `alloc` and `dealloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Live heap bytes (meaningful only with [`Counting`] installed).
pub fn live_bytes() -> usize {
    LIVE.load(Ordering::Relaxed)
}

fn lock<R: Runtime>(rt: &R, backend: &MemoryBackend, name: &str) -> Lock<R> {
    Lock::builder(name, rt.clone())
        .backend(backend.clone())
        .retry_interval(ms(1))
        .env_load(false)
        .build()
        .expect("a valid lock")
}

/// Time of one acquire + release by a single task on a free lock: the median of 21 batches of
/// `batch` cycles (this machine is shared; the median resists the noise).
pub async fn one_task_cycle<R: Runtime>(rt: &R, batch: u32) -> Duration {
    let backend = MemoryBackend::new();
    let lock = lock(rt, &backend, "bench");
    for _ in 0..batch {
        lock.acquire().await.expect("acquired").release().await.expect("released");
    }
    let mut batches = Vec::with_capacity(21);
    for _ in 0..21 {
        let started = Instant::now();
        for _ in 0..batch {
            lock.acquire().await.expect("acquired").release().await.expect("released");
        }
        batches.push(started.elapsed() / batch);
    }
    batches.sort();
    batches[batches.len() / 2]
}

/// Acquire + release cycles per second of `tasks` tasks spread over `names` lock names.
pub async fn contended_cycles_per_second<R: Runtime>(rt: &R, tasks: usize, names: usize, per_task: u32) -> f64 {
    let backend = MemoryBackend::new();
    let done = Arc::new((AtomicUsize::new(0), Event::new()));
    let started = Instant::now();
    for task in 0..tasks {
        let lock = lock(rt, &backend, &format!("bench-{}", task % names));
        let done = done.clone();
        rt.spawn(async move {
            for _ in 0..per_task {
                lock.acquire().await.expect("acquired").release().await.expect("released");
            }
            done.0.fetch_add(1, Ordering::SeqCst);
            done.1.notify(usize::MAX);
        });
    }
    loop {
        let listener = done.1.listen();
        if done.0.load(Ordering::SeqCst) == tasks {
            break;
        }
        listener.await;
    }
    let cycles = tasks as f64 * f64::from(per_task);
    cycles / started.elapsed().as_secs_f64()
}

/// Median time from a leader's clean stop being called to the follower leading. The follower
/// retries every 2 s, so only the release's push wake-up can make this fast.
pub async fn leader_hand_over<R: Runtime>(rt: &R, rounds: usize) -> Duration {
    let backend = MemoryBackend::new();
    let mut times = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let a = election(rt, backend.clone(), &format!("a{round}"));
        let follower = tenure::LeaderElection::builder("svc", rt.clone())
            .backend(backend.clone())
            .worker(tenure::WorkerId::new(&format!("b{round}")).expect("valid"))
            .retry_interval(Duration::from_secs(2))
            .env_load(false)
            .build()
            .expect("valid");
        a.start();
        a.wait_for_leader().await;
        follower.start();
        // Let the follower's first attempt (which sees a leading) complete.
        while follower.record().is_none() {
            rt.sleep_until(rt.now() + ms(1)).await;
        }
        let started = Instant::now();
        let stopping = a.stop();
        follower.wait_for_leader().await;
        times.push(started.elapsed());
        stopping.await;
        follower.stop().await;
    }
    times.sort();
    times[times.len() / 2]
}

/// Heap bytes per lock while `count` guards are held at once (guards, machines, store entries).
pub async fn bytes_per_held_lock<R: Runtime>(rt: &R, count: usize) -> usize {
    let backend = MemoryBackend::new();
    let before = live_bytes();
    let mut guards = Vec::with_capacity(count);
    for i in 0..count {
        guards.push(lock(rt, &backend, &format!("held/{i:06}")).acquire().await.expect("acquired"));
    }
    let bytes = live_bytes().saturating_sub(before);
    for guard in guards {
        guard.release().await.expect("released");
    }
    bytes / count
}

/// Heap bytes the memory backend keeps per held lock (its entries with their own key and token
/// text), measured through the backend's own interface.
pub async fn store_bytes_per_held_lock(count: usize) -> usize {
    let backend = MemoryBackend::new();
    let before = live_bytes();
    for i in 0..count {
        let (name, token) = (format!("lock:held/{i:06}"), format!("0123456789abcdef:task:{i}.0123456789abcdef"));
        let granted = tenure::backend::LockCalls::acquire(&backend, &name, &token, Duration::from_secs(60)).await;
        assert!(granted.is_ok_and(|fence| fence.is_some()));
    }
    live_bytes().saturating_sub(before) / count
}

/// Heap growth over `cycles` start/stop cycles of an election, after a warm-up.
pub async fn start_stop_growth<R: Runtime>(rt: &R, cycles: usize) -> isize {
    let backend = MemoryBackend::new();
    let e = election(rt, backend, "w1");
    for _ in 0..100 {
        e.start();
        e.stop().await;
    }
    let before = live_bytes();
    for _ in 0..cycles {
        e.start();
        e.stop().await;
    }
    // Background tasks finish on their own time: give them a moment.
    rt.sleep_until(rt.now() + ms(50)).await;
    live_bytes().cast_signed() - before.cast_signed()
}

/// Runs every benchmark and prints the table for `runtime_name`.
pub async fn run_all<R: Runtime>(rt: R, runtime_name: &str) {
    println!("tenure driver benchmarks on {runtime_name} (memory backend)");
    let one = one_task_cycle(&rt, 10_000).await;
    println!("  one task, acquire + release:        {:>10.0} ns per cycle (median batch)", one.as_nanos() as f64);
    let same = contended_cycles_per_second(&rt, 8, 1, 20_000).await;
    println!("  8 tasks on one name:                {same:>10.0} cycles/s");
    let spread = contended_cycles_per_second(&rt, 8, 8, 50_000).await;
    println!("  8 tasks on 8 names:                 {spread:>10.0} cycles/s");
    let hand_over = leader_hand_over(&rt, 50).await;
    println!("  leader hand-over after clean stop:  {:>10.1} µs median", hand_over.as_secs_f64() * 1e6);
    let per_lock = bytes_per_held_lock(&rt, 100_000).await;
    println!(
        "  100,000 locks held at once (guards, locks, store): {:>6.1} MiB ({per_lock} bytes per lock)",
        (per_lock * 100_000) as f64 / (1 << 20) as f64
    );
    let store = store_bytes_per_held_lock(100_000).await;
    println!(
        "    of which the memory backend:      {:>10.1} MiB ({store} bytes per lock)",
        (store * 100_000) as f64 / (1 << 20) as f64
    );
    let growth = start_stop_growth(&rt, 10_000).await;
    println!("  10,000 election start/stop cycles:  {growth:>10} bytes of heap growth");
}
