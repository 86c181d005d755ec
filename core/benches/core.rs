//! Benchmarks of the core: one acquire → held → release cycle through the Lock machine and the
//! store model, one election renew step, and the memory a machine and a store entry take.
//!
//! `cargo bench -p tenure-core` prints the footprint first, then divan's timings.
#![allow(unsafe_code, clippy::unwrap_used, clippy::print_stdout)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tenure_core::{
    ElectionMachine, Key, KeyKind, LeaderElectionConfig, LockConfig, LockMachine, Metadata, Name, SplitMix64,
    StoreModel, TaskLockMachine, Timestamp, Token, WallTime,
};

/// Counts live heap bytes, to measure what a store entry keeps.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: same layout contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `System.alloc` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn main() {
    footprint();
    divan::main();
}

fn lock_key(i: usize) -> Key {
    Key::new(KeyKind::Lock, &Name::new(&format!("orders/{i:06}")).unwrap())
}

/// Prints inline sizes and the heap a held lock keeps in the store model.
fn footprint() {
    println!("footprint:");
    println!("  LockMachine            {:>4} bytes inline", size_of::<LockMachine>());
    println!("  TaskLockMachine        {:>4} bytes inline", size_of::<TaskLockMachine>());
    println!("  ElectionMachine        {:>4} bytes inline", size_of::<ElectionMachine>());
    const N: usize = 100_000;
    let mut store = StoreModel::new(WallTime::UNIX_EPOCH);
    let before = LIVE.load(Ordering::Relaxed);
    let lease = Duration::from_secs(60);
    for i in 0..N {
        // Key and token text are the ones a caller passes; the model keeps them alive.
        let token = Token::new(&format!("0123456789abcdef:task:{i}.0123456789abcdef")).unwrap();
        store.lock_acquire(&lock_key(i), &token, lease, Timestamp::ZERO);
    }
    let bytes = LIVE.load(Ordering::Relaxed).wrapping_sub(before);
    println!(
        "  store model, {N} held locks: {:.1} MiB, {} bytes per lock (key, token, fence, expiry, map)",
        bytes as f64 / (1 << 20) as f64,
        bytes / N
    );
    black_box(store);
}

/// acquire → held → release on a free lock, the machine and the model in one thread.
#[divan::bench(sample_count = 500, sample_size = 200)]
fn lock_acquire_release_cycle(bencher: divan::Bencher<'_, '_>) {
    let mut rng = SplitMix64::new(1);
    let config = LockConfig::builder().build(&mut rng).unwrap();
    let token = Token::new("0123456789abcdef:task:1.0123456789abcdef").unwrap();
    let mut lock = LockMachine::new(lock_key(1), token, &config, &mut rng);
    let mut store = StoreModel::new(WallTime::UNIX_EPOCH);
    let mut now = Timestamp::from_nanos(1);
    bencher.bench_local(|| {
        now = now + Duration::from_micros(1);
        lock.acquire(now, None).unwrap();
        while let Some(request) = lock.poll_effect() {
            let reply = store.apply(&request.op, now);
            lock.handle_reply(now, request.id, Ok(reply));
        }
        black_box(lock.poll_event());
        lock.release(now).unwrap();
        while let Some(request) = lock.poll_effect() {
            let reply = store.apply(&request.op, now);
            lock.handle_reply(now, request.id, Ok(reply));
        }
        black_box(lock.poll_event());
    });
}

/// One renewal of a sitting leader: the timer fires, the request runs, the answer is handled.
#[divan::bench(sample_count = 500, sample_size = 200)]
fn election_renew_step(bencher: divan::Bencher<'_, '_>) {
    let mut rng = SplitMix64::new(2);
    let config = LeaderElectionConfig::builder().build(&mut rng).unwrap();
    let token = Token::new(config.worker().as_str()).unwrap();
    let key = Key::new(KeyKind::Leader, &Name::new("svc").unwrap());
    let meta = Metadata::from_pairs([("pod", "p1")]).unwrap();
    let mut now = Timestamp::from_nanos(1);
    let mut election = ElectionMachine::new(key, token, config, meta, now, &mut rng);
    let mut store = StoreModel::new(WallTime::UNIX_EPOCH);
    election.start(now);
    let mut step = |now: Timestamp| {
        election.handle_timeout(now);
        while let Some(request) = election.poll_effect() {
            let reply = store.apply(&request.op, now);
            election.handle_reply(now, request.id, Ok(reply));
        }
        while let Some(event) = election.poll_event() {
            black_box(event);
        }
        election.poll_timeout().unwrap()
    };
    now = step(now);
    bencher.bench_local(|| {
        now = step(now);
    });
}
