//! What a seed runs: the workload (workers, names, timings) and the faults, each drawn from the
//! seed. A profile is a distribution of fault settings; every seed of a profile switches faults on
//! and tunes them its own way.

use std::fmt;
use std::time::Duration;

use tenure_core::{LeaderElectionConfig, LockConfig, TaskLockConfig};

use crate::rand::Stream;

/// Milliseconds as nanoseconds.
pub const fn ms(n: u64) -> u64 {
    n * 1_000_000
}

/// A named distribution of fault settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// Every fault family, each switched on for about half the seeds (the default).
    Mixed,
    /// No faults: message delays only.
    Calm,
    /// Delays, reordering, loss, duplicates, lost replies and partitions.
    Network,
    /// Clock offsets, drift within bounds and forward jumps.
    Clocks,
    /// Process pauses longer than the lease.
    Pauses,
    /// Worker crashes and restarts, store restarts.
    Crashes,
    /// Clocks outside the bounds (slow drift beyond the 1 % allowance, clocks that stall): mutual
    /// exclusion of beliefs is not promised and not checked; fencing must still hold.
    UnboundedClocks,
    /// The driver itself (`tenure`'s `Lock`, `TaskLock`, keep-alives, hand-offs) on a simulated
    /// runtime, against a store that delays, loses, fails and freezes calls.
    Driver,
}

impl Profile {
    /// Every profile with its command-line name.
    pub const NAMED: [(&'static str, Self); 8] = [
        ("mixed", Self::Mixed),
        ("calm", Self::Calm),
        ("network", Self::Network),
        ("clocks", Self::Clocks),
        ("pauses", Self::Pauses),
        ("crashes", Self::Crashes),
        ("unbounded-clocks", Self::UnboundedClocks),
        ("driver", Self::Driver),
    ];

    /// The profile called `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::NAMED.iter().find(|(n, _)| *n == name).map(|&(_, p)| p)
    }

