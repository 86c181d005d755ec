//! The stores Tenure keeps leases in: the three backend traits of grelmicro's coordination API
//! (spec §5) and the in-process [`MemoryBackend`].
//!
//! Names arrive with their kind prefix (`lock:cart`, `tasklock:job`, `leader:svc`), tokens are
//! opaque text. A backend answers the reference semantics of [`tenure_core::StoreModel`]; the
//! conformance suite checks each one against it.
//!
//! **Order.** A backend runs the calls made under one token in the order they were made, even
//! when an earlier one timed out on the caller's side: a late `release` must not overtake the
//! `acquire_or_renew` of the same worker that followed it (an election's token is its worker
//! identity), nor a late shortening of a task-lock hold the enter that reuses its token. One
//! ordered connection per caller gives this; a pool must not let a later call of the same token
//! overtake an earlier one still running. (Lock holders take a fresh token per acquisition and
//! need no such care; the simulator, tests/sim, found what happens without it.)

mod contract;
mod inspect;
mod memory;
mod rw;
mod sem;
pub mod user;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use event_listener::{Event, EventListener};

pub use contract::{
    LeaderElectionBackend, LeaderElectionCalls, LeaderElectionOperations, LockBackend, LockCalls, LockOperations,
    granted, refused, state_of,
};
pub use inspect::{HolderInfo, Holding, Inspect, LeaderState, LockState, SharedState, Side, Waiting, holder_worker};
pub use memory::MemoryBackend;
pub use rw::{ReadWriteCalls, ReadWriteLockBackend, ReadWriteOperations};
pub use sem::{SemaphoreBackend, SemaphoreCalls, SemaphoreOperations};
use tenure_core::BackendError;

/// The future a backend method returns.
pub type BackendFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, BackendError>> + Send + 'a>>;

/// A push wake-up: completes the next time the name it was made for is released. Made *before*
/// the attempt it may rescue, so that a release between the attempt and the wait is not missed.
pub struct Wakeup(WakeupInner);

enum WakeupInner {
    /// A [`Signal`] rung after `seen`: costs nothing until awaited.
    Ticket {
        signal: Arc<Signal>,
        seen: u64,
        listener: Option<EventListener>,
    },
    Future(Pin<Box<dyn Future<Output = ()> + Send>>),
}

impl Wakeup {
    /// Wraps a future that completes on the next release.
    pub fn new(future: impl Future<Output = ()> + Send + 'static) -> Self {
        Self(WakeupInner::Future(Box::pin(future)))
    }

    /// Completes when either completes.
    pub fn or(self, other: Wakeup) -> Wakeup {
        Wakeup::new(futures_lite::future::or(self, other))
    }
}

impl Future for Wakeup {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match &mut self.0 {
            WakeupInner::Future(future) => future.as_mut().poll(cx),
            WakeupInner::Ticket { signal, seen, listener } => loop {
                if signal.rung.load(Ordering::SeqCst) != *seen {
                    return Poll::Ready(());
                }
                match listener {
                    // Listen, then look again: a ring between the look and the listen is seen.
                    None => *listener = Some(signal.event.listen()),
                    Some(l) => {
                        if Pin::new(l).poll(cx).is_pending() {
                            return Poll::Pending;
                        }
                        *listener = None;
                    }
                }
            },
        }
    }
}

/// What a backend rings when a name is released: waiters hold [`Wakeup`] tickets taken before
/// their attempt, and any ring after that completes them. Cheap to take and to ring with nobody
/// waiting.
#[derive(Debug, Default)]
pub struct Signal {
    rung: AtomicU64,
    event: Event,
}

impl Signal {
    /// A signal never rung.
    pub fn new() -> Self {
        Self::default()
    }

    /// Wakes every ticket taken before now.
    pub fn ring(&self) {
        self.rung.fetch_add(1, Ordering::SeqCst);
        self.event.notify(usize::MAX);
    }

    /// A wake-up for the next ring.
    pub fn ticket(self: &Arc<Self>) -> Wakeup {
        let seen = self.rung.load(Ordering::SeqCst);
        Wakeup(WakeupInner::Ticket { signal: self.clone(), seen, listener: None })
    }
}

/// Release signals for any number of names, shared by names that hash alike (a stray wake-up
/// costs one early attempt): what a backend that sees releases in-process rings, and what its
/// [`LockBackend::wakeup`] hands out.
#[derive(Debug)]
pub struct ReleaseSignals {
    channels: [Arc<Signal>; RELEASE_CHANNELS],
}

const RELEASE_CHANNELS: usize = 64;

impl ReleaseSignals {
    /// Signals nobody rang yet.
    pub fn new() -> Self {
        Self { channels: std::array::from_fn(|_| Arc::new(Signal::new())) }
    }

    /// Wakes every waiter on `name` (and on the names that share its channel).
    pub fn ring(&self, name: &str) {
        self.channel(name).ring();
    }

    /// Wakes every waiter on every name (after a lost connection: releases may have been missed).
    pub fn ring_all(&self) {
        for channel in &self.channels {
            channel.ring();
        }
    }

    /// A wake-up for the next ring of `name`.
    pub fn ticket(&self, name: &str) -> Wakeup {
        self.channel(name).ticket()
    }

    fn channel(&self, name: &str) -> &Arc<Signal> {
        &self.channels[usize::try_from(name_hash(name) % RELEASE_CHANNELS as u64).unwrap_or_default()]
    }
}

/// A stable, cheap hash of a name (FNV-1a), to spread names over channels or connections.
pub fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

impl Default for ReleaseSignals {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Wakeup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Wakeup")
    }
}

/// Cron schedule claims (spec §5.3).
pub trait ScheduleBackend: Send + Sync + 'static {
    /// Stores `due` (epoch seconds) iff nothing is stored or the stored value is earlier; true iff
    /// this call wrote. Exactly one winner per `(name, due)`.
    fn claim<'a>(&'a self, name: &'a str, due: f64) -> BackendFuture<'a, bool>;

    /// The last claimed fire time.
    fn last_fired<'a>(&'a self, name: &'a str) -> BackendFuture<'a, Option<f64>>;
}
