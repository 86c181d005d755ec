//! The invariants, checked after every event, the liveness check after the faults stop, and the
//! coverage counters that show a green run exercised what it claims.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use tenure_core::{FencingToken, Key, Revocation, Token};

use crate::client::Target;
use crate::profile::{Faults, Workload, as_nanos};

/// What a run (or a batch of runs) exercised.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    /// Acquires and enters refused because someone else held the lock.
    pub contention: u64,
    /// Leases that ran out while their holder's process was paused.
    pub expired_in_pause: u64,
    /// Writes the fenced resource rejected for a stale fencing token.
    pub stale_rejected: u64,
    /// Writes the fenced resource saw.
    pub writes: u64,
    /// Locks an operator revoked from a live holder.
    pub revocations: u64,
    /// Leadership passing from one worker to another.
    pub leader_changes: u64,
    /// Locks acquired.
    pub acquisitions: u64,
    /// Task bodies started.
    pub bodies: u64,
    /// Process pauses.
    pub pauses: u64,
    /// Worker crashes.
    pub crashes: u64,
    /// Partitions.
    pub partitions: u64,
    /// Forward clock jumps.
    pub clock_jumps: u64,
    /// Store restarts.
    pub store_restarts: u64,
    /// Events after which two holders believed at once, under clocks outside the bounds (not a
    /// failure there; it shows the bounds matter).
    pub overlaps_out_of_bounds: u64,
    /// Driver runs: commands whose caller gave up mid-call (the driver finished them).
    pub abandoned: u64,
    /// Driver runs: leases kept alive past their lease.
    pub kept: u64,
    /// Driver runs: checks that no lock was left held once every holder let go.
    pub let_go: u64,
    /// Locks the store handed to a queued waiter that heard of it (a push).
    pub handed_over: u64,
    /// Read leases of the read-write lock granted.
    pub rw_reads: u64,
    /// Write leases of the read-write lock granted (renewals not counted).
    pub rw_writes: u64,
    /// Write grants marked poisoned (the writer before expired without releasing).
    pub poisoned: u64,
    /// Writers that downgraded to readers.
    pub downgrades: u64,
    /// Semaphore permits granted (renewals not counted).
    pub permits: u64,
    /// Events after which every permit of the semaphore was believed held.
    pub permits_full: u64,
}

impl Coverage {
    /// Adds `other` to `self`.
    pub fn add(&mut self, other: &Self) {
        let pairs = [
            (&mut self.contention, other.contention),
            (&mut self.expired_in_pause, other.expired_in_pause),
            (&mut self.stale_rejected, other.stale_rejected),
            (&mut self.writes, other.writes),
            (&mut self.leader_changes, other.leader_changes),
            (&mut self.acquisitions, other.acquisitions),
            (&mut self.bodies, other.bodies),
            (&mut self.pauses, other.pauses),
            (&mut self.crashes, other.crashes),
            (&mut self.partitions, other.partitions),
            (&mut self.clock_jumps, other.clock_jumps),
            (&mut self.store_restarts, other.store_restarts),
            (&mut self.revocations, other.revocations),
            (&mut self.overlaps_out_of_bounds, other.overlaps_out_of_bounds),
            (&mut self.abandoned, other.abandoned),
            (&mut self.kept, other.kept),
            (&mut self.let_go, other.let_go),
            (&mut self.handed_over, other.handed_over),
            (&mut self.rw_reads, other.rw_reads),
            (&mut self.rw_writes, other.rw_writes),
            (&mut self.poisoned, other.poisoned),
            (&mut self.downgrades, other.downgrades),
            (&mut self.permits, other.permits),
            (&mut self.permits_full, other.permits_full),
        ];
        for (total, more) in pairs {
            *total += more;
        }
    }
}

impl fmt::Display for Coverage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "contention {}, stale writes rejected {} of {}, leases expired in a pause {}, leadership changes {}, \
             acquisitions {} (handed over by the store {}), task bodies {}; faults: pauses {}, crashes {}, partitions {}, clock jumps {}, \
             store restarts {}, revocations {}; overlaps under unbounded clocks {}; driver: commands abandoned {}, leases kept {}, let-go checks {}; \
             read-write lock: reads {}, writes {} (poisoned {}), downgrades {}; semaphore: permits {}, \
             every permit held {}",
            self.contention,
            self.stale_rejected,
            self.writes,
            self.expired_in_pause,
            self.leader_changes,
            self.acquisitions,
            self.handed_over,
            self.bodies,
            self.pauses,
            self.crashes,
            self.partitions,
            self.clock_jumps,
            self.store_restarts,
            self.revocations,
            self.overlaps_out_of_bounds,
            self.abandoned,
            self.kept,
            self.let_go,
            self.rw_reads,
            self.rw_writes,
            self.poisoned,
            self.downgrades,
            self.permits,
            self.permits_full
        )
    }
}

