//! Random sequences of commands, deliveries, losses, duplicates, forged replies and timers driven
//! through each machine against the store model. After every step:
//!
//! - the store's fencing counter never goes down, and the fencing tokens of the holders that believe
//!   they hold only go up over time, strictly when the holder changes (a fenced resource accepting
//!   writes from believing holders sees them in order);
//! - a holder that believes it holds (`is_held`, `is_leader`) is the live holder in the store;
//! - a released or stopped holder never sends a renewal;
//! - a holder believes it holds only after being told so by an event, and stops believing only
//!   with an event or with a due timer that will report it;
//! - after `handle_timeout(now)` the next deadline is later than `now` (timers make progress);
//! - nothing panics, whatever the order.
//!
//! Requests of one holder reach the store in the order sent (one connection), but may be lost or
//! delayed past their deadline; replies may be lost, duplicated, reordered or forged (a forged
//! reply names an unknown operation, or is a failure for the one in flight).
#![allow(clippy::unwrap_used)]

mod support;

use std::cell::RefCell;
use std::collections::VecDeque;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{TestCaseResult, TestRunner};
use support::{key, ms, token};
use tenure_core::machine::Machine;
use tenure_core::{
    BackendError, BackendErrorKind, ElectionEvent, ElectionMachine, Error, FencingToken, KeyKind, LeaderElectionConfig,
    LockConfig, LockEvent, LockMachine, Metadata, OpId, SplitMix64, StoreModel, StoreOp, StoreReply, StoreRequest,
    TaskLockConfig, TaskLockEvent, TaskLockMachine, Timestamp, Token, WallTime, WorkerId,
};

const HOLDERS: usize = 3;

/// What the network and the clock do between commands.
#[derive(Clone, Debug)]
enum Net {
    Advance(u64),
    FireTimer(usize),
    EarlyTimeout(usize),
    Deliver(usize),
    DropRequest(usize),
    Reply { holder: usize, index: usize, keep: bool },
    DropReply { holder: usize, index: usize },
    ForgeUnknown { holder: usize, shape: u8 },
    ForgeFailure(usize),
}

fn net() -> impl Strategy<Value = Net> {
    let h = 0..HOLDERS;
    prop_oneof![
        3 => prop_oneof![0u64..2_000, 0u64..8_000_000, 0u64..40_000_000].prop_map(Net::Advance),
        3 => h.clone().prop_map(Net::FireTimer),
        1 => h.clone().prop_map(Net::EarlyTimeout),
        6 => h.clone().prop_map(Net::Deliver),
        1 => h.clone().prop_map(Net::DropRequest),
        6 => (h.clone(), 0usize..4, proptest::bool::weighted(0.15))
            .prop_map(|(holder, index, keep)| Net::Reply { holder, index, keep }),
        1 => (h.clone(), 0usize..4).prop_map(|(holder, index)| Net::DropReply { holder, index }),
        1 => (h.clone(), 0u8..6).prop_map(|(holder, shape)| Net::ForgeUnknown { holder, shape }),
        1 => h.prop_map(Net::ForgeFailure),
    ]
}

fn forged(shape: u8) -> Result<StoreReply, BackendError> {
    match shape {
        0 => Ok(StoreReply::Fence(Some(FencingToken::new(1_000_000)))),
        1 => Ok(StoreReply::Fence(None)),
        2 => Ok(StoreReply::Flag(true)),
        3 => Ok(StoreReply::Flag(false)),
        // (a revocation's placeholder naming a fence no holder has, or one it has)
        4 => Ok(StoreReply::Revoked {
            fence: FencingToken::new(u64::from(shape) - 3),
            reason: tenure_core::RevokeReason::default(),
        }),
        _ => Err(BackendError::new(BackendErrorKind::Other, "forged")),
    }
}

