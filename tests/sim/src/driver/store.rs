//! The simulated store for the driver: the core's `StoreModel` behind a network that delays,
//! loses, fails and freezes calls as the seed says. Each worker reaches it through its own
//! [`Connection`], which applies its calls in the order they were made (as the driver requires
//! of calls made under one token) — a lost call never applies.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tenure::backend::{BackendFuture, LockBackend, ReleaseSignals, Wakeup};
use tenure::{BackendError, BackendErrorKind, Runtime};
use tenure_core::{StoreModel, StoreOp, StoreReply, Timestamp, WallTime};

use super::runtime::SimRuntime;
use crate::profile::ms;
use crate::rand::Stream;

/// How the network between the workers and the store misbehaves, until `until` (ns).
#[derive(Clone, Debug)]
pub(crate) struct Network {
    /// Every call's delay each way, in `[low, high]` ns.
    pub(crate) delay: (u64, u64),
    /// Share of calls delayed up to `spike_max` instead (past their deadline, some of them).
    pub(crate) spike: f64,
    pub(crate) spike_max: u64,
    /// Share of calls lost before the store.
    pub(crate) loss: f64,
    /// Share of replies lost after the store applied the call.
    pub(crate) reply_loss: f64,
    /// Share of calls that fail (the store unavailable) before applying.
    pub(crate) errors: f64,
    /// Windows `[start, end)` in which the store is frozen: calls wait for the thaw.
    pub(crate) freezes: Vec<(u64, u64)>,
    /// When the faults stop (delays stay).
    pub(crate) until: u64,
}

impl Network {
    /// The network of one seed.
    pub(crate) fn draw(rng: &mut Stream, lease: u64, timeout: u64) -> Self {
        let faulty = rng.chance(0.8);
        let until = rng.between(ms(500), ms(3_000));
        let mut freezes = Vec::new();
        if faulty && rng.chance(0.5) {
            let mut at = rng.between(ms(100), ms(1_000));
            while at < until {
                let len = rng.between(ms(10), 2 * lease);
                freezes.push((at, at + len));
                at += len + rng.between(ms(200), ms(2_000));
            }
        }
        let p = |rng: &mut Stream| if faulty { rng.float(0.0, 0.08) } else { 0.0 };
        Self {
            delay: (ms(0), rng.between(ms(1), ms(10))),
            spike: p(rng),
            spike_max: 2 * timeout,
            loss: p(rng),
            reply_loss: p(rng),
            errors: p(rng),
            freezes,
            until,
        }
    }

    /// When a call ready at `at` gets through, past any freeze.
    fn thawed(&self, at: u64) -> u64 {
        self.freezes.iter().find(|(start, end)| (*start..*end).contains(&at)).map_or(at, |(_, end)| *end)
    }
}

/// The store and its network, shared by every connection.
pub(crate) struct Store {
    model: StoreModel,
    net: Stream,
    network: Network,
    releases: Arc<ReleaseSignals>,
}

impl Store {
    pub(crate) fn new(seed: u64, network: Network) -> Arc<Mutex<Self>> {
        let model = StoreModel::new(WallTime::UNIX_EPOCH);
        let releases = Arc::new(ReleaseSignals::new());
        Arc::new(Mutex::new(Self { model, net: Stream::new(seed, "driver-network"), network, releases }))
    }
}

impl Store {
    /// Whether the model holds a live lease on `key` at `now`.
    pub(crate) fn locked(&self, key: &str, now: Timestamp) -> bool {
        self.model.lock_locked(key, now)
    }

    /// When the last call the faults touched has reached the store: the faults stop, the last
    /// freeze thaws, and a call delayed by a spike arrives.
    pub(crate) fn faults_settled(&self) -> u64 {
        let thawed = self.network.freezes.iter().map(|(_, end)| *end).max().unwrap_or(0);
        self.network.until.max(thawed) + self.network.spike_max + self.network.delay.1
    }
}

/// The fate of one call, drawn when it is made.
struct Fate {
    apply_at: u64,
    reply_at: u64,
    lost: bool,
    reply_lost: bool,
    error: bool,
}

/// One worker's ordered connection to the store.
#[derive(Clone)]
pub(crate) struct Connection {
    rt: SimRuntime,
    store: Arc<Mutex<Store>>,
    /// When this connection's last call applies: the next applies no earlier.
    last_apply: Arc<Mutex<u64>>,
}

impl Connection {
    pub(crate) fn new(rt: &SimRuntime, store: &Arc<Mutex<Store>>) -> Self {
        Self { rt: rt.clone(), store: store.clone(), last_apply: Arc::new(Mutex::new(0)) }
    }

    fn store(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn fate(&self) -> Fate {
        let now = self.rt.nanos();
        let mut store = self.store();
        let Store { net, network, .. } = &mut *store;
        let faulty = now < network.until;
        let delay = |net: &mut Stream| {
            if faulty && net.chance(network.spike) {
                net.between(0, network.spike_max)
            } else {
                net.between(network.delay.0, network.delay.1)
            }
        };
        let (there, back) = (delay(net), delay(net));
        let lost = faulty && net.chance(network.loss);
        let reply_lost = faulty && net.chance(network.reply_loss);
        let error = faulty && net.chance(network.errors);
        let mut last = self.last_apply.lock().unwrap_or_else(PoisonError::into_inner);
        let apply_at = network.thawed((now + there).max(*last));
        if !lost {
            *last = apply_at;
        }
        let reply_at = network.thawed(apply_at + back);
        Fate { apply_at, reply_at, lost, reply_lost, error }
    }
}

impl LockBackend for Connection {
    fn wakeup(&self, name: &str) -> Option<Wakeup> {
        Some(self.store().releases.ticket(name))
    }

    fn execute(&self, op: StoreOp) -> BackendFuture<'static, StoreReply> {
        let fate = self.fate();
        let this = self.clone();
        Box::pin(async move {
            let rt = this.rt.clone();
            rt.sleep_until(Timestamp::from_nanos(fate.apply_at)).await;
            if fate.lost {
                std::future::pending::<()>().await;
            }
            if fate.error {
                return Err(BackendError::new(BackendErrorKind::Unavailable, "the simulated store is unavailable"));
            }
            let reply = {
                let mut store = this.store();
                let reply = store.model.apply(&op, rt.now());
                if let (StoreOp::LockRelease { key, .. }, StoreReply::Flag(true)) = (&op, &reply) {
                    store.releases.ring(key.as_str());
                }
                reply
            };
            rt.sleep_until(Timestamp::from_nanos(fate.reply_at)).await;
            if fate.reply_lost {
                std::future::pending::<()>().await;
            }
            Ok(reply)
        })
    }
}