/// The checks of one run.
#[derive(Debug)]
pub(crate) struct Checker {
    pub(crate) coverage: Coverage,
    /// Clocks are inside the bounds: beliefs must exclude each other, task bodies keep windows.
    exclusive: bool,
    lock_names: Vec<String>,
    /// The last fencing token the store issued per key, and to whom.
    issued: BTreeMap<String, (FencingToken, Token)>,
    /// The highest fencing token the resource accepted per lock name, and from whom.
    resource: BTreeMap<usize, (FencingToken, Token)>,
    /// Each task body: when the store applied its enter (in order), its worker, and how far that
    /// worker's clock had jumped forward by then.
    bodies: Vec<(u64, usize, u64)>,
    /// The shortest gap two task bodies may have.
    window: u64,
    last_leader: Option<usize>,
    /// The fence of the last term begun, and its worker.
    leader_fence: Option<(FencingToken, usize)>,
    /// After the faults stop: when, what to wait for, and what happened since.
    quiet_at: Option<u64>,
    bound: u64,
    acquired_since: BTreeSet<usize>,
    body_since: bool,
    leader_since: bool,
    /// Writers run on the read-write lock: one must write after the faults stop.
    rw_writers: bool,
    rw_write_since: bool,
    /// The last writer granted the read-write lock, and whether its write ended cleanly (a
    /// release or a downgrade): the next grant is poisoned iff it did not.
    rw_writer: Option<(Token, bool)>,
    /// The semaphore's permit count, if its holders run; whether one took a permit after the
    /// faults stop; the highest fencing token it issued.
    permits: Option<usize>,
    permit_since: bool,
    permit_fence: FencingToken,
}

/// The fenced resource's index for the read-write lock's writers.
pub(crate) const RW_RESOURCE: usize = usize::MAX;
/// The fenced resource's index for the election's leaders.
pub(crate) const LEADER_RESOURCE: usize = usize::MAX - 1;

impl Checker {
    pub(crate) fn new(
        work: &Workload,
        faults: &Faults,
        lock_names: Vec<String>,
        rw_writers: bool,
        permits: Option<usize>,
    ) -> Self {
        let min_hold = as_nanos(work.task.min_hold_duration());
        Self {
            coverage: Coverage::default(),
            exclusive: faults.clocks_in_bounds(),
            lock_names,
            issued: BTreeMap::new(),
            resource: BTreeMap::new(),
            bodies: Vec::new(),
            // A min hold measured on a clock running up to `drift` fast ends that much sooner.
            window: (min_hold as f64 / (1.0 + faults.drift)) as u64,
            last_leader: None,
            leader_fence: None,
            quiet_at: None,
            bound: 0,
            acquired_since: BTreeSet::new(),
            body_since: false,
            leader_since: false,
            rw_writers,
            rw_write_since: false,
            rw_writer: None,
            permits,
            permit_since: false,
            permit_fence: FencingToken::new(0),
        }
    }

    fn describe(&self, target: Target) -> String {
        match target {
            Target::Lock(RW_RESOURCE) | Target::Rw { .. } => "the read-write lock".to_owned(),
            Target::Lock(LEADER_RESOURCE) | Target::Election => "the election".to_owned(),
            Target::Lock(name) => format!("lock {}", self.lock_names.get(name).map_or("?", String::as_str)),
            Target::Task => "the task lock".to_owned(),
            Target::Sem => "the semaphore".to_owned(),
        }
    }