    /// Its command-line name.
    pub fn name(self) -> &'static str {
        Self::NAMED.iter().find(|(_, p)| *p == self).map_or("?", |(n, _)| n)
    }

    /// The fault settings of one seed.
    pub fn faults(self, rng: &mut Stream, work: &Workload) -> Faults {
        let mut f = Faults::calm(rng);
        let on = |rng: &mut Stream, family: bool| family && (self != Self::Mixed || rng.chance(0.5));
        let network = matches!(self, Self::Mixed | Self::Network | Self::UnboundedClocks);
        if on(rng, network) {
            f.spike = rng.float(0.0, 0.05);
            // Up to twice the shortest backend timeout: some replies land after their deadline.
            f.spike_max = 2 * work.shortest_timeout();
            f.loss = rng.float(0.0, 0.05);
            f.reply_loss = rng.float(0.0, 0.05);
            f.duplicate = rng.float(0.0, 0.05);
            f.pooled = rng.chance(0.5);
        }
        if on(rng, network) {
            f.partition_every = Some(rng.between(ms(500), ms(5_000)));
            f.partition_len = (ms(10), rng.between(ms(50), 3 * work.longest_lease()));
            f.one_way = rng.unit();
        }
        if on(rng, matches!(self, Self::Mixed | Self::Clocks | Self::UnboundedClocks)) {
            // Within bounds a clock runs at most 0.9 % slow (the allowance is 1 %) and jumps only
            // forward, as monotonic clocks do.
            f.drift = rng.float(0.0, 0.009);
            f.jump_every = Some(rng.between(ms(500), ms(5_000)));
            f.jump_max = 2 * work.longest_lease();
        }
        if self == Self::UnboundedClocks {
            f.drift = rng.float(0.011, 0.2);
            f.stall_every = Some(rng.between(ms(500), ms(5_000)));
            f.stall_max = 2 * work.longest_lease();
        }
        if on(rng, matches!(self, Self::Mixed | Self::Pauses | Self::UnboundedClocks)) {
            f.pause_every = Some(rng.between(ms(300), ms(3_000)));
            f.pause_max = 3 * work.longest_lease();
        }
        if on(rng, matches!(self, Self::Mixed | Self::Crashes)) {
            f.crash_every = Some(rng.between(ms(1_000), ms(10_000)));
            f.restart_after = (ms(1), 2 * work.longest_lease());
        }
        if on(rng, matches!(self, Self::Mixed | Self::Crashes)) {
            f.store_restart_every = Some(rng.between(ms(1_000), ms(8_000)));
            f.store_down = (ms(1), work.longest_lease());
        }
        // An operator revokes whichever lock is held (`tenure revoke`), in any profile with
        // faults: a revocation is safe under every other fault.
        if self != Self::Calm && rng.chance(0.5) {
            f.revoke_every = Some(rng.between(ms(500), ms(5_000)));
        }
        f
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The faults of one seed. Rates are mean intervals between occurrences (per worker where it
/// applies); `None` switches a family off. Times in nanoseconds of true time.
#[derive(Clone, Debug)]
pub struct Faults {
    /// Every message takes between these two.
    pub delay: (u64, u64),
    /// The chance of a long delay (up to `spike_max`), which reorders messages.
    pub spike: f64,
    /// The longest delay.
    pub spike_max: u64,
    /// The chance a request is lost before the store sees it.
    pub loss: f64,
    /// The chance a reply is lost after the store applied the request.
    pub reply_loss: f64,
    /// The chance a message is delivered twice.
    pub duplicate: f64,
    /// Partitions between one worker and the store.
    pub partition_every: Option<u64>,
    /// How long a partition lasts.
    pub partition_len: (u64, u64),
    /// The share of one-way partitions (requests or replies cut, not both).
    pub one_way: f64,
    /// Each worker's clock runs at a rate drawn from `1 ± drift`.
    pub drift: f64,
    /// Forward jumps of a worker's clock.
    pub jump_every: Option<u64>,
    /// The largest jump.
    pub jump_max: u64,
    /// A worker's clock stops for a while (out of bounds).
    pub stall_every: Option<u64>,
    /// The longest stall.
    pub stall_max: u64,
    /// Process pauses.
    pub pause_every: Option<u64>,
    /// The longest pause.
    pub pause_max: u64,
    /// Worker crashes.
    pub crash_every: Option<u64>,
    /// How long a crashed worker stays down.
    pub restart_after: (u64, u64),
    /// Store restarts (leases and fencing counters kept, as a durable store keeps them).
    pub store_restart_every: Option<u64>,
    /// How long the store stays down.
    pub store_down: (u64, u64),
    /// An operator's revocations of a lock (the store's `lock_revoke`).
    pub revoke_every: Option<u64>,
    /// Whether the store pushes wake-ups on release.
    pub wakeups: bool,
    /// Whether the requests of one lock holder may take different connections of a pool, and so
    /// overtake one another (a lock holder takes a fresh token per acquisition, so a late request
    /// of an earlier one cannot touch the current lease). Otherwise, and always for task locks and
    /// elections, each machine has one connection that keeps its requests and their replies in
    /// order: an election's token is its worker identity, and a task lock reuses the token of a
    /// shortened hold (grelmicro's protocol), so a late request under that token would act on the
    /// current lease. Backends must keep one holder's calls in order.
    pub pooled: bool,
}

impl Faults {
    fn calm(rng: &mut Stream) -> Self {
        let base = rng.between(ms(0) + 100_000, ms(3));
        Self {
            delay: (base / 4, base),
            spike: 0.0,
            spike_max: base,
            loss: 0.0,
            reply_loss: 0.0,
            duplicate: 0.0,
            partition_every: None,
            partition_len: (0, 0),
            one_way: 0.0,
            drift: 0.0,
            jump_every: None,
            jump_max: 0,
            stall_every: None,
            stall_max: 0,
            pause_every: None,
            pause_max: 0,
            crash_every: None,
            restart_after: (0, 0),
            store_restart_every: None,
            store_down: (0, 0),
            revoke_every: None,
            wakeups: rng.chance(0.5),
            pooled: false,
        }
    }

    /// Whether every clock stays inside the bounds under which holders never overlap: no clock
    /// runs more than 1 % slow, none stalls (forward jumps are fine).
    pub fn clocks_in_bounds(&self) -> bool {
        self.drift < 0.01 && self.stall_every.is_none()
    }

    /// Whether processes pause.
    pub fn pauses(&self) -> bool {
        self.pause_every.is_some()
    }
}

/// The fleet and its timings for one seed.
#[derive(Clone, Debug)]
pub struct Workload {
    /// Workers (processes).
    pub workers: usize,
    /// Lock names.
    pub lock_names: usize,
    /// Lock clients per worker and name.
    pub lock_clients: usize,
    /// The locks' configuration.
    pub lock: LockConfig,
    /// Another one, which holders switch to now and then (`set_config`).
    pub lock_alt: LockConfig,
    /// The task lock's configuration (one task name, one instance per worker).
    pub task: TaskLockConfig,
    /// The election's configuration (one election, one participant per worker).
    pub election: LeaderElectionConfig,
    /// Another one with the same worker, which participants switch to now and then
    /// (`reconfigure`).
    pub election_alt: LeaderElectionConfig,
    /// When faults stop (the liveness phase begins).
    pub heal_at: u64,
}

impl Workload {
    /// The workload of one seed.
    pub fn draw(rng: &mut Stream) -> Self {
        let mut ids = rng.fork();
        let lock = |rng: &mut Stream, ids: &mut tenure_core::SplitMix64| {
            let lease = rng.between(ms(100), ms(1_000));
            LockConfig::builder()
                .lease_duration(nanos(lease))
                .retry_interval(nanos(rng.between(ms(5), ms(60))))
                .retry_jitter(rng.float(0.0, 0.5))
                .backend_timeout(nanos(rng.between(lease / 10, lease / 2)))
                .build(ids)
                .expect("lock timings drawn within the rules")
        };
        let election = |rng: &mut Stream, ids: &mut tenure_core::SplitMix64, worker: Option<tenure_core::WorkerId>| {
            let lease = rng.between(ms(200), ms(1_000));
            let renew_deadline = rng.between(lease / 2, lease * 9 / 10);
            let mut builder = LeaderElectionConfig::builder()
                .lease_duration(nanos(lease))
                .renew_deadline(nanos(renew_deadline))
                .retry_interval(nanos(rng.between(renew_deadline / 10, renew_deadline / 3)))
                .backend_timeout(nanos(rng.between(renew_deadline / 10, renew_deadline / 2)))
                .retry_jitter(rng.float(0.0, 0.3));
            if let Some(worker) = worker {
                builder = builder.worker(worker);
            }
            builder.build(ids).expect("election timings drawn within the rules")
        };
        let lock_config = lock(rng, &mut ids);
        let min_hold = rng.between(ms(50), ms(500));
        let task = TaskLockConfig::builder()
            .min_hold_duration(nanos(min_hold))
            .lease_duration(nanos(rng.between(min_hold, 2 * min_hold)))
            .backend_timeout(nanos(rng.between(min_hold / 10, min_hold / 2)))
            .build(&mut ids);
        let election_config = election(rng, &mut ids, None);
        let workers = rng.between(2, 5) as usize;
        let lock_names = rng.between(1, 2) as usize;
        let lock_clients = rng.between(1, 2) as usize;
        let heal_at = ms(rng.between(8_000, 12_000));
        let lock_alt = lock(rng, &mut ids);
        let election_alt = election(rng, &mut ids, Some(election_config.worker().clone()));
        Self {
            workers,
            lock_names,
            lock_clients,
            lock: lock_config,
            lock_alt,
            task: task.expect("task-lock timings drawn within the rules"),
            election: election_config,
            election_alt,
            heal_at,
        }
    }

    /// The longest lease of any primitive, in nanoseconds.
    pub fn longest_lease(&self) -> u64 {
        [&self.lock, &self.lock_alt]
            .map(LockConfig::lease_duration)
            .into_iter()
            .chain([self.task.lease_duration()])
            .chain([&self.election, &self.election_alt].map(LeaderElectionConfig::lease_duration))
            .map(as_nanos)
            .max()
            .unwrap_or(0)
    }

    /// The shortest backend timeout, in nanoseconds.
    pub fn shortest_timeout(&self) -> u64 {
        [&self.lock, &self.lock_alt]
            .map(LockConfig::backend_timeout)
            .into_iter()
            .chain([self.task.backend_timeout()])
            .chain([&self.election, &self.election_alt].map(LeaderElectionConfig::backend_timeout))
            .map(as_nanos)
            .min()
            .unwrap_or(0)
    }
}

/// Nanoseconds as a duration.
pub const fn nanos(n: u64) -> Duration {
    Duration::from_nanos(n)
}

/// A duration in nanoseconds (saturating).
pub fn as_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