/// The store, the clock, and each holder's request and reply queues.
struct World<M> {
    store: StoreModel,
    now: Timestamp,
    machines: Vec<M>,
    requests: Vec<VecDeque<StoreRequest>>,
    replies: Vec<Vec<(OpId, StoreReply)>>,
    /// Requests the holder is waiting for, to forge failures for the one in flight.
    in_flight: Vec<Option<OpId>>,
    /// Operations each holder sent during the current step.
    fresh: Vec<Vec<StoreOp>>,
}

impl<M: Machine> World<M> {
    fn new(machines: Vec<M>) -> Self {
        let n = machines.len();
        Self {
            store: StoreModel::new(WallTime::from_unix_micros(0)),
            now: Timestamp::from_nanos(1_000_000_000),
            machines,
            requests: vec![VecDeque::new(); n],
            replies: vec![Vec::new(); n],
            in_flight: vec![None; n],
            fresh: vec![Vec::new(); n],
        }
    }

    /// Collects requests and events after an input.
    fn drain(&mut self, h: usize) -> Vec<M::Event> {
        while let Some(request) = self.machines[h].poll_effect() {
            self.in_flight[h] = Some(request.id);
            self.fresh[h].push(request.op.clone());
            self.requests[h].push_back(request);
        }
        let mut events = Vec::new();
        while let Some(e) = self.machines[h].poll_event() {
            events.push(e);
        }
        events
    }

    /// Runs `h`'s timers at `now`; afterwards nothing may be due any more.
    fn fire(&mut self, h: usize) {
        self.machines[h].handle_timeout(self.now);
        let next = self.machines[h].poll_timeout();
        assert!(next.is_none_or(|t| t > self.now), "a timer is still due after handle_timeout: {next:?}");
    }

    /// Whether `h` has a timer due (one that will report what changed).
    fn due(&self, h: usize) -> bool {
        self.machines[h].poll_timeout().is_some_and(|t| t <= self.now)
    }

    /// Checks what `h` believes against what it was told: `told` follows the events.
    fn told_matches(&self, h: usize, believes: bool, told: bool) {
        assert!(!believes || told, "holder {h} believes it holds without having been told");
        assert!(!told || believes || self.due(h), "holder {h} stopped believing without an event or a due timer");
    }

    /// Takes the operations sent during the step.
    fn take_fresh(&mut self) -> Vec<Vec<StoreOp>> {
        self.fresh.iter_mut().map(std::mem::take).collect()
    }

    /// Applies one network step; returns the holder touched and its events.
    fn step(&mut self, step: &Net) -> (usize, Vec<M::Event>) {
        match *step {
            Net::Advance(nanos) => {
                self.now = self.now + Duration::from_nanos(nanos);
                (0, Vec::new())
            }
            Net::FireTimer(h) => {
                if let Some(at) = self.machines[h].poll_timeout() {
                    self.now = self.now.max(at);
                    self.fire(h);
                }
                (h, self.drain(h))
            }
            Net::EarlyTimeout(h) => {
                self.fire(h);
                (h, self.drain(h))
            }
            Net::Deliver(h) => {
                if let Some(request) = self.requests[h].pop_front() {
                    let reply = self.store.apply(&request.op, self.now);
                    self.replies[h].push((request.id, reply));
                }
                (h, Vec::new())
            }
            Net::DropRequest(h) => {
                self.requests[h].pop_front();
                (h, Vec::new())
            }
            Net::Reply { holder: h, index, keep } => {
                if self.replies[h].is_empty() {
                    return (h, Vec::new());
                }
                let index = index % self.replies[h].len();
                let (id, reply) = if keep { self.replies[h][index].clone() } else { self.replies[h].remove(index) };
                self.machines[h].handle_reply(self.now, id, Ok(reply));
                (h, self.drain(h))
            }
            Net::DropReply { holder: h, index } => {
                if !self.replies[h].is_empty() {
                    let index = index % self.replies[h].len();
                    self.replies[h].remove(index);
                }
                (h, Vec::new())
            }
            Net::ForgeUnknown { holder: h, shape } => {
                self.machines[h].handle_reply(self.now, OpId::new(u64::MAX - u64::from(shape)), forged(shape));
                (h, self.drain(h))
            }
            Net::ForgeFailure(h) => {
                if let Some(id) = self.in_flight[h] {
                    let failure = Err(BackendError::new(BackendErrorKind::Unavailable, "forged failure"));
                    self.machines[h].handle_reply(self.now, id, failure);
                }
                (h, self.drain(h))
            }
        }
    }
}