    /// At most one machine per name believes it holds (leads) at this instant.
    pub(crate) fn beliefs(
        &mut self,
        now: u64,
        believers: &[(Target, usize, Option<FencingToken>)],
    ) -> Result<(), String> {
        if self.quiet_at.is_some_and(|at| now >= at) && believers.iter().any(|(t, ..)| *t == Target::Election) {
            self.leader_since = true;
        }
        let mut seen: BTreeMap<Target, (usize, Option<FencingToken>)> = BTreeMap::new();
        // Readers share: a reader only conflicts with a writer (checked after).
        let reader = believers.iter().find(|(target, ..)| *target == Target::Rw { write: false });
        self.permit_beliefs(believers)?;
        let shared = |target: &Target| matches!(target, Target::Rw { write: false } | Target::Sem);
        for &(target, worker, fence) in believers.iter().filter(|(target, ..)| !shared(target)) {
            let Some(&(other, other_fence)) = seen.get(&target) else {
                seen.insert(target, (worker, fence));
                continue;
            };
            if !self.exclusive {
                self.coverage.overlaps_out_of_bounds += 1;
                return Ok(());
            }
            return Err(format!(
                "two holders believe they hold {} at once: worker {other} (fence {}) and worker {worker} (fence {})",
                self.describe(target),
                show(other_fence),
                show(fence)
            ));
        }
        if let (Some(&(_, reader, generation)), Some(&(writer, fence))) =
            (reader, seen.get(&Target::Rw { write: true }))
        {
            if !self.exclusive {
                self.coverage.overlaps_out_of_bounds += 1;
                return Ok(());
            }
            return Err(format!(
                "a writer and a reader believe they hold the read-write lock at once: worker {writer} (fencing \
                 token {}) writes while worker {reader} reads generation {}",
                show(fence),
                show(generation)
            ));
        }
        Ok(())
    }

    /// No more holders believe they hold a permit of the semaphore than it has permits.
    fn permit_beliefs(&mut self, believers: &[(Target, usize, Option<FencingToken>)]) -> Result<(), String> {
        let Some(permits) = self.permits else { return Ok(()) };
        let holders: Vec<_> = believers.iter().filter(|(target, ..)| *target == Target::Sem).collect();
        self.coverage.permits_full += u64::from(holders.len() == permits);
        if holders.len() <= permits {
            return Ok(());
        }
        if !self.exclusive {
            self.coverage.overlaps_out_of_bounds += 1;
            return Ok(());
        }
        let who: Vec<String> =
            holders.iter().map(|(_, w, fence)| format!("worker {w} (fence {})", show(*fence))).collect();
        Err(format!(
            "{} holders believe they hold the semaphore's {permits} permits at once: {}",
            holders.len(),
            who.join(", ")
        ))
    }

    /// The store granted a permit of the semaphore under `fence`: a new grant's fencing token is
    /// greater than every earlier one's; a renewal keeps the one `held` (its token's).
    pub(crate) fn permit(&mut self, fence: FencingToken, held: Option<FencingToken>) -> Result<(), String> {
        match held {
            Some(held) if held != fence => {
                Err(format!("the store renewed a semaphore permit under fencing token {fence}, not its {held}"))
            }
            Some(_) => Ok(()),
            None if fence <= self.permit_fence => Err(format!(
                "the store granted a semaphore permit under fencing token {fence} after {}: tokens must strictly \
                 increase across permits",
                self.permit_fence
            )),
            None => {
                self.coverage.permits += 1;
                self.permit_fence = fence;
                Ok(())
            }
        }
    }

    /// The store granted the read-write lock's write lease to `token`: poisoned iff the last
    /// writer's write did not end cleanly (a renewal never is).
    pub(crate) fn rw_written(
        &mut self,
        token: &Token,
        grant: tenure_core::WriteGrant,
        renewal: bool,
    ) -> Result<(), String> {
        if renewal {
            return if grant.poisoned { Err("the store renewed a write lease as poisoned".to_owned()) } else { Ok(()) };
        }
        self.coverage.rw_writes += 1;
        let expected = self.rw_writer.as_ref().is_some_and(|(_, ended)| !ended);
        if grant.poisoned != expected {
            let what = if expected {
                "not poisoned after a writer expired without releasing"
            } else {
                "poisoned after a clean end"
            };
            return Err(format!(
                "the store granted the read-write lock's write lease under fencing token {} {what}",
                grant.fence
            ));
        }
        self.coverage.poisoned += u64::from(grant.poisoned);
        self.rw_writer = Some((token.clone(), false));
        Ok(())
    }

    /// The current writer released its write lease or downgraded.
    pub(crate) fn rw_write_ended(&mut self, downgraded: bool) {
        if let Some((_, ended)) = &mut self.rw_writer {
            *ended = true;
        }
        self.coverage.downgrades += u64::from(downgraded);
    }

    /// The store granted a read lease of `key` at `generation`: the last write's fencing token.
    pub(crate) fn rw_read(&mut self, key: &Key, generation: FencingToken) -> Result<(), String> {
        self.coverage.rw_reads += 1;
        let last = self.issued.get(key.as_str()).map_or(FencingToken::new(0), |(fence, _)| *fence);
        if generation != last {
            return Err(format!("a reader was granted generation {generation} while the last write was {last}"));
        }
        Ok(())
    }

