//! What the fuzz targets share: a harness that drives machines against the store model through
//! a network the fuzzer controls (deliver, drop, duplicate, reorder, forge, advance the clock).
//!
//! Checked after every step, whatever the input: nothing panics; after `handle_timeout(now)` no
//! timer is still due (timers make progress); and, while no reply was forged, a machine that
//! believes it holds is the live holder in the store.

use std::time::Duration;

use arbitrary::Arbitrary;
use tenure_core::machine::Machine;
use tenure_core::{
    BackendError, BackendErrorKind, FencingToken, Key, KeyKind, LeaderRecord, Metadata, Name, OpId, StoreModel,
    StoreReply, StoreRequest, Timestamp, Token, WallTime,
};

/// How many machines a target drives.
pub const MACHINES: usize = 3;

/// How many steps of an input are run.
pub const MAX_STEPS: usize = 1_000;

/// A step of a machine target: the network's, or a command to one machine.
#[derive(Arbitrary, Debug)]
pub enum Step<C> {
    /// The network or the clock.
    Net(Net),
    /// A command.
    Command {
        /// Which machine (modulo the count).
        machine: u8,
        /// What to do.
        command: C,
    },
}

/// A machine target's input: a seed for the machines' jitter, their timings, the steps.
#[derive(Arbitrary, Debug)]
pub struct Input<T, C> {
    /// Seeds the machines' generators.
    pub seed: u64,
    /// The configuration the machines start with.
    pub timings: T,
    /// What happens.
    pub steps: Vec<Step<C>>,
}

/// One step of the network or the clock.
#[derive(Arbitrary, Debug)]
pub enum Net {
    /// Time passes (microseconds, up to about a minute).
    Advance(u32),
    /// A machine's timer fires when due.
    Fire(u8),
    /// A machine's timer fires early.
    FireEarly(u8),
    /// The store applies a machine's oldest request (one connection keeps them in order).
    Apply(u8),
    /// A request is lost.
    DropRequest { machine: u8, pick: u8 },
    /// A reply reaches its machine (and, with `again`, stays to be delivered once more).
    Reply { machine: u8, pick: u8, again: bool },
    /// A reply is lost.
    DropReply { machine: u8, pick: u8 },
    /// A forged reply: for the operation in flight or for an unknown one.
    Forge { machine: u8, reply: Forged, unknown: bool },
}

/// A reply no honest store would send.
#[derive(Arbitrary, Debug)]
pub enum Forged {
    /// A fencing token.
    Fence(Option<u64>),
    /// A yes/no answer.
    Flag(bool),
    /// No leader.
    NoLeader,
    /// A leader record naming `holder` (0–2: a machine's token; else a stranger).
    Leader { holder: u8, transitions: u64 },
    /// A fire time.
    LastFired(Option<f64>),
    /// A failure.
    Failure(u8),
}

impl Forged {
    fn reply(&self, tokens: &[Token]) -> Result<StoreReply, BackendError> {
        Ok(match *self {
            Self::Fence(fence) => StoreReply::Fence(fence.map(FencingToken::new)),
            Self::Flag(flag) => StoreReply::Flag(flag),
            Self::NoLeader => StoreReply::MaybeLeader(None),
            Self::Leader { holder, transitions } => StoreReply::Leader(LeaderRecord {
                holder: tokens.get(usize::from(holder)).map_or("stranger", Token::as_str).to_owned(),
                lease_duration: Duration::from_millis(100),
                acquired_at: WallTime::UNIX_EPOCH,
                renewed_at: WallTime::UNIX_EPOCH,
                transitions,
                metadata: Metadata::default(),
                fence: None,
            }),
            Self::LastFired(due) => StoreReply::LastFired(due),
            Self::Failure(kind) => {
                let kind = [BackendErrorKind::Timeout, BackendErrorKind::Unavailable, BackendErrorKind::Protocol]
                    [usize::from(kind) % 3];
                return Err(BackendError::new(kind, "forged"));
            }
        })
    }
}

/// Machines, the store model, and what is in the network between them.
#[derive(Debug)]
pub struct Harness<M> {
    /// The clock every party reads.
    pub now: Timestamp,
    /// The store.
    pub store: StoreModel,
    /// The machines under test.
    pub machines: Vec<M>,
    /// Their tokens, for forged leader records.
    pub tokens: Vec<Token>,
    requests: Vec<Vec<StoreRequest>>,
    replies: Vec<Vec<(OpId, Result<StoreReply, BackendError>)>>,
    in_flight: Vec<Option<OpId>>,
    /// A forged reply was delivered: beliefs may no longer match the store.
    pub forged: bool,
}