fn tokens() -> Vec<Token> {
    (0..HOLDERS).map(|i| token(&format!("w{i}:task:{i}.0123456789abcdef"))).collect()
}

/// What a batch of cases exercised: a green run must not be vacuous.
#[derive(Debug, Default)]
struct Coverage {
    /// Steps at which some holder believed it held.
    held: u64,
    /// Times the believing holder changed.
    handovers: u64,
    /// Leases reported lost.
    lost: u64,
    /// Store calls abandoned at backend_timeout.
    backend_timeouts: u64,
    /// Attempts turned away (would block, lock timeout).
    refused: u64,
}

impl Coverage {
    fn failed(&mut self, error: &Error) {
        if error.is_would_block() {
            self.refused += 1;
        }
        if error.backend_error().is_some_and(|c| c.kind() == BackendErrorKind::Timeout) {
            self.backend_timeouts += 1;
        }
    }
}

/// Runs random cases of `body` (512, or `TENURE_PROPTEST_CASES`), then returns what they covered.
fn check<S: Strategy>(strategy: S, body: impl Fn(S::Value, &mut Coverage) -> TestCaseResult) -> Coverage {
    let coverage = RefCell::new(Coverage::default());
    #[allow(clippy::disallowed_methods, reason = "the test harness, not the core, reads its own knob")]
    let cases = std::env::var("TENURE_PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(512);
    let config = ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() };
    let mut runner = TestRunner::new(config);
    if let Err(failure) = runner.run(&strategy, |value| body(value, &mut coverage.borrow_mut())) {
        panic!("{failure}");
    }
    coverage.into_inner()
}

/// The fencing tokens a resource would see from holders that believe they hold, in time order.
#[derive(Default)]
struct Fences {
    last: Option<(FencingToken, usize)>,
    store: Option<FencingToken>,
}

impl Fences {
    /// `holder` believes it holds with `fence` now.
    fn believed(&mut self, fence: FencingToken, holder: usize, coverage: &mut Coverage) {
        coverage.held += 1;
        if let Some((last, by)) = self.last {
            assert!(fence >= last, "fencing token went down: {last} then {fence}");
            assert!(by == holder || fence > last, "holder changed without a new fencing token ({fence})");
            if by != holder {
                coverage.handovers += 1;
            }
        }
        self.last = Some((fence, holder));
    }

    /// The store's counter now.
    fn store(&mut self, fence: Option<FencingToken>) {
        assert!(fence >= self.store, "the store's fencing counter went down");
        self.store = fence;
    }
}

// ---- Lock ----------------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum LockCmd {
    Acquire(Option<u64>),
    Nowait,
    Extend,
    Release,
    Cancel,
    Wake,
    SetLease(u64),
}

fn lock_step() -> impl Strategy<Value = Result<(usize, LockCmd), Net>> {
    let cmd = prop_oneof![
        3 => proptest::option::of(0u64..30).prop_map(LockCmd::Acquire),
        1 => Just(LockCmd::Nowait),
        2 => Just(LockCmd::Extend),
        2 => Just(LockCmd::Release),
        1 => Just(LockCmd::Cancel),
        1 => Just(LockCmd::Wake),
        1 => (5u64..40).prop_map(LockCmd::SetLease),
    ];
    prop_oneof![1 => (0..HOLDERS, cmd).prop_map(Ok), 3 => net().prop_map(Err)]
}

fn lock_config(lease: u64, rng: &mut SplitMix64) -> LockConfig {
    LockConfig::builder()
        .lease_duration(ms(lease))
        .retry_interval(ms(2))
        .retry_jitter(0.5)
        .backend_timeout(ms(5))
        .build(rng)
        .unwrap()
}