    /// The store granted `fence` on `key` to `token`; `renewal` when `token` held it already.
    pub(crate) fn issued(
        &mut self,
        key: &Key,
        token: &Token,
        fence: FencingToken,
        renewal: bool,
    ) -> Result<(), String> {
        if let Some((last, _)) = self.issued.get(key.as_str()) {
            if renewal && fence != *last {
                return Err(format!(
                    "the store renewed {} under fencing token {fence} after issuing {last}",
                    key.as_str()
                ));
            }
            if !renewal && fence <= *last {
                return Err(format!(
                    "the store issued fencing token {fence} for {} after {last}: tokens must strictly increase",
                    key.as_str()
                ));
            }
        }
        self.issued.insert(key.as_str().to_owned(), (fence, token.clone()));
        Ok(())
    }

    /// An operator revoked lock `name` (`key`): the fence advanced past the revoked holder's, and
    /// the fenced resource is told so (a resource that checks fences refuses the revoked holder's
    /// writes at once); the next grant must come above it.
    pub(crate) fn revoked(&mut self, name: usize, key: &Key, revoked: &Revocation) -> Result<(), String> {
        if revoked.already {
            return Ok(());
        }
        self.coverage.revocations += 1;
        let Some((last, _)) = self.issued.get(key.as_str()) else {
            return Err(format!("{} was revoked, but no fencing token was ever issued for it", key.as_str()));
        };
        if revoked.revoked_fence != *last || revoked.fence <= *last {
            return Err(format!(
                "the revocation of {} took fence {} (the last issued was {last}) to {}",
                key.as_str(),
                revoked.revoked_fence,
                revoked.fence
            ));
        }
        let placeholder = Token::new(tenure_core::REVOKED_PREFIX).map_err(|e| e.to_string())?;
        self.issued.insert(key.as_str().to_owned(), (revoked.fence, placeholder.clone()));
        if self.resource.get(&name).is_none_or(|(highest, _)| *highest < revoked.fence) {
            self.resource.insert(name, (revoked.fence, placeholder));
        }
        Ok(())
    }

    /// The fenced resource: accepts a write only with a token at least the highest it has seen,
    /// and one token value belongs to one holder.
    pub(crate) fn write(&mut self, name: usize, fence: FencingToken, token: &Token) -> Result<(), String> {
        self.coverage.writes += 1;
        match self.resource.get(&name) {
            Some((highest, _)) if fence < *highest => {
                self.coverage.stale_rejected += 1;
                Ok(())
            }
            Some((highest, holder)) if fence == *highest && holder != token => Err(format!(
                "two holders wrote to {} under the same fencing token {fence}",
                self.describe(Target::Lock(name))
            )),
            _ => {
                self.resource.insert(name, (fence, token.clone()));
                Ok(())
            }
        }
    }

    /// A task body starts on `worker`; `anchor` is when the store applied its enter; `jumped`
    /// is how far each worker's clock has jumped forward so far.
    ///
    /// Two bodies start at least one min-hold window apart, as measured by the clock of the
    /// earlier one's worker: less its fast drift and any forward jump it made since (a min hold
    /// is measured on the local clock, which a jump shortens).
    pub(crate) fn body(
        &mut self,
        now: u64,
        anchor: u64,
        valid: bool,
        worker: usize,
        jumped: &[u64],
    ) -> Result<(), String> {
        self.coverage.bodies += 1;
        if self.quiet_at.is_some_and(|at| now >= at) {
            self.body_since = true;
        }
        if !valid {
            return Err(format!("worker {worker}: a task body started on a lease that had already run out"));
        }
        let at = self.bodies.partition_point(|&(b, ..)| b < anchor);
        let mine = (anchor, worker, jumped[worker]);
        if self.exclusive {
            let neighbours =
                [at.checked_sub(1).map(|i| (self.bodies[i], mine)), self.bodies.get(at).map(|&b| (mine, b))];
            for ((first, w, jumped_then), (second, ..)) in neighbours.into_iter().flatten() {
                let window = self.window.saturating_sub(jumped[w] - jumped_then);
                if second - first < window {
                    return Err(format!(
                        "worker {worker}: two task bodies started {:.3} ms apart, within one min-hold window \
                         ({:.3} ms, as worker {w} measures it)",
                        (second - first) as f64 / 1e6,
                        window as f64 / 1e6
                    ));
                }
            }
        }
        self.bodies.insert(at, mine);
        Ok(())
    }

    pub(crate) fn acquired(&mut self, now: u64, target: Target) {
        self.coverage.acquisitions += 1;
        match (target, self.quiet_at) {
            (Target::Lock(name), Some(at)) if now >= at => {
                self.acquired_since.insert(name);
            }
            (Target::Rw { write: true }, Some(at)) if now >= at => self.rw_write_since = true,
            (Target::Sem, Some(at)) if now >= at => self.permit_since = true,
            _ => {}
        }
    }