impl<M: Machine> Harness<M> {
    /// A harness around `machines`, whose tokens are `tokens`.
    pub fn new(machines: Vec<M>, tokens: Vec<Token>) -> Self {
        let n = machines.len();
        Self {
            now: Timestamp::from_nanos(1_000_000_000),
            store: StoreModel::new(WallTime::UNIX_EPOCH),
            machines,
            tokens,
            requests: vec![Vec::new(); n],
            replies: vec![Vec::new(); n],
            in_flight: vec![None; n],
            forged: false,
        }
    }

    /// Machine `i` modulo the count.
    pub fn index(&self, i: u8) -> usize {
        usize::from(i) % self.machines.len()
    }

    /// Collects machine `m`'s requests and returns its events.
    pub fn drain(&mut self, m: usize) -> Vec<M::Event> {
        while let Some(request) = self.machines[m].poll_effect() {
            self.in_flight[m] = Some(request.id);
            self.requests[m].push(request);
        }
        std::iter::from_fn(|| self.machines[m].poll_event()).collect()
    }

    /// Runs one network step; returns the machine touched and its events.
    pub fn step(&mut self, step: &Net) -> (usize, Vec<M::Event>) {
        let pick = |len: usize, pick: u8| (len > 0).then(|| usize::from(pick) % len);
        match *step {
            Net::Advance(micros) => self.now = self.now + Duration::from_micros(u64::from(micros) % 60_000_000),
            Net::Fire(m) => {
                let m = self.index(m);
                if let Some(at) = self.machines[m].poll_timeout() {
                    self.now = self.now.max(at);
                    self.fire(m);
                }
                return (m, self.drain(m));
            }
            Net::FireEarly(m) => {
                let m = self.index(m);
                self.fire(m);
                return (m, self.drain(m));
            }
            Net::Apply(machine) => {
                let m = self.index(machine);
                if !self.requests[m].is_empty() {
                    let request = self.requests[m].remove(0);
                    let reply = self.store.apply(&request.op, self.now);
                    self.replies[m].push((request.id, Ok(reply)));
                }
            }
            Net::DropRequest { machine, pick: p } => {
                let m = self.index(machine);
                if let Some(i) = pick(self.requests[m].len(), p) {
                    self.requests[m].remove(i);
                }
            }
            Net::Reply { machine, pick: p, again } => {
                let m = self.index(machine);
                if let Some(i) = pick(self.replies[m].len(), p) {
                    let (id, reply) = if again { self.replies[m][i].clone() } else { self.replies[m].remove(i) };
                    self.machines[m].handle_reply(self.now, id, reply);
                    return (m, self.drain(m));
                }
            }
            Net::DropReply { machine, pick: p } => {
                let m = self.index(machine);
                if let Some(i) = pick(self.replies[m].len(), p) {
                    drop(self.replies[m].remove(i));
                }
            }
            Net::Forge { machine, ref reply, unknown } => {
                let m = self.index(machine);
                let id = if unknown { Some(OpId::new(u64::MAX)) } else { self.in_flight[m] };
                if let Some(id) = id {
                    self.forged = true;
                    self.machines[m].handle_reply(self.now, id, reply.reply(&self.tokens));
                    return (m, self.drain(m));
                }
            }
        }
        (0, Vec::new())
    }

    /// Runs `steps`: network steps, and commands through `command` (machine, now, its index,
    /// the command). After each step, while no reply was forged, `check` sees the harness.
    pub fn run<C>(
        &mut self,
        steps: &[Step<C>],
        mut command: impl FnMut(&mut M, Timestamp, usize, &C),
        mut check: impl FnMut(&Self),
    ) {
        for step in steps.iter().take(MAX_STEPS) {
            match step {
                Step::Net(net) => drop(self.step(net)),
                Step::Command { machine, command: c } => {
                    let (m, now) = (self.index(*machine), self.now);
                    command(&mut self.machines[m], now, m, c);
                    self.drain(m);
                }
            }
            if !self.forged {
                check(self);
            }
        }
    }

    /// Fires `m`'s timers at `now`; afterwards none may still be due.
    fn fire(&mut self, m: usize) {
        self.machines[m].handle_timeout(self.now);
        let next = self.machines[m].poll_timeout();
        assert!(next.is_none_or(|at| at > self.now), "a timer is still due after handle_timeout: {next:?}");
    }
}

/// A key of `kind` named "fuzz".
pub fn key(kind: KeyKind) -> Key {
    Key::new(kind, &Name::new("fuzz").expect("a valid name"))
}

/// The tokens of the machines.
pub fn tokens() -> Vec<Token> {
    (0..MACHINES).map(|i| Token::new(&format!("worker-{i}")).expect("a valid token")).collect()
}

/// A duration of `millis` milliseconds, at least 1.
pub fn millis(millis: u16) -> Duration {
    Duration::from_millis(u64::from(millis.max(1)))
}
