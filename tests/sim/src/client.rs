//! The application side of each machine: what a service does with a lock, a task lock or an
//! election — acquire, write under the fencing token, extend, release, cancel, enter and exit,
//! start and stop — and the rule that a holder renews only when its application asked it to.

use tenure_core::{
    Access, ElectionEvent, ElectionMachine, FencingToken, LockEvent, LockMachine, LockPhase, StoreOp, StoreRequest,
    TaskLockEvent, TaskLockMachine, Timestamp, Token,
};

use crate::profile::{as_nanos, ms};
use crate::rand::Stream;

/// What a client's input produced, for the simulator to carry out.
#[derive(Debug)]
pub(crate) struct Ctx {
    /// The worker's clock.
    pub(crate) local: Timestamp,
    /// Faults have stopped (elections no longer stop).
    pub(crate) healed: bool,
    /// The trace is printed: report machine events as notes.
    pub(crate) print: bool,
    /// Store requests to send.
    pub(crate) requests: Vec<StoreRequest>,
    /// Everything else.
    pub(crate) outs: Vec<Out>,
}

/// One consequence of a client's input.
#[derive(Debug)]
pub(crate) enum Out {
    /// Run the client's next action after this much true time.
    After(u64),
    /// A write to the fenced resource.
    Write(FencingToken, Token),
    /// A lock was acquired (liveness).
    Acquired,
    /// A refusal because someone else holds it (coverage).
    Contention,
    /// A task body starts; `valid` is whether its lease may be counted on at that instant.
    Body { valid: bool },
    /// This worker was elected, under this term's fence.
    Elected(Option<FencingToken>),
    /// A rule was broken.
    Violation(String),
    /// A line for the printed trace.
    Note(String),
    /// This lock client's holder may not be reused: start a new one on the same name.
    Replace,
}

impl Ctx {
    pub(crate) fn new(local: Timestamp, healed: bool, print: bool) -> Self {
        Self { local, healed, print, requests: Vec::new(), outs: Vec::new() }
    }

    fn after(&mut self, delay: u64) {
        self.outs.push(Out::After(delay));
    }

    fn violation(&mut self, what: String) {
        self.outs.push(Out::Violation(what));
    }

    /// A command refused without a store call: the client never misuses its machine, so this is
    /// a fault of the machine (or of the simulator).
    fn refused(&mut self, what: &str, result: Result<(), tenure_core::Error>) {
        if let Err(e) = result {
            self.violation(format!("{what} refused at once: {e}"));
        }
    }
}

/// The input a client gets.
#[derive(Debug)]
pub(crate) enum Input {
    /// Its scheduled action.
    Action,
    /// A machine timer.
    Timer,
    /// A store reply.
    Reply(tenure_core::OpId, Result<tenure_core::StoreReply, tenure_core::BackendError>),
    /// A push wake-up.
    Wake,
    /// The store pushed that it handed the lock to this token (a queued hand-off).
    Grant(tenure_core::Token, FencingToken),
}

/// A command whose store calls are allowed while it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Command {
    Acquire,
    Extend,
    Downgrade,
    Release,
    Enter,
    Exit,
}

/// One client of one machine.
#[derive(Debug)]
pub(crate) enum Client {
    Lock(LockClient),
    Task(TaskClient),
    Election(ElectionClient),
}

impl Client {
    /// Feeds `input` and runs the machine's drain loop, reacting to every event.
    pub(crate) fn feed(&mut self, input: Input, cx: &mut Ctx) {
        match self {
            Self::Lock(c) => c.feed(input, cx),
            Self::Task(c) => c.feed(input, cx),
            Self::Election(c) => c.feed(input, cx),
        }
    }

    /// The machine's next deadline.
    pub(crate) fn timeout(&self) -> Option<Timestamp> {
        match self {
            Self::Lock(c) => c.m.poll_timeout(),
            Self::Task(c) => c.m.poll_timeout(),
            Self::Election(c) => c.m.poll_timeout(),
        }
    }

    /// Whether the machine believes it holds (leads) at `local`.
    pub(crate) fn believes(&self, local: Timestamp) -> bool {
        match self {
            Self::Lock(c) => c.m.is_held(local),
            Self::Task(c) => c.m.is_held(local),
            Self::Election(c) => c.m.is_leader(local),
        }
    }