fn run_locks(seed: u64, steps: &[Result<(usize, LockCmd), Net>], coverage: &mut Coverage) -> TestCaseResult {
    let mut rng = SplitMix64::new(seed);
    let config = lock_config(20, &mut rng);
    let k = key(KeyKind::Lock, "res");
    let mut w = World::new(tokens().into_iter().map(|t| LockMachine::new(k.clone(), t, &config, &mut rng)).collect());
    let mut fences = Fences::default();
    let mut released = [false; HOLDERS];
    let mut told = [false; HOLDERS];
    for step in steps {
        let (h, events) = match step {
            Ok((h, cmd)) => {
                let (m, now) = (&mut w.machines[*h], w.now);
                let done = match cmd {
                    LockCmd::Acquire(t) => m.acquire(now, t.map(ms)),
                    LockCmd::Nowait => m.acquire_nowait(now),
                    LockCmd::Extend => m.extend(now),
                    LockCmd::Release => m.release(now),
                    LockCmd::SetLease(lease) => {
                        m.set_config(&lock_config(*lease, &mut rng));
                        Ok(())
                    }
                    LockCmd::Cancel => {
                        m.cancel(now);
                        Ok(())
                    }
                    LockCmd::Wake => {
                        m.wake(now);
                        Ok(())
                    }
                };
                match (cmd, done) {
                    (LockCmd::Release, Ok(())) => told[*h] = false,
                    (LockCmd::Acquire(_) | LockCmd::Nowait, Ok(())) => released[*h] = false,
                    _ => {}
                }
                (*h, w.drain(*h))
            }
            Err(net) => w.step(net),
        };
        for event in events {
            match event {
                LockEvent::Acquired { .. } => told[h] = true,
                LockEvent::Extended { .. } => {
                    prop_assert!(!released[h], "a released holder renewed");
                    told[h] = true;
                }
                LockEvent::Released { .. } => (released[h], told[h]) = (true, false),
                LockEvent::Lost { .. } => {
                    told[h] = false;
                    coverage.lost += 1;
                }
                LockEvent::Failed(e) => coverage.failed(&e),
                _ => {}
            }
        }
        for (i, sent) in w.take_fresh().iter().enumerate() {
            let renews = sent.iter().any(|op| matches!(op, StoreOp::LockAcquire { .. }));
            prop_assert!(!(released[i] && renews), "holder {i} sent a renewal after releasing");
        }
        for (i, m) in w.machines.iter().enumerate() {
            w.told_matches(i, m.is_held(w.now), told[i]);
            if m.is_held(w.now) {
                prop_assert!(
                    w.store.lock_owned(&k, m.token(), w.now),
                    "holder {i} believes it holds at {:?} but the store disagrees",
                    w.now
                );
                prop_assert!(m.valid_until().is_some_and(|until| w.now < until));
                fences.believed(m.fence().unwrap(), i, coverage);
            }
        }
        fences.store(w.store.last_fence(&k));
    }
    Ok(())
}

#[test]
fn lock_machines_never_believe_a_lease_the_store_does_not_keep() {
    let strategy = (any::<u64>(), proptest::collection::vec(lock_step(), 1..250));
    let coverage = check(strategy, |(seed, steps), coverage| run_locks(seed, &steps, coverage));
    assert!(coverage.held > 0 && coverage.handovers > 0 && coverage.lost > 0, "{coverage:?}");
    assert!(coverage.backend_timeouts > 0 && coverage.refused > 0, "{coverage:?}");
}

// ---- TaskLock ------------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum TaskCmd {
    Enter,
    Extend,
    Exit,
    SetLease(u64),
}

