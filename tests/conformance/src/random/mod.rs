//! Random operation sequences, applied to a backend and to [`StoreModel`] side by side; every
//! answer must agree. Instants fall on a grid: on a manual clock every 10 ms (so leases end
//! exactly on operations often, testing each boundary); on a real clock every quantum, with
//! leases ending half a quantum off the grid, so scheduling delays cannot change an answer
//! (the harness's quantum makes every lease one its store holds exactly, and leaves room for the
//! store's lateness). A store whose fences only increase ([`crate::Fences::Increasing`]) is
//! compared through an order-keeping map: the same model fence must be the same store fence,
//! and a greater one a greater one.

use std::fmt::Write as _;
use std::time::Duration;

use rand_core::Rng as _;
use tenure_core::{Metadata, RwState, SemState, SplitMix64, StoreModel, StoreOp, StoreReply, Timestamp, Token};

use crate::{Clock, Harness};
use support::{FenceMap, Queue, same_record, warm_up};

mod support;
use tenure::backend::{LeaderElectionCalls as _, LockCalls as _, ReadWriteCalls as _, SemaphoreCalls as _};

#[derive(Clone, Debug)]
enum Op {
    Advance(Duration),
    Acquire { key: &'static str, token: &'static str, lease: Duration },
    AcquireQueued { key: &'static str, token: &'static str, lease: Duration, wait: Duration },
    Release { key: &'static str, token: &'static str },
    Locked { key: &'static str },
    Owned { key: &'static str, token: &'static str },
    Revoke { key: &'static str },
    LeaderAcquire { key: &'static str, holder: &'static str, lease: Duration, pod: Option<&'static str> },
    LeaderRelease { key: &'static str, holder: &'static str },
    LeaderGet { key: &'static str },
    Claim { key: &'static str, due: f64 },
    LastFired { key: &'static str },
    Read { key: &'static str, token: &'static str, lease: Duration },
    Write { key: &'static str, token: &'static str, lease: Duration, intent: bool },
    ReleaseRead { key: &'static str, token: &'static str },
    ReleaseWrite { key: &'static str, token: &'static str },
    CancelIntent { key: &'static str, token: &'static str },
    Downgrade { key: &'static str, token: &'static str, lease: Duration },
    RwState { key: &'static str },
    OwnedRead { key: &'static str, token: &'static str },
    OwnedWrite { key: &'static str, token: &'static str },
    SemAcquire { key: &'static str, token: &'static str, lease: Duration, permits: u32, wait: Option<Duration> },
    SemRelease { key: &'static str, token: &'static str },
    SemOwned { key: &'static str, token: &'static str },
    SemState { key: &'static str },
}

impl Op {
    /// The lease it asks for, if any.
    fn lease(&self) -> Option<Duration> {
        match self {
            Self::Acquire { lease, .. }
            | Self::AcquireQueued { lease, .. }
            | Self::LeaderAcquire { lease, .. }
            | Self::Read { lease, .. }
            | Self::Write { lease, .. }
            | Self::Downgrade { lease, .. }
            | Self::SemAcquire { lease, .. } => Some(*lease),
            _ => None,
        }
    }
}

const LOCKS: [&str; 2] = ["lock:a", "tasklock:b"];
const LEADERS: [&str; 2] = ["leader:a", "leader:b"];
const SCHEDULES: [&str; 2] = ["a", "b"];
const RWLOCKS: [&str; 2] = ["rwlock:a", "rwlock:b"];
const SEMAPHORES: [&str; 2] = ["semaphore:a", "semaphore:b"];
const TOKENS: [&str; 3] = ["w1:task:1.aa", "w2:task:1.bb", "w3:thread:7.cc"];
/// A semaphore's contenders: one more than the most permits drawn, so that they meet.
const SEM_TOKENS: [&str; 4] = ["w1:task:1.aa", "w2:task:1.bb", "w3:thread:7.cc", "w4:task:2.dd"];
const HOLDERS: [&str; 3] = ["w1", "w2", "w3"];
const PODS: [&str; 2] = ["p1", "p2"];
const DUES: [f64; 4] = [1.0, 2.0, 2.5, 1_767_229_200.25];

struct Gen {
    rng: SplitMix64,
    /// The grid step, and the offset of lease ends from it.
    step: Duration,
    lease_offset: Duration,
    /// Which calls it draws from.
    mix: Mix,
    /// Whether it draws revocations (a store that keeps leases as asked: a placeholder lives
    /// exactly as long as the revoked lease).
    revoke: bool,
}

impl Gen {
    fn below(&mut self, n: u64) -> u64 {
        self.rng.next_u64() % n
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[usize::try_from(self.below(items.len() as u64)).unwrap_or(0)]
    }

    /// A lease (or a place's wait) of 1 to `steps` grid steps, ending off the grid.
    fn lease_of(&mut self, steps: u64) -> Duration {
        self.step * u32::try_from(1 + self.below(steps)).unwrap_or(1) + self.lease_offset
    }

    fn lease(&mut self) -> Duration {
        self.lease_of(30)
    }

    /// A pause of 0 (a third of the time) to `steps` grid steps.
    fn advance(&mut self, steps: u64) -> Op {
        let steps = if self.below(3) == 0 { 0 } else { 1 + self.below(steps) };
        Op::Advance(self.step * u32::try_from(steps).unwrap_or(0))
    }

    fn op(&mut self) -> Op {
        match self.mix {
            Mix::Queue => return self.queue_op(),
            Mix::ReadWrite => return self.rw_op(),
            Mix::Semaphore => return self.sem_op(),
            Mix::All => {}
        }
        match self.below(if self.revoke { 21 } else { 20 }) {
            20 => Op::Revoke { key: self.pick(&LOCKS) },
            0..=3 => self.advance(15),
            4..=6 => Op::Acquire { key: self.pick(&LOCKS), token: self.pick(&TOKENS), lease: self.lease() },
            7..=8 => Op::Release { key: self.pick(&LOCKS), token: self.pick(&TOKENS) },
            9 => Op::Locked { key: self.pick(&LOCKS) },
            10 => Op::Owned { key: self.pick(&LOCKS), token: self.pick(&TOKENS) },
            11..=13 => {
                let pod = if self.below(2) == 0 { None } else { Some(self.pick(&PODS)) };
                Op::LeaderAcquire { key: self.pick(&LEADERS), holder: self.pick(&HOLDERS), lease: self.lease(), pod }
            }
            14 => Op::LeaderRelease { key: self.pick(&LEADERS), holder: self.pick(&HOLDERS) },
            15..=16 => Op::LeaderGet { key: self.pick(&LEADERS) },
            17..=18 => Op::Claim { key: self.pick(&SCHEDULES), due: self.pick(&DUES) },
            _ => Op::LastFired { key: self.pick(&SCHEDULES) },
        }
    }

    /// An operation of a queue sequence: one lock, mostly queued acquires and releases, beside
    /// plain (grelmicro's) acquires; leases, places and pauses a third as long as in the full mix,
    /// so as many lapse in a shorter run.
    fn queue_op(&mut self) -> Op {
        let (key, token) = (LOCKS[0], self.pick(&TOKENS));
        match self.below(10) {
            0..=2 => self.advance(5),
            3..=5 => Op::AcquireQueued { key, token, lease: self.lease_of(10), wait: self.lease_of(10) },
            6 => Op::Acquire { key, token, lease: self.lease_of(10) },
            7..=8 => Op::Release { key, token },
            _ => Op::Owned { key, token },
        }
    }

    /// An operation of a read-write sequence: mostly reads, writes and releases on the first of
    /// two names (so they meet), leases as short as a queue sequence's.
    fn rw_op(&mut self) -> Op {
        let key = if self.below(5) == 0 { RWLOCKS[1] } else { RWLOCKS[0] };
        let token = self.pick(&TOKENS);
        match self.below(20) {
            0..=3 => self.advance(5),
            4..=6 => Op::Read { key, token, lease: self.lease_of(10) },
            7..=9 => Op::Write { key, token, lease: self.lease_of(10), intent: self.below(4) != 0 },
            10..=11 => Op::ReleaseRead { key, token },
            12..=13 => Op::ReleaseWrite { key, token },
            14 => Op::CancelIntent { key, token },
            15 => Op::Downgrade { key, token, lease: self.lease_of(10) },
            16 => Op::RwState { key },
            17..=18 => Op::OwnedRead { key, token },
            _ => Op::OwnedWrite { key, token },
        }
    }
}

impl Gen {
    /// An operation of a semaphore sequence: mostly acquires (blocking ones keeping a place) and
    /// releases on the first of two names with 2 permits, now and then asking 3 (a mismatch
    /// while the name is in use), leases as short as a queue sequence's.
    fn sem_op(&mut self) -> Op {
        let key = if self.below(5) == 0 { SEMAPHORES[1] } else { SEMAPHORES[0] };
        let token = self.pick(&SEM_TOKENS);
        match self.below(20) {
            0..=3 => self.advance(5),
            4..=10 => {
                let permits = if self.below(8) == 0 { 3 } else { 2 };
                let wait = (self.below(3) != 0).then(|| self.lease_of(10));
                Op::SemAcquire { key, token, lease: self.lease_of(10), permits, wait }
            }
            11..=14 => Op::SemRelease { key, token },
            15..=16 => Op::SemState { key },
            _ => Op::SemOwned { key, token },
        }
    }
}

fn token(text: &str) -> Token {
    match Token::new(text) {
        Ok(t) => t,
        Err(e) => panic!("test token {text:?}: {e}"),
    }
}

fn metadata(pod: Option<&str>) -> Metadata {
    Metadata::from_pairs(pod.map(|p| ("pod", p))).unwrap_or_default()
}

/// A real-clock sequence this machine ran too slowly to judge: an operation ended later than
/// half a quantum past its instant, where a lease may have ended.
#[derive(Debug)]
pub struct TooLate {
    /// The operation's index.
    pub op: usize,
    /// How far past its instant it ended.
    pub late: Duration,
}

/// Which operations a sequence draws from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mix {
    /// Every call of every kind, on two names of each.
    All,
    /// Queued and plain acquires, releases and ownership checks on one lock name: the store's
    /// queue of waiters ([`StoreModel::lock_acquire_queued`]) against the model's.
    Queue,
    /// Every read-write lock call, on two names ([`StoreModel::rw_acquire_read`] and the rest).
    ReadWrite,
    /// Every semaphore call, on two names ([`StoreModel::sem_acquire`] and the rest).
    Semaphore,
}

/// Runs sequence `seed` of `ops` operations drawn from `mix` on a fresh store and on the model,
/// comparing every answer; panics with the replay seed and the operations so far on the first
/// difference. On a real clock, an operation that ends too late to judge stops the sequence
/// with [`TooLate`] before its answer is compared; `coarser` multiplies the quantum (a loaded
/// machine's sequence runs again on a coarser grid, which leaves more room).
pub async fn compare(h: &Harness, mix: Mix, seed: u64, ops: usize, coarser: u32) -> Result<(), TooLate> {
    let (step, lease_offset) = match h.clock {
        Clock::Manual(_) => (Duration::from_millis(10), Duration::ZERO),
        Clock::Real { quantum } => (quantum * coarser, quantum * coarser / 2),
    };
    let judged_within = lease_offset.saturating_sub(h.leases.late);
    assert!(
        lease_offset.is_zero() || !judged_within.is_zero(),
        "{}: a quantum of {step:?} leaves no room for the store's lateness ({:?})",
        h.name,
        h.leases.late
    );
    let revoke = h.leases.unit.is_zero() && h.leases.minimum.is_zero();
    let mut generator = Gen { rng: SplitMix64::new(seed), step, lease_offset, mix, revoke };
    let store = h.store().await;
    let mut fences = FenceMap::new(store.fences);
    let wall_at_zero = match &h.clock {
        Clock::Manual(clock) => clock.now(),
        Clock::Real { .. } => tenure_core::WallTime::UNIX_EPOCH, // absolute times are not compared
    };
    let mut model = StoreModel::new(wall_at_zero);
    let queue = warm_up(h, &store, mix).await;
    let rw = || match &store.rw {
        Some(rw) => rw.clone(),
        None => panic!("{}: the store serves no read-write locks", h.name),
    };
    let sem = || match &store.sem {
        Some(sem) => sem.clone(),
        None => panic!("{}: the store serves no semaphores", h.name),
    };
    let mut timeline = h.timeline();
    let mut log = String::new();
    for i in 0..ops {
        let op = generator.op();
        let _ = writeln!(log, "  {i}: {op:?}");
        if let Some(lease) = op.lease() {
            assert_eq!(h.leases.held(lease), lease, "{}: the quantum gives leases the store rounds", h.name);
        }
        let now = Timestamp::from_nanos(u64::try_from(timeline.at().as_nanos()).unwrap_or(u64::MAX));
        let fail = |what: String| -> ! {
            panic!(
                "{}: sequence {seed} differs from the store model at operation {i}: {what}\n\
                 replay: TENURE_CONFORMANCE_SEED={seed} (first sequence)\noperations:\n{log}",
                h.name
            )
        };
        macro_rules! got {
            ($call:expr) => {
                match $call.await {
                    // On a real clock, an answer from past half a quantum (less the store's
                    // lateness) may rightly differ.
                    Ok(_) if !lease_offset.is_zero() && timeline.lateness() >= judged_within => {
                        return Err(TooLate { op: i, late: timeline.lateness() });
                    }
                    Ok(v) => v,
                    Err(e) => fail(format!("the backend failed: {e}")),
                }
            };
        }
        match op {
            Op::Advance(d) => {
                let at = timeline.at() + d;
                timeline.go_to(at).await;
            }
            Op::Acquire { key, token: t, lease } => {
                let got = got!(store.lock.acquire(key, t, lease));
                let want = model.lock_acquire(key, &token(t), lease, now);
                if !fences.agree(key, got, want) {
                    fail(format!("acquire: backend {got:?}, model {want:?}"));
                }
            }
            Op::AcquireQueued { key, token: t, lease, wait } => {
                let got = got!(store.lock.acquire_queued(key, t, lease, wait));
                let want = match queue {
                    Queue::None => model.lock_acquire(key, &token(t), lease, now),
                    Queue::Kept | Queue::HandedOver => {
                        model.lock_acquire_queued(key, &token(t), (lease, wait), (0, None), now).0
                    }
                };
                if !fences.agree(key, got, want) {
                    fail(format!("queued acquire: backend {got:?}, model {want:?}"));
                }
            }
            Op::Release { key, token: t } => {
                let got = got!(store.lock.release(key, t));
                let want = match queue {
                    Queue::None | Queue::Kept => model.lock_release(key, &token(t), now),
                    Queue::HandedOver => model.lock_release_queued(key, &token(t), now).0,
                };
                if got != want {
                    fail(format!("release: backend {got}, model {want}"));
                }
            }
            Op::Locked { key } => {
                let got = got!(store.lock.locked(key));
                let want = model.lock_locked(key, now);
                if got != want {
                    fail(format!("locked: backend {got}, model {want}"));
                }
            }
            Op::Owned { key, token: t } => {
                let got = got!(store.lock.owned(key, t));
                let want = model.lock_owned(key, &token(t), now);
                if got != want {
                    fail(format!("owned: backend {got}, model {want}"));
                }
            }
            Op::Revoke { key } => {
                let reason = tenure_core::RevokeReason::new("random").expect("a reason");
                let op =
                    StoreOp::LockRevoke { key: tenure_core::Key::parse(key).expect("a key"), reason: reason.clone() };
                let got = match got!(store.lock.execute(op)) {
                    StoreReply::Revocation(got) => got,
                    other => fail(format!("revoke: the backend answered {other:?}")),
                };
                let want = model.lock_revoke(key, &reason, now);
                let same = match (&got, &want) {
                    (None, None) => true,
                    (Some(g), Some(w)) => {
                        (g.holder.as_str(), g.already) == (w.holder.as_str(), w.already)
                            && fences.agree(key, Some(g.revoked_fence), Some(w.revoked_fence))
                            && fences.agree(key, Some(g.fence), Some(w.fence))
                            && g.left <= w.left + h.tolerance()
                    }
                    _ => false,
                };
                if !same {
                    fail(format!("revoke: backend {got:?}, model {want:?}"));
                }
            }
            Op::LeaderAcquire { key, holder, lease, pod } => {
                let m = metadata(pod);
                let got = got!(store.leader.acquire_or_renew(key, holder, lease, &m));
                let want = model.leader_acquire_or_renew(key, &token(holder), lease, &std::sync::Arc::new(m), now);
                if let Err(why) = same_record(h, &got, &want) {
                    fail(format!("acquire_or_renew: {why}: backend {got:?}, model {want:?}"));
                }
                if !fences.agree(key, got.fence, want.fence) {
                    fail(format!("acquire_or_renew: the term's fences differ: backend {got:?}, model {want:?}"));
                }
            }
            Op::LeaderRelease { key, holder } => {
                let got = got!(store.leader.release(key, holder));
                let want = model.leader_release(key, &token(holder), now);
                if got != want {
                    fail(format!("leader release: backend {got}, model {want}"));
                }
            }
            Op::LeaderGet { key } => {
                let got = got!(store.leader.get(key));
                let want = model.leader_get(key, now);
                let agree = match (&got, &want) {
                    (Some(g), Some(w)) => same_record(h, g, w).is_ok() && fences.agree(key, g.fence, w.fence),
                    (None, None) => true,
                    _ => false,
                };
                if !agree {
                    fail(format!("leader get: backend {got:?}, model {want:?}"));
                }
            }
            Op::Claim { key, due } => {
                let got = got!(store.schedule.claim(key, due));
                let want = model.schedule_claim(key, due);
                if got != want {
                    fail(format!("claim: backend {got}, model {want}"));
                }
            }
            Op::LastFired { key } => {
                let got = got!(store.schedule.last_fired(key));
                let want = model.schedule_last_fired(key);
                if got != want {
                    fail(format!("last_fired: backend {got:?}, model {want:?}"));
                }
            }
            Op::Read { key, token: t, lease } => {
                let got = got!(rw().acquire_read(key, t, lease));
                let want = model.rw_acquire_read(key, &token(t), lease, now);
                if !fences.agree(key, got, want) {
                    fail(format!("read: backend {got:?}, model {want:?}"));
                }
            }
            Op::Write { key, token: t, lease, intent } => {
                let got = got!(rw().acquire_write(key, t, lease, intent));
                let want = model.rw_acquire_write(key, &token(t), lease, intent, now);
                let agree = got.map(|g| g.poisoned) == want.map(|w| w.poisoned)
                    && fences.agree(key, got.map(|g| g.fence), want.map(|w| w.fence));
                if !agree {
                    fail(format!("write: backend {got:?}, model {want:?}"));
                }
            }
            Op::ReleaseRead { key, token: t } => {
                let (got, want) = (got!(rw().release_read(key, t)), model.rw_release_read(key, &token(t), now));
                if got != want {
                    fail(format!("read release: backend {got}, model {want}"));
                }
            }
            Op::ReleaseWrite { key, token: t } => {
                let (got, want) = (got!(rw().release_write(key, t)), model.rw_release_write(key, &token(t), now));
                if got != want {
                    fail(format!("write release: backend {got}, model {want}"));
                }
            }
            Op::CancelIntent { key, token: t } => {
                let (got, want) = (got!(rw().cancel_intent(key, t)), model.rw_cancel_intent(key, &token(t), now));
                if got != want {
                    fail(format!("intent withdrawal: backend {got}, model {want}"));
                }
            }
            Op::Downgrade { key, token: t, lease } => {
                let got = got!(rw().downgrade(key, t, lease));
                let want = model.rw_downgrade(key, &token(t), lease, now);
                if !fences.agree(key, got, want) {
                    fail(format!("downgrade: backend {got:?}, model {want:?}"));
                }
            }
            Op::RwState { key } => {
                let got = got!(rw().state(key));
                let want = model.rw_state(key, now);
                let generations = |s: RwState| (s.generation > 0).then(|| tenure_core::FencingToken::new(s.generation));
                let same = RwState { generation: 0, ..got } == RwState { generation: 0, ..want }
                    && fences.agree(key, generations(got), generations(want));
                if !same {
                    fail(format!("state: backend {got:?}, model {want:?}"));
                }
            }
            Op::OwnedRead { key, token: t } => {
                let (got, want) = (got!(rw().owned_read(key, t)), model.rw_owned_read(key, &token(t), now));
                if got != want {
                    fail(format!("read owned: backend {got}, model {want}"));
                }
            }
            Op::OwnedWrite { key, token: t } => {
                let (got, want) = (got!(rw().owned_write(key, t)), model.rw_owned_write(key, &token(t), now));
                if got != want {
                    fail(format!("write owned: backend {got}, model {want}"));
                }
            }
            Op::SemAcquire { key, token: t, lease, permits, wait } => {
                let got = got!(sem().acquire(key, t, lease, permits, wait));
                let want = model.sem_acquire(key, &token(t), lease, permits, wait, now);
                if got.permits != want.permits || !fences.agree(key, got.fence, want.fence) {
                    fail(format!("semaphore acquire: backend {got:?}, model {want:?}"));
                }
            }
            Op::SemRelease { key, token: t } => {
                let (got, want) = (got!(sem().release(key, t)), model.sem_release(key, &token(t), now));
                if got != want {
                    fail(format!("semaphore release: backend {got}, model {want}"));
                }
            }
            Op::SemOwned { key, token: t } => {
                let (got, want) = (got!(sem().owned(key, t)), model.sem_owned(key, &token(t), now));
                if got != want {
                    fail(format!("semaphore owned: backend {got}, model {want}"));
                }
            }
            Op::SemState { key } => {
                let got = got!(sem().state(key));
                let want = model.sem_state(key, now);
                let fence = |s: SemState| (s.fence > 0).then(|| tenure_core::FencingToken::new(s.fence));
                let same = SemState { fence: 0, ..got } == SemState { fence: 0, ..want }
                    && fences.agree(key, fence(got), fence(want));
                if !same {
                    fail(format!("semaphore state: backend {got:?}, model {want:?}"));
                }
            }
        }
    }
    Ok(())
}