    /// The name index and kind this client works on, for the checks.
    pub(crate) fn target(&self) -> Target {
        match self {
            Self::Lock(c) => target_of(c.name, c.m.access()),
            Self::Task(_) => Target::Task,
            Self::Election(_) => Target::Election,
        }
    }

    /// What the client was made to work on (a writer that downgraded is still a writer's client,
    /// and is replaced by one).
    pub(crate) fn role(&self) -> Target {
        match self {
            Self::Lock(c) => c.role,
            other => other.target(),
        }
    }

    /// Whether this client is the lock holder whose machine holds `token`.
    pub(crate) fn holds_token(&self, token: &tenure_core::Token) -> bool {
        matches!(self, Self::Lock(c) if c.m.token() == token)
    }

    /// The fencing token held or last held (locks and task locks), or the term's (elections).
    pub(crate) fn fence(&self) -> Option<FencingToken> {
        match self {
            Self::Lock(c) => c.m.fence(),
            Self::Task(c) => c.m.fence(),
            Self::Election(c) => c.m.fence(),
        }
    }

    /// Whether a machine of this client holds a lease that ran out locally (after a pause).
    pub(crate) fn lapsed(&self, local: Timestamp) -> bool {
        match self {
            Self::Lock(c) => c.m.valid_until().is_some_and(|until| local >= until),
            Self::Task(c) => c.m.valid_until().is_some_and(|until| local >= until),
            Self::Election(c) => c.m.leading_until().is_some_and(|until| local >= until),
        }
    }
}

/// What a client works on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Target {
    Lock(usize),
    Task,
    Election,
    /// A side of the read-write lock.
    Rw {
        write: bool,
    },
    /// A permit of the semaphore.
    Sem,
}

/// What a lock holder with `access` works on (`name`: its lock's index).
fn target_of(name: usize, access: Access) -> Target {
    match access {
        Access::Exclusive => Target::Lock(name),
        Access::Permit(_) => Target::Sem,
        access => Target::Rw { write: access == Access::Write },
    }
}

/// Drains a machine: effects first (checked against the commands under way), then events, each
/// handed to `react`, until both are empty.
macro_rules! drain {
    ($client:expr, $cx:expr, $react:ident) => {
        loop {
            while let Some(request) = $client.m.poll_effect() {
                if !$client.allows(&request.op) {
                    let what = format!(
                        "{} sent {:?} with no command of its application under way",
                        $client.what(),
                        request.op
                    );
                    $cx.violation(what);
                }
                $cx.requests.push(request);
            }
            let Some(event) = $client.m.poll_event() else { break };
            if $cx.print {
                $cx.outs.push(Out::Note(format!("{} ({}): {event:?}", $client.what(), $client.state())));
            }
            $client.$react(event, $cx);
        }
    };
}

// ---- locks --------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LockStage {
    Idle,
    Acquiring,
    Holding {
        steps: u8,
    },
    Extending {
        steps: u8,
    },
    /// A writer turning its lease into a read lease.
    Downgrading {
        steps: u8,
    },
    Releasing,
    /// To release once the machine settles (it finishes what a failed command left first, as a
    /// driver does before its next command).
    ReleaseWhenSettled,
    /// Replaced by a new holder; the machine only finishes what it has in flight.
    Retired,
}

/// A service task that takes a lock, writes a few times under its fencing token, maybe extends,
/// and releases; sometimes it gives up on an acquire (drops the future). On a read-write lock it
/// reads (no writes) or writes, and a writer sometimes downgrades and goes on reading.
#[derive(Debug)]
pub(crate) struct LockClient {
    pub(crate) name: usize,
    role: Target,
    pub(crate) m: LockMachine,
    stage: LockStage,
    pending: Option<Command>,
    lease: u64,
    /// The configurations the application switches between (`set_config`).
    configs: [tenure_core::LockConfig; 2],
    worker: tenure_core::WorkerId,
    tokens: u64,
    rng: Stream,
}