fn task_step() -> impl Strategy<Value = Result<(usize, TaskCmd), Net>> {
    let cmd = prop_oneof![
        2 => Just(TaskCmd::Enter),
        1 => Just(TaskCmd::Extend),
        2 => Just(TaskCmd::Exit),
        1 => (10u64..40).prop_map(TaskCmd::SetLease),
    ];
    prop_oneof![1 => (0..HOLDERS, cmd).prop_map(Ok), 3 => net().prop_map(Err)]
}

fn task_config(lease: u64, rng: &mut SplitMix64) -> TaskLockConfig {
    TaskLockConfig::builder()
        .min_hold_duration(ms(10))
        .lease_duration(ms(lease))
        .backend_timeout(ms(5))
        .build(rng)
        .unwrap()
}

fn run_task_locks(seed: u64, steps: &[Result<(usize, TaskCmd), Net>], coverage: &mut Coverage) -> TestCaseResult {
    let mut rng = SplitMix64::new(seed);
    let config = task_config(20, &mut rng);
    let k = key(KeyKind::TaskLock, "job");
    let mut w = World::new((0..HOLDERS).map(|_| TaskLockMachine::new(k.clone(), &config)).collect());
    let mut fences = Fences::default();
    let mut told = [false; HOLDERS];
    for (nonce, step) in steps.iter().enumerate() {
        let (h, events) = match step {
            Ok((h, cmd)) => {
                let (m, now) = (&mut w.machines[*h], w.now);
                let done = match cmd {
                    TaskCmd::Enter => m.enter(now, token(&format!("w{h}:task:1.x:{nonce}.y"))),
                    TaskCmd::Extend => m.extend(now),
                    TaskCmd::Exit => m.exit(now),
                    TaskCmd::SetLease(lease) => {
                        m.set_config(&task_config(*lease, &mut rng));
                        Ok(())
                    }
                };
                if let (TaskCmd::Exit, Ok(())) = (cmd, done) {
                    told[*h] = false;
                }
                (*h, w.drain(*h))
            }
            Err(net) => w.step(net),
        };
        for event in events {
            match event {
                TaskLockEvent::Entered { .. } | TaskLockEvent::Extended { .. } => told[h] = true,
                TaskLockEvent::Lost { .. } => {
                    told[h] = false;
                    coverage.lost += 1;
                }
                TaskLockEvent::Failed(e) => coverage.failed(&e),
                _ => {}
            }
        }
        w.take_fresh();
        for (i, m) in w.machines.iter().enumerate() {
            w.told_matches(i, m.is_held(w.now), told[i]);
            if m.is_held(w.now) {
                let t = m.token().unwrap();
                prop_assert!(w.store.lock_owned(&k, t, w.now), "task holder {i} believes a lease the store lost");
                fences.believed(m.fence().unwrap(), i, coverage);
            }
        }
        fences.store(w.store.last_fence(&k));
    }
    Ok(())
}

#[test]
fn task_locks_never_believe_a_lease_the_store_does_not_keep() {
    let strategy = (any::<u64>(), proptest::collection::vec(task_step(), 1..250));
    let coverage = check(strategy, |(seed, steps), coverage| run_task_locks(seed, &steps, coverage));
    assert!(coverage.held > 0 && coverage.handovers > 0 && coverage.lost > 0, "{coverage:?}");
    assert!(coverage.backend_timeouts > 0 && coverage.refused > 0, "{coverage:?}");
}

// ---- LeaderElection ------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum ElectionCmd {
    Start,
    Stop,
    Wake,
    Reconfigure(u64),
}

fn election_step() -> impl Strategy<Value = Result<(usize, ElectionCmd), Net>> {
    let cmd = prop_oneof![
        2 => Just(ElectionCmd::Start),
        1 => Just(ElectionCmd::Stop),
        1 => Just(ElectionCmd::Wake),
        1 => (12u64..45).prop_map(ElectionCmd::Reconfigure),
    ];
    prop_oneof![1 => (0..HOLDERS, cmd).prop_map(Ok), 4 => net().prop_map(Err)]
}