    /// `worker` began to lead under `fence`: every term has one (the model store keeps them), and
    /// each is above the last one's (terms begin in the order the store began them, as long as
    /// clocks keep their bounds). A worker that believes again in the term it stopped believing
    /// in (its renewal deadline passed, then a renewal of the lease the store still kept
    /// answered) leads under the same fence.
    pub(crate) fn elected(&mut self, worker: usize, fence: Option<FencingToken>) -> Result<(), String> {
        if self.last_leader.is_some_and(|last| last != worker) {
            self.coverage.leader_changes += 1;
        }
        self.last_leader = Some(worker);
        let Some(fence) = fence else {
            return Err(format!("worker {worker} was elected without a fence"));
        };
        let again = |&(last, by): &(FencingToken, usize)| fence == last && by == worker;
        if let Some((last, by)) = self.leader_fence.filter(|l| fence <= l.0 && !again(l)) {
            if !self.exclusive {
                self.coverage.overlaps_out_of_bounds += 1;
                return Ok(());
            }
            return Err(format!(
                "worker {worker} began a term under fence {fence}, not above the last term's {last} (worker {by})"
            ));
        }
        self.leader_fence = Some((fence, worker));
        Ok(())
    }

    /// Faults stop; everything is quiet from `quiet_at`. Returns when to check liveness.
    pub(crate) fn heal(&mut self, quiet_at: u64, work: &Workload, faults: &Faults) -> u64 {
        self.quiet_at = Some(quiet_at);
        self.bound = liveness_bound(work, faults);
        quiet_at + self.bound
    }

    /// After the faults stop, every lock is taken, a task body runs and a leader is elected
    /// within the bound.
    pub(crate) fn liveness(&self) -> Result<(), String> {
        let bound = format!("{:.0} ms", self.bound as f64 / 1e6);
        let quiet = format!("{:.0} ms", self.quiet_at.unwrap_or(0) as f64 / 1e6);
        for (name, lock) in self.lock_names.iter().enumerate() {
            if !self.acquired_since.contains(&name) {
                return Err(format!(
                    "liveness: lock {lock} not acquired within {bound} after faults stopped at {quiet}"
                ));
            }
        }
        if !self.body_since {
            return Err(format!("liveness: no task body ran within {bound} after faults stopped at {quiet}"));
        }
        if !self.leader_since {
            return Err(format!("liveness: no leader elected within {bound} after faults stopped at {quiet}"));
        }
        if self.rw_writers && !self.rw_write_since {
            return Err(format!(
                "liveness: no writer took the read-write lock within {bound} after faults stopped at {quiet}"
            ));
        }
        if self.permits.is_some() && !self.permit_since {
            return Err(format!(
                "liveness: no holder took a semaphore permit within {bound} after faults stopped at {quiet}"
            ));
        }
        Ok(())
    }
}

/// How long after the faults stop every primitive must have made progress: the longest a lease
/// left by a crashed holder or a busy holder can block, plus retries, timeouts and delays.
pub(crate) fn liveness_bound(work: &Workload, faults: &Faults) -> u64 {
    let retry = |interval: std::time::Duration, jitter: f64| (as_nanos(interval) as f64 * (1.0 + jitter)) as u64;
    // (A writer of the read-write lock also waits for the readers in to finish: up to five
    // steps of a third of a lease each, and their extends; hence five leases, not three.)
    let lock_bound = [&work.lock, &work.lock_alt]
        .map(|lock| {
            5 * as_nanos(lock.lease_duration())
                + 6 * as_nanos(lock.backend_timeout())
                + 2 * retry(lock.retry_interval(), lock.retry_jitter())
        })
        .into_iter()
        .max()
        .unwrap_or(0);
    let task = &work.task;
    let task_bound =
        as_nanos(task.lease_duration()) + 3 * as_nanos(task.min_hold_duration()) + 4 * as_nanos(task.backend_timeout());
    let election_bound = [&work.election, &work.election_alt]
        .map(|election| {
            2 * as_nanos(election.lease_duration())
                + 2 * retry(election.retry_interval(), election.retry_jitter())
                + 3 * as_nanos(election.backend_timeout())
        })
        .into_iter()
        .max()
        .unwrap_or(0);
    let network = 2 * faults.spike_max + 8 * faults.delay.1;
    lock_bound.max(task_bound).max(election_bound) + network + crate::profile::ms(10)
}

fn show(fence: Option<FencingToken>) -> String {
    fence.map_or_else(|| "-".to_owned(), |f| f.to_string())
}