impl LockClient {
    pub(crate) fn new(
        name: usize,
        m: LockMachine,
        configs: [tenure_core::LockConfig; 2],
        worker: tenure_core::WorkerId,
        rng: Stream,
    ) -> Self {
        let lease = as_nanos(configs[0].lease_duration());
        let role = target_of(name, m.access());
        Self { name, role, m, stage: LockStage::Idle, pending: None, lease, configs, worker, tokens: 0, rng }
    }

    fn what(&self) -> String {
        format!("{:?} holder of {}", self.m.access(), self.m.key().name_str())
    }

    fn state(&self) -> String {
        format!("{:?}, machine {:?}", self.stage, self.m.phase())
    }

    fn allows(&self, op: &StoreOp) -> bool {
        match op {
            StoreOp::LockAcquire { .. }
            | StoreOp::LockAcquireQueued { .. }
            | StoreOp::RwAcquireRead { .. }
            | StoreOp::RwAcquireWrite { .. }
            | StoreOp::SemAcquire { .. } => matches!(self.pending, Some(Command::Acquire | Command::Extend)),
            StoreOp::RwDowngrade { .. } => self.pending == Some(Command::Downgrade),
            _ => true,
        }
    }

    fn feed(&mut self, input: Input, cx: &mut Ctx) {
        match input {
            Input::Action => self.action(cx),
            Input::Timer => self.m.handle_timeout(cx.local),
            Input::Reply(id, reply) => self.m.handle_reply(cx.local, id, reply),
            Input::Wake => self.m.wake(cx.local),
            Input::Grant(token, fence) if token == *self.m.token() => self.m.handle_grant(cx.local, fence),
            Input::Grant(..) => {}
        }
        drain!(self, cx, react);
    }

    fn think(&mut self) -> u64 {
        self.rng.between(0, self.lease / 4)
    }

    fn step_gap(&mut self) -> u64 {
        self.rng.between(self.lease / 20, self.lease / 3)
    }

    fn action(&mut self, cx: &mut Ctx) {
        match self.stage {
            // A cancelled acquire may still be winding down: a new command waits for it, as a
            // driver's next command waits for the one under way.
            LockStage::Idle if !self.m.is_settled() => cx.after(ms(1)),
            // Like a driver's holder pool: a holder whose release may still reach the store (or
            // whose abandoned acquire may still be granted) is not reused; a new one takes over.
            LockStage::Idle if !self.m.is_quiescent() => {
                self.stage = LockStage::Retired;
                cx.outs.push(Out::Replace);
            }
            LockStage::Idle => self.acquire(cx),
            LockStage::Acquiring => {
                // The caller drops its acquire future.
                self.m.cancel(cx.local);
                self.pending = None;
                self.stage = LockStage::Idle;
                let think = self.think();
                cx.after(think);
            }
            LockStage::Holding { steps } => self.step(steps, cx),
            // A release retried after a failure (an earlier step's action may also land here).
            LockStage::Releasing if self.m.phase() == LockPhase::Stale => self.release(cx),
            LockStage::Releasing => {}
            LockStage::ReleaseWhenSettled if self.m.is_settled() => self.release(cx),
            LockStage::ReleaseWhenSettled => cx.after(ms(1)),
            LockStage::Extending { .. } | LockStage::Downgrading { .. } | LockStage::Retired => {}
        }
    }

    fn acquire(&mut self, cx: &mut Ctx) {
        // Every acquisition under a token of its own, as the driver's holder pool does.
        self.tokens += 1;
        let token = Token::fresh_holder(&self.worker, tenure_core::HolderKind::Task, self.tokens, &mut self.rng.fork());
        cx.refused("set_token", self.m.set_token(token));
        if let Target::Rw { write } = self.role {
            // A writer that downgraded writes again at its next acquisition.
            cx.refused("set_access", self.m.set_access(if write { Access::Write } else { Access::Read }));
        }
        if self.rng.chance(0.1) {
            // The application reconfigures the lock (another lease, retry, timeout).
            let config = &self.configs[self.rng.between(0, 1) as usize];
            self.m.set_config(config);
            self.lease = as_nanos(config.lease_duration());
        }
        let result = match self.rng.between(0, 4) {
            0 => self.m.acquire_nowait(cx.local),
            1 | 2 => {
                let timeout = self.rng.between(0, 2 * self.lease);
                self.m.acquire(cx.local, Some(crate::profile::nanos(timeout)))
            }
            _ => self.m.acquire(cx.local, None),
        };
        cx.refused("acquire", result);
        self.pending = Some(Command::Acquire);
        self.stage = LockStage::Acquiring;
        if self.rng.chance(0.1) {
            let cancel_after = self.rng.between(0, self.lease);
            cx.after(cancel_after);
        }
    }