/// Worker `i`'s configuration with a `lease` of 12 ms or more (renew deadline two thirds of it).
fn election_config(i: usize, lease: u64, rng: &mut SplitMix64) -> LeaderElectionConfig {
    LeaderElectionConfig::builder()
        .worker(WorkerId::new(&format!("w{i}")).unwrap())
        .lease_duration(ms(lease))
        .renew_deadline(ms(lease * 2 / 3))
        .retry_interval(ms(3))
        .backend_timeout(ms(5))
        .retry_jitter(0.3)
        .build(rng)
        .unwrap()
}

fn elections(rng: &mut SplitMix64) -> World<ElectionMachine> {
    let start = Timestamp::from_nanos(1_000_000_000);
    let machines = (0..HOLDERS)
        .map(|i| {
            let config = election_config(i, 30, rng);
            let t = token(&format!("w{i}"));
            ElectionMachine::new(key(KeyKind::Leader, "svc"), t, config, Metadata::new(), start, rng)
        })
        .collect();
    World::new(machines)
}

fn run_elections(seed: u64, steps: &[Result<(usize, ElectionCmd), Net>], coverage: &mut Coverage) -> TestCaseResult {
    let mut rng = SplitMix64::new(seed);
    let mut w = elections(&mut rng);
    let mut stopping = [true; HOLDERS];
    let mut told = [false; HOLDERS];
    let mut last_leader = None;
    for step in steps {
        let (h, events) = match step {
            Ok((h, cmd)) => {
                let (m, now) = (&mut w.machines[*h], w.now);
                match cmd {
                    ElectionCmd::Start => stopping[*h] &= !m.start(now),
                    ElectionCmd::Stop => {
                        m.stop(now);
                        stopping[*h] = true;
                    }
                    ElectionCmd::Wake => m.wake(now),
                    ElectionCmd::Reconfigure(lease) => m.reconfigure(election_config(*h, *lease, &mut rng)).unwrap(),
                }
                (*h, w.drain(*h))
            }
            Err(net) => w.step(net),
        };
        for event in events {
            match event {
                ElectionEvent::Elected => told[h] = true,
                ElectionEvent::Deposed { .. } => {
                    told[h] = false;
                    coverage.lost += 1;
                }
                ElectionEvent::AttemptFailed { error, .. } if error.kind() == BackendErrorKind::Timeout => {
                    coverage.backend_timeouts += 1;
                }
                _ => {}
            }
        }
        for (i, sent) in w.take_fresh().iter().enumerate() {
            let renews = sent.iter().any(|op| matches!(op, StoreOp::LeaderAcquireOrRenew { .. }));
            prop_assert!(!(stopping[i] && renews), "worker {i} sent a renewal after stop");
        }
        for (i, m) in w.machines.iter().enumerate() {
            w.told_matches(i, m.is_leader(w.now), told[i]);
        }
        let leaders: Vec<_> = (0..HOLDERS).filter(|&i| w.machines[i].is_leader(w.now)).collect();
        prop_assert!(leaders.len() <= 1, "{} workers believe they lead", leaders.len());
        for &i in &leaders {
            let m = &w.machines[i];
            let record = w.store.leader_get(m.key(), w.now);
            prop_assert!(
                record.is_some_and(|r| r.holder == m.token().as_str()),
                "a worker believes it leads but the store disagrees"
            );
            coverage.held += 1;
            if last_leader.is_some_and(|l| l != i) {
                coverage.handovers += 1;
            }
            last_leader = Some(i);
        }
    }
    Ok(())
}

#[test]
fn at_most_one_worker_believes_it_leads_and_only_while_the_store_agrees() {
    let strategy = (any::<u64>(), proptest::collection::vec(election_step(), 1..250));
    let coverage = check(strategy, |(seed, steps), coverage| run_elections(seed, &steps, coverage));
    assert!(coverage.held > 0 && coverage.handovers > 0 && coverage.lost > 0, "{coverage:?}");
    assert!(coverage.backend_timeouts > 0, "{coverage:?}");
}