    fn step(&mut self, steps: u8, cx: &mut Ctx) {
        if let Some(fence) = self.m.fence().filter(|_| self.m.access() != Access::Read) {
            cx.outs.push(Out::Write(fence, self.m.token().clone()));
        }
        let steps = steps.saturating_sub(1);
        if steps == 0 {
            return self.release(cx);
        }
        if self.m.access() == Access::Write && self.rng.chance(0.2) {
            let result = self.m.downgrade(cx.local);
            cx.refused("downgrade", result);
            self.pending = Some(Command::Downgrade);
            self.stage = LockStage::Downgrading { steps };
            return;
        }
        let gap = self.step_gap();
        let short = self.m.valid_until().is_none_or(|until| cx.local + crate::profile::nanos(gap) >= until);
        if short || self.rng.chance(0.2) {
            let result = self.m.extend(cx.local);
            cx.refused("extend", result);
            self.pending = Some(Command::Extend);
            self.stage = LockStage::Extending { steps };
        } else {
            self.stage = LockStage::Holding { steps };
            cx.after(gap);
        }
    }

    fn release(&mut self, cx: &mut Ctx) {
        let result = self.m.release(cx.local);
        cx.refused("release", result);
        self.pending = Some(Command::Release);
        self.stage = LockStage::Releasing;
    }

    fn react(&mut self, event: LockEvent, cx: &mut Ctx) {
        if self.stage == LockStage::Retired {
            return;
        }
        match event {
            LockEvent::Acquired { valid_until, .. } => {
                self.pending = None;
                if cx.local >= valid_until {
                    cx.violation("acquired a lease that had already run out".to_owned());
                }
                cx.outs.push(Out::Acquired);
                self.stage = LockStage::Holding { steps: self.rng.between(1, 5) as u8 };
                let gap = self.step_gap();
                cx.after(gap / 2);
            }
            LockEvent::Extended { valid_until, .. } => {
                self.pending = None;
                if cx.local >= valid_until {
                    cx.violation("extended a lease that had already run out".to_owned());
                }
                if let LockStage::Extending { steps } = self.stage {
                    self.stage = LockStage::Holding { steps };
                    let gap = self.step_gap();
                    cx.after(gap);
                }
            }
            LockEvent::Downgraded { valid_until, .. } => {
                self.pending = None;
                if cx.local >= valid_until {
                    cx.violation("downgraded to a read lease that had already run out".to_owned());
                }
                if let LockStage::Downgrading { steps } = self.stage {
                    self.stage = LockStage::Holding { steps };
                    let gap = self.step_gap();
                    cx.after(gap);
                }
            }
            LockEvent::Released { .. } => {
                self.pending = None;
                self.stage = LockStage::Idle;
                let think = self.think();
                cx.after(think);
            }
            // Stop writing and let go; an extend in flight may still bring the lease back.
            LockEvent::Lost { .. } => {
                if let LockStage::Holding { .. } = self.stage {
                    self.release(cx);
                }
            }
            LockEvent::Failed(error) => {
                self.pending = None;
                match self.stage {
                    LockStage::Acquiring => {
                        if error.is_would_block() || error.is_timeout() {
                            cx.outs.push(Out::Contention);
                        }
                        self.stage = LockStage::Idle;
                        let think = self.think();
                        cx.after(think);
                    }
                    LockStage::Extending { .. } | LockStage::Downgrading { .. } if self.m.is_settled() => {
                        self.release(cx);
                    }
                    LockStage::Extending { .. } | LockStage::Downgrading { .. } => {
                        self.stage = LockStage::ReleaseWhenSettled;
                        cx.after(ms(1));
                    }
                    LockStage::Releasing if self.m.phase() == LockPhase::Stale => {
                        // The outcome is unknown: release again later.
                        let think = self.think();
                        cx.after(think);
                    }
                    _ => {
                        self.stage = LockStage::Idle;
                        let think = self.think();
                        cx.after(think);
                    }
                }
            }
            _ => {}
        }
    }
}

// ---- task locks ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TaskStage {
    Idle,
    Entering,
    Running { extend_first: bool },
    Extending,
    Exiting,
}

/// A scheduled job: on each tick it enters the task lock, runs a body of some length (maybe
/// refreshing the lease half-way), and exits.
#[derive(Debug)]
pub(crate) struct TaskClient {
    pub(crate) m: TaskLockMachine,
    stage: TaskStage,
    pending: Option<Command>,
    lost: bool,
    min_hold: u64,
    worker: tenure_core::WorkerId,
    tokens: u64,
    rng: Stream,
}

impl TaskClient {
    pub(crate) fn new(m: TaskLockMachine, min_hold: u64, worker: tenure_core::WorkerId, rng: Stream) -> Self {
        Self { m, stage: TaskStage::Idle, pending: None, lost: false, min_hold, worker, tokens: 0, rng }
    }

    fn what(&self) -> String {
        format!("task lock instance of {}", self.m.key().name_str())
    }

    fn state(&self) -> String {
        format!("{:?}, machine {:?}", self.stage, self.m.phase())
    }

    fn allows(&self, op: &StoreOp) -> bool {
        match op {
            StoreOp::LockAcquire { .. } => {
                matches!(self.pending, Some(Command::Enter | Command::Extend | Command::Exit))
            }
            _ => true,
        }
    }

    fn feed(&mut self, input: Input, cx: &mut Ctx) {
        match input {
            Input::Action => self.action(cx),
            Input::Timer => self.m.handle_timeout(cx.local),
            Input::Reply(id, reply) => self.m.handle_reply(cx.local, id, reply),
            Input::Wake | Input::Grant(..) => {}
        }
        drain!(self, cx, react);
    }

    fn tick_gap(&mut self) -> u64 {
        self.rng.between(0, self.min_hold)
    }

    fn action(&mut self, cx: &mut Ctx) {
        match self.stage {
            // An exit or the release of a late grant may still be under way.
            TaskStage::Idle if !self.m.is_settled() => cx.after(ms(1)),
            TaskStage::Idle => {
                self.tokens += 1;
                let mut ids = self.rng.fork();
                let token = Token::fresh_holder(&self.worker, tenure_core::HolderKind::Task, self.tokens, &mut ids);
                let result = self.m.enter(cx.local, token);
                cx.refused("enter", result);
                self.pending = Some(Command::Enter);
                self.stage = TaskStage::Entering;
            }
            TaskStage::Running { extend_first: true } if !self.lost => {
                let result = self.m.extend(cx.local);
                cx.refused("extend", result);
                self.pending = Some(Command::Extend);
                self.stage = TaskStage::Extending;
            }
            TaskStage::Running { .. } => self.exit(cx),
            TaskStage::Entering | TaskStage::Extending | TaskStage::Exiting => {}
        }
    }

    fn exit(&mut self, cx: &mut Ctx) {
        let result = self.m.exit(cx.local);
        cx.refused("exit", result);
        self.pending = Some(Command::Exit);
        self.stage = TaskStage::Exiting;
    }

    fn react(&mut self, event: TaskLockEvent, cx: &mut Ctx) {
        match event {
            TaskLockEvent::Entered { valid_until, .. } => {
                self.pending = None;
                self.lost = false;
                cx.outs.push(Out::Body { valid: cx.local < valid_until });
                let body = self.rng.between(0, self.min_hold * 3 / 2);
                let extend_first = self.rng.chance(0.3);
                self.stage = TaskStage::Running { extend_first };
                cx.after(if extend_first { body / 2 } else { body });
            }
            TaskLockEvent::Extended { valid_until, .. } => {
                self.pending = None;
                if cx.local >= valid_until {
                    cx.violation("extended a task lock lease that had already run out".to_owned());
                }
                self.stage = TaskStage::Running { extend_first: false };
                let rest = self.rng.between(0, self.min_hold);
                cx.after(rest);
            }
            TaskLockEvent::Exited { .. } => {
                self.pending = None;
                self.stage = TaskStage::Idle;
                let gap = self.tick_gap();
                cx.after(gap);
            }
            TaskLockEvent::Lost { .. } => self.lost = true,
            TaskLockEvent::Failed(error) => {
                self.pending = None;
                match self.stage {
                    TaskStage::Extending => {
                        self.stage = TaskStage::Running { extend_first: false };
                        cx.after(0);
                    }
                    stage => {
                        if stage == TaskStage::Entering && error.is_would_block() {
                            cx.outs.push(Out::Contention);
                        }
                        self.stage = TaskStage::Idle;
                        let gap = self.tick_gap();
                        cx.after(gap);
                    }
                }
            }
            _ => {}
        }
    }
}

// ---- elections ----------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ElectionStage {
    Stopped,
    Running,
    Stopping,
}

/// A worker taking part in an election; now and then it stops (a deploy) and starts again.
#[derive(Debug)]
pub(crate) struct ElectionClient {
    pub(crate) m: ElectionMachine,
    stage: ElectionStage,
    /// The configurations the application switches between (`reconfigure`).
    configs: [tenure_core::LeaderElectionConfig; 2],
    rng: Stream,
}

impl ElectionClient {
    pub(crate) fn new(m: ElectionMachine, configs: [tenure_core::LeaderElectionConfig; 2], rng: Stream) -> Self {
        Self { m, stage: ElectionStage::Stopped, configs, rng }
    }

    fn what(&self) -> String {
        format!("election participant of {}", self.m.key().name_str())
    }

    fn state(&self) -> String {
        format!("{:?}", self.stage)
    }

    fn allows(&self, op: &StoreOp) -> bool {
        match op {
            StoreOp::LeaderAcquireOrRenew { .. } => self.stage == ElectionStage::Running,
            _ => true,
        }
    }

    fn feed(&mut self, input: Input, cx: &mut Ctx) {
        match input {
            Input::Action => self.action(cx),
            Input::Timer => self.m.handle_timeout(cx.local),
            Input::Reply(id, reply) => self.m.handle_reply(cx.local, id, reply),
            Input::Wake => self.m.wake(cx.local),
            Input::Grant(..) => {}
        }
        drain!(self, cx, react);
    }

    fn action(&mut self, cx: &mut Ctx) {
        match self.stage {
            ElectionStage::Stopped => {
                self.stage = ElectionStage::Running;
                if !self.m.start(cx.local) {
                    cx.violation("start refused by a stopped election".to_owned());
                }
                let next = self.rng.between(ms(500), ms(4_000));
                cx.after(next);
            }
            ElectionStage::Running if !cx.healed && self.rng.chance(0.3) => {
                self.stage = ElectionStage::Stopping;
                self.m.stop(cx.local);
            }
            ElectionStage::Running => {
                if self.rng.chance(0.2) {
                    let config = self.configs[self.rng.between(0, 1) as usize].clone();
                    if let Err(e) = self.m.reconfigure(config) {
                        cx.violation(format!("reconfigure with the same worker refused: {e}"));
                    }
                }
                let next = self.rng.between(ms(500), ms(4_000));
                cx.after(next);
            }
            ElectionStage::Stopping => {}
        }
    }

    #[allow(clippy::needless_pass_by_value, reason = "the drain loop hands every client its events by value")]
    fn react(&mut self, event: ElectionEvent, cx: &mut Ctx) {
        match event {
            ElectionEvent::Elected => {
                if !self.m.is_leader(cx.local) {
                    cx.violation("elected, but no longer leading at that instant".to_owned());
                }
                // A leader writes to the fenced resource under its term's fence.
                let fence = self.m.fence();
                if let Some(fence) = fence {
                    cx.outs.push(Out::Write(fence, self.m.token().clone()));
                }
                cx.outs.push(Out::Elected(fence));
            }
            ElectionEvent::Stopped => {
                self.stage = ElectionStage::Stopped;
                let down = self.downtime();
                cx.after(down);
            }
            _ => {}
        }
    }

    fn downtime(&mut self) -> u64 {
        self.rng.between(0, as_nanos(self.m.config().lease_duration()))
    }
}
