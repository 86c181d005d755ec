//! The discrete-event simulator: one thread, one queue of events in true time, workers with
//! their own clocks, links to one store (the core's [`StoreModel`]) and to a fenced resource.
//! Every event is hashed into the trace; the checks run after each one.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap};
use std::num::NonZeroU32;

use tenure_core::bugs::Bugs;
use tenure_core::{
    Access, BackendError, BackendErrorKind, ElectionMachine, FencingToken, HolderKind, Key, KeyKind, LockMachine,
    Metadata, Name, OpId, StoreModel, StoreOp, StoreReply, TaskLockMachine, Timestamp, Token, WallTime, WorkerId,
};

use crate::check::{Checker, Coverage};
use crate::client::{Client, Ctx, ElectionClient, Input, LockClient, Out, Target, TaskClient};
use crate::clock::Clock;
use crate::profile::{Faults, Profile, Workload, as_nanos, ms};
use crate::rand::Stream;

/// The lock names a run may use.
const LOCK_NAMES: [&str; 2] = ["orders", "payments"];

/// What one seed did.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The hash of every event in order: the same seed gives the same hash.
    pub trace: u64,
    /// What the run exercised.
    pub coverage: Coverage,
    /// Events processed.
    pub events: u64,
}

/// A broken rule, at a true instant.
#[derive(Clone, Debug)]
pub struct Failure {
    /// True time of the event that broke it, in nanoseconds.
    pub at: u64,
    /// What was broken.
    pub what: String,
}

/// Runs one seed to its end (the liveness check) or to its first failure.
pub fn run_seed(seed: u64, profile: Profile, bugs: Bugs, print: bool) -> Result<Outcome, Failure> {
    if profile == Profile::Driver {
        return crate::driver::run_seed(seed, print);
    }
    Sim::new(seed, profile, bugs, print).run()
}

#[derive(Debug)]
enum Event {
    Request {
        worker: usize,
        life: u32,
        client: usize,
        id: OpId,
        op: StoreOp,
    },
    Reply {
        worker: usize,
        life: u32,
        client: usize,
        id: OpId,
        reply: Result<StoreReply, BackendError>,
        store_life: u32,
        applied_at: u64,
    },
    Wake {
        worker: usize,
        life: u32,
        key: Key,
    },
    /// The store handed a lock to a queued waiter of `worker` (a push).
    Grant {
        worker: usize,
        life: u32,
        token: Token,
        fence: FencingToken,
    },
    Write {
        name: usize,
        fence: FencingToken,
        token: Token,
    },
    Timer {
        worker: usize,
        life: u32,
        client: usize,
        round: u64,
    },
    Action {
        worker: usize,
        life: u32,
        client: usize,
        round: u64,
    },
    Fault {
        fault: Fault,
        worker: usize,
    },
    Resume(usize),
    Restart(usize),
    Mend(usize),
    Unstall(usize),
    StoreUp,
    Heal,
    LivenessCheck,
}

impl Event {
    /// A small number per kind, for the trace hash.
    fn code(&self) -> u64 {
        match self {
            Self::Request { .. } => 1,
            Self::Reply { .. } => 2,
            Self::Wake { .. } => 3,
            Self::Write { .. } => 4,
            Self::Timer { .. } => 5,
            Self::Action { .. } => 6,
            Self::Fault { fault, .. } => 10 + *fault as u64,
            Self::Resume(_) => 20,
            Self::Restart(_) => 21,
            Self::Mend(_) => 22,
            Self::Unstall(_) => 23,
            Self::StoreUp => 24,
            Self::Heal => 25,
            Self::LivenessCheck => 26,
            Self::Grant { .. } => 27,
        }
    }
}

/// A fault that starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    Pause,
    Crash,
    Cut,
    Jump,
    Stall,
    StoreDown,
    /// An operator revokes a lock (`tenure revoke`).
    Revoke,
}

#[derive(Debug)]
struct Scheduled {
    at: u64,
    seq: u64,
    event: Event,
}

impl PartialEq for Scheduled {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl Eq for Scheduled {}

impl PartialOrd for Scheduled {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Scheduled {
    /// Reversed: the heap pops the earliest, in the order events were scheduled.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

#[derive(Debug)]
struct Slot {
    client: Client,
    action_round: u64,
    timer_round: u64,
    armed: Option<Timestamp>,
}

#[derive(Debug)]
struct Worker {
    id: WorkerId,
    alive: bool,
    life: u32,
    paused_until: Option<u64>,
    clock: Clock,
    cut_up: bool,
    cut_down: bool,
    /// Lock tokens made so far (numbers them).
    tokens: u64,
    slots: Vec<Slot>,
}

struct Sim {
    bugs: Bugs,
    print: bool,
    /// How long a queued lock holder's place lasts (ns), on seeds that queue.
    queue_wait: Option<u64>,
    now: u64,
    seq: u64,
    queue: BinaryHeap<Scheduled>,
    work: Workload,
    faults: Faults,
    net: Stream,
    fault_rng: Stream,
    spawn_rng: Stream,
    store: StoreModel,
    store_up: bool,
    store_life: u32,
    workers: Vec<Worker>,
    lock_keys: Vec<Key>,
    task_key: Key,
    election_key: Key,
    /// The read-write lock, and how many readers and writers each worker runs on it.
    rw_key: Key,
    rw_clients: (usize, usize),
    /// The semaphore, how many holders each worker runs on it, and its permit count.
    sem_key: Key,
    sem_clients: usize,
    permits: NonZeroU32,
    healed: bool,
    /// The last arrival on each ordered connection: (worker, life, client, towards the store).
    connections: BTreeMap<(usize, u32, usize, bool), u64>,
    /// How far each worker's clock has jumped forward in all.
    jumped: Vec<u64>,
    fault_ends: u64,
    done: bool,
    checker: Checker,
    events: u64,
    trace: u64,
}

impl Sim {
    fn new(seed: u64, profile: Profile, bugs: Bugs, print: bool) -> Self {
        let work = Workload::draw(&mut Stream::new(seed, "workload"));
        // Half the seeds queue their lock holders in the store (fair turns, hand-offs pushed by
        // the store), with a place that may outlast the pause between attempts or not.
        let mut queue = Stream::new(seed, "queue");
        let queue_wait = queue.chance(0.5).then(|| queue.between(ms(10), ms(300)));
        // Most seeds run readers and writers on a read-write lock (its own stream, so the rest of
        // the workload draws as before).
        let mut rw = Stream::new(seed, "read-write");
        let rw_clients = if rw.chance(0.8) { (rw.between(0, 2) as usize, rw.between(1, 2) as usize) } else { (0, 0) };
        // And most run holders of a semaphore's permits, more of them than there are permits.
        let mut sem = Stream::new(seed, "semaphore");
        let sem_clients = if sem.chance(0.7) { sem.between(1, 3) as usize } else { 0 };
        let permits = NonZeroU32::new(sem.between(1, 3) as u32).unwrap_or(NonZeroU32::MIN);
        let faults = profile.faults(&mut Stream::new(seed, "faults"), &work);
        let mut clocks = Stream::new(seed, "clocks");
        let workers = (0..work.workers)
            .map(|w| {
                let rate = 1.0 + clocks.float(-faults.drift, faults.drift);
                Worker {
                    id: WorkerId::new(&format!("worker-{w}")).expect("a valid worker name"),
                    alive: true,
                    life: 0,
                    paused_until: None,
                    clock: Clock::new(0, clocks.between(0, 1_000_000_000_000), rate),
                    cut_up: false,
                    cut_down: false,
                    tokens: 0,
                    slots: Vec::new(),
                }
            })
            .collect();
        let name = |n: &str| Name::new(n).expect("a valid name");
        let lock_keys = LOCK_NAMES.iter().take(work.lock_names).map(|n| Key::new(KeyKind::Lock, &name(n))).collect();
        let mut store = StoreModel::new(WallTime::UNIX_EPOCH);
        store.inject(bugs);
        let names = LOCK_NAMES.iter().take(work.lock_names).map(|n| (*n).to_owned()).collect();
        let sem_permits = (sem_clients > 0).then_some(permits.get() as usize);
        let checker = Checker::new(&work, &faults, names, rw_clients.1 > 0, sem_permits);
        let mut sim = Self {
            queue_wait,
            bugs,
            print,
            now: 0,
            seq: 0,
            queue: BinaryHeap::new(),
            faults,
            net: Stream::new(seed, "network"),
            fault_rng: Stream::new(seed, "fault-times"),
            spawn_rng: Stream::new(seed, "clients"),
            store,
            store_up: true,
            store_life: 0,
            workers,
            lock_keys,
            task_key: Key::new(KeyKind::TaskLock, &name("nightly-report")),
            election_key: Key::new(KeyKind::Leader, &name("scheduler")),
            rw_key: Key::new(KeyKind::ReadWriteLock, &name("ledger")),
            rw_clients,
            sem_key: Key::new(KeyKind::Semaphore, &name("pool")),
            sem_clients,
            permits,
            healed: false,
            jumped: vec![0; work.workers],
            connections: BTreeMap::new(),
            fault_ends: 0,
            done: false,
            checker,
            events: 0,
            trace: seed,
            work,
        };
        for w in 0..sim.workers.len() {
            sim.spawn(w);
            for fault in [Fault::Pause, Fault::Crash, Fault::Cut, Fault::Jump, Fault::Stall] {
                sim.next_fault(fault, w);
            }
        }
        sim.next_fault(Fault::StoreDown, 0);
        sim.next_fault(Fault::Revoke, 0);
        sim.push(sim.work.heal_at, Event::Heal);
        sim
    }

    fn run(mut self) -> Result<Outcome, Failure> {
        while let Some(Scheduled { at, event, .. }) = self.queue.pop() {
            self.now = at;
            self.events += 1;
            self.note(&event);
            self.handle(event)?;
            self.checker.beliefs(self.now, &self.believers()).map_err(|what| self.failure(what))?;
            if self.done {
                break;
            }
        }
        Ok(Outcome { trace: self.trace, coverage: self.checker.coverage, events: self.events })
    }

    fn failure(&self, what: String) -> Failure {
        Failure { at: self.now, what }
    }

    fn push(&mut self, at: u64, event: Event) {
        self.seq += 1;
        self.queue.push(Scheduled { at, seq: self.seq, event });
    }

    /// Hashes the event into the trace, and prints it when asked.
    fn note(&mut self, event: &Event) {
        let mut words = vec![self.now, event.code()];
        match event {
            Event::Request { worker, client, id, .. } => words.extend([*worker as u64, *client as u64, id.get()]),
            Event::Reply { worker, client, id, reply, .. } => {
                words.extend([*worker as u64, *client as u64, id.get(), reply_word(reply)]);
            }
            Event::Timer { worker, client, round, .. } | Event::Action { worker, client, round, .. } => {
                words.extend([*worker as u64, *client as u64, *round]);
            }
            Event::Write { name, fence, .. } => words.extend([*name as u64, fence.get()]),
            Event::Grant { worker, fence, .. } => words.extend([*worker as u64, fence.get()]),
            Event::Wake { worker, .. }
            | Event::Fault { worker, .. }
            | Event::Resume(worker)
            | Event::Restart(worker)
            | Event::Mend(worker)
            | Event::Unstall(worker) => words.push(*worker as u64),
            Event::StoreUp | Event::Heal | Event::LivenessCheck => {}
        }
        for word in words {
            self.trace = mix(self.trace ^ word);
        }
        if self.print {
            #[allow(clippy::print_stdout)]
            {
                println!("{:>12.3} ms  {event:?}", self.now as f64 / 1e6);
            }
        }
    }

    // ---- dispatch -----------------------------------------------------------------------------

    fn handle(&mut self, event: Event) -> Result<(), Failure> {
        match event {
            Event::Request { worker, life, client, id, op } => self.at_store(worker, life, client, id, &op)?,
            Event::Reply { worker, life, client, id, reply, store_life, applied_at } => {
                if store_life != self.store_life {
                    return Ok(()); // the connection was reset by a store restart
                }
                let event = Event::Reply { worker, life, client, id, reply, store_life, applied_at };
                let Some(Event::Reply { reply, .. }) = self.deliverable(worker, life, event) else { return Ok(()) };
                self.feed(worker, client, Input::Reply(id, reply), Some(applied_at))?;
            }
            Event::Wake { worker, life, key } => {
                let event = Event::Wake { worker, life, key };
                let Some(Event::Wake { key, .. }) = self.deliverable(worker, life, event) else { return Ok(()) };
                for client in 0..self.workers[worker].slots.len() {
                    if self.client_key(worker, client) == Some(&key) {
                        self.feed(worker, client, Input::Wake, None)?;
                    }
                }
            }
            Event::Grant { worker, life, token, fence } => {
                let event = Event::Grant { worker, life, token, fence };
                let Some(Event::Grant { token, fence, .. }) = self.deliverable(worker, life, event) else {
                    return Ok(());
                };
                // To the holder with that token, if it is still there (else the lease lapses).
                let to = (0..self.workers[worker].slots.len())
                    .find(|&c| self.workers[worker].slots[c].client.holds_token(&token));
                if let Some(client) = to {
                    self.checker.coverage.handed_over += 1;
                    self.feed(worker, client, Input::Grant(token, fence), None)?;
                }
            }
            Event::Timer { worker, life, client, round } => {
                let event = Event::Timer { worker, life, client, round };
                if self.deliverable(worker, life, event).is_some()
                    && self.workers[worker].slots[client].timer_round == round
                {
                    self.workers[worker].slots[client].armed = None;
                    self.feed(worker, client, Input::Timer, None)?;
                }
            }
            Event::Action { worker, life, client, round } => {
                let event = Event::Action { worker, life, client, round };
                if self.deliverable(worker, life, event).is_some()
                    && self.workers[worker].slots[client].action_round == round
                {
                    self.feed(worker, client, Input::Action, None)?;
                }
            }
            Event::Write { name, fence, token } => {
                self.checker.write(name, fence, &token).map_err(|what| self.failure(what))?;
            }
            Event::Fault { fault: Fault::Revoke, .. } => self.revoke()?,
            Event::Fault { fault, worker } => self.start_fault(fault, worker),
            Event::Resume(w) => {
                let worker = &mut self.workers[w];
                worker.paused_until = None;
                let local = worker.clock.local(self.now);
                let lapsed = worker.slots.iter().filter(|s| s.client.lapsed(local)).count();
                self.checker.coverage.expired_in_pause += lapsed as u64;
            }
            Event::Restart(w) => {
                let worker = &mut self.workers[w];
                worker.alive = true;
                worker.paused_until = None;
                self.spawn(w);
            }
            Event::Mend(w) => {
                let worker = &mut self.workers[w];
                (worker.cut_up, worker.cut_down) = (false, false);
            }
            Event::Unstall(w) => {
                self.workers[w].clock.stall(self.now, false);
                self.rearm_all(w);
            }
            Event::StoreUp => self.store_up = true,
            Event::Heal => {
                self.healed = true;
                let quiet_at = self.now.max(self.fault_ends);
                let check_at = self.checker.heal(quiet_at, &self.work, &self.faults);
                self.push(check_at, Event::LivenessCheck);
            }
            Event::LivenessCheck => {
                self.checker.liveness().map_err(|what| self.failure(what))?;
                self.done = true;
            }
        }
        Ok(())
    }

    /// The event if worker `w` can take it now: dropped for a dead incarnation, put off until the
    /// end of a pause.
    fn deliverable(&mut self, w: usize, life: u32, event: Event) -> Option<Event> {
        let worker = &self.workers[w];
        if !worker.alive || worker.life != life {
            return None;
        }
        if let Some(until) = worker.paused_until.filter(|&until| until > self.now) {
            self.push(until, event);
            return None;
        }
        Some(event)
    }

    fn client_key(&self, w: usize, c: usize) -> Option<&Key> {
        match self.workers[w].slots[c].client.target() {
            Target::Lock(name) => self.lock_keys.get(name),
            Target::Task => Some(&self.task_key),
            Target::Election => Some(&self.election_key),
            Target::Rw { .. } => Some(&self.rw_key),
            Target::Sem => Some(&self.sem_key),
        }
    }

    /// Gives `input` to client `c` of worker `w`, then carries out what it produced.
    fn feed(&mut self, w: usize, c: usize, input: Input, applied_at: Option<u64>) -> Result<(), Failure> {
        let worker = &mut self.workers[w];
        let local = worker.clock.local(self.now);
        let mut cx = Ctx::new(local, self.healed, self.print);
        let slot = &mut worker.slots[c];
        slot.client.feed(input, &mut cx);
        let (target, role) = (slot.client.target(), slot.client.role());
        for request in cx.requests {
            self.send_request(w, c, request.id, &request.op);
        }
        for out in cx.outs {
            match out {
                Out::After(delay) => {
                    let worker = &mut self.workers[w];
                    let slot = &mut worker.slots[c];
                    slot.action_round += 1;
                    let event = Event::Action { worker: w, life: worker.life, client: c, round: slot.action_round };
                    self.push(self.now + delay, event);
                }
                Out::Write(fence, token) => {
                    let name = match target {
                        Target::Lock(name) => Some(name),
                        Target::Rw { write: true } => Some(crate::check::RW_RESOURCE),
                        Target::Election => Some(crate::check::LEADER_RESOURCE),
                        _ => None,
                    };
                    if let Some(name) = name {
                        let at = self.now + self.delay();
                        self.push(at, Event::Write { name, fence, token });
                    }
                }
                Out::Acquired => self.checker.acquired(self.now, target),
                Out::Contention => self.checker.coverage.contention += 1,
                Out::Body { valid } => {
                    let anchor = applied_at.unwrap_or(self.now);
                    self.checker.body(self.now, anchor, valid, w, &self.jumped).map_err(|what| self.failure(what))?;
                }
                Out::Elected(fence) => self.checker.elected(w, fence).map_err(|what| self.failure(what))?,
                Out::Replace => {
                    let client = match role {
                        Target::Lock(name) => Some(self.lock_client(w, name)),
                        Target::Rw { write } => Some(self.rw_client(w, write)),
                        Target::Sem => Some(self.sem_client(w)),
                        _ => None,
                    };
                    if let Some(client) = client {
                        let worker = &mut self.workers[w];
                        worker.slots.push(Slot { client, action_round: 1, timer_round: 0, armed: None });
                        let event =
                            Event::Action { worker: w, life: worker.life, client: worker.slots.len() - 1, round: 1 };
                        self.push(self.now, event);
                    }
                }
                Out::Violation(what) => return Err(self.failure(format!("worker {w}: {what}"))),
                #[allow(clippy::print_stdout)]
                Out::Note(note) => println!("{:>12} worker {w} client {c}: {note}", ""),
            }
        }
        self.arm(w, c, false);
        Ok(())
    }

    /// Keeps one timer event per client at the true instant its machine's deadline falls due.
    fn arm(&mut self, w: usize, c: usize, force: bool) {
        let now = self.now;
        let worker = &mut self.workers[w];
        let slot = &mut worker.slots[c];
        let deadline = slot.client.timeout();
        if deadline == slot.armed && !force {
            return;
        }
        slot.timer_round += 1;
        slot.armed = deadline;
        let Some(at) = deadline.and_then(|d| worker.clock.true_time_of(now, d)) else { return };
        let event = Event::Timer { worker: w, life: worker.life, client: c, round: slot.timer_round };
        self.push(at, event);
    }

    fn rearm_all(&mut self, w: usize) {
        for c in 0..self.workers[w].slots.len() {
            self.arm(w, c, true);
        }
    }

    // ---- workers ------------------------------------------------------------------------------

    /// Starts worker `w`'s clients afresh (at the start, or after a crash).
    fn spawn(&mut self, w: usize) {
        let now = self.now;
        let local = self.workers[w].clock.local(now);
        let mut ids = self.spawn_rng.fork();
        let mut slots = Vec::new();
        for name in 0..self.lock_keys.len() {
            for _ in 0..self.work.lock_clients {
                slots.push(self.lock_client(w, name));
            }
        }
        let (readers, writers) = self.rw_clients;
        for write in std::iter::repeat_n(false, readers).chain(std::iter::repeat_n(true, writers)) {
            slots.push(self.rw_client(w, write));
        }
        for _ in 0..self.sem_clients {
            slots.push(self.sem_client(w));
        }
        let worker = &mut self.workers[w];
        let mut machine = TaskLockMachine::new(self.task_key.clone(), &self.work.task);
        machine.inject(self.bugs);
        let min_hold = as_nanos(self.work.task.min_hold_duration());
        slots.push(Client::Task(TaskClient::new(machine, min_hold, worker.id.clone(), self.spawn_rng.child())));
        let token = Token::leader(&worker.id);
        let config = self.work.election.clone();
        let configs = [self.work.election.clone(), self.work.election_alt.clone()];
        let mut machine =
            ElectionMachine::new(self.election_key.clone(), token, config, Metadata::default(), local, &mut ids);
        machine.inject(self.bugs);
        slots.push(Client::Election(ElectionClient::new(machine, configs, self.spawn_rng.child())));
        worker.slots =
            slots.into_iter().map(|client| Slot { client, action_round: 0, timer_round: 0, armed: None }).collect();
        for c in 0..self.workers[w].slots.len() {
            let start = self.spawn_rng.between(0, ms(50));
            let worker = &mut self.workers[w];
            worker.slots[c].action_round += 1;
            let event = Event::Action { worker: w, life: worker.life, client: c, round: worker.slots[c].action_round };
            self.push(now + start, event);
        }
    }

    /// A new holder of lock `name` on worker `w`, with a token of its own.
    fn lock_client(&mut self, w: usize, name: usize) -> Client {
        let worker = &mut self.workers[w];
        worker.tokens += 1;
        let mut ids = self.spawn_rng.fork();
        let token = Token::fresh_holder(&worker.id, HolderKind::Task, worker.tokens, &mut ids);
        let mut machine = LockMachine::new(self.lock_keys[name].clone(), token, &self.work.lock, &mut ids);
        machine.inject(self.bugs);
        machine.set_queued(self.queue_wait.map(std::time::Duration::from_nanos));
        let configs = [self.work.lock.clone(), self.work.lock_alt.clone()];
        Client::Lock(LockClient::new(name, machine, configs, worker.id.clone(), self.spawn_rng.child()))
    }

    /// A new reader or writer of the read-write lock on worker `w`, with a token of its own.
    fn rw_client(&mut self, w: usize, write: bool) -> Client {
        let worker = &mut self.workers[w];
        worker.tokens += 1;
        let mut ids = self.spawn_rng.fork();
        let token = Token::fresh_holder(&worker.id, HolderKind::Task, worker.tokens, &mut ids);
        let access = if write { Access::Write } else { Access::Read };
        let mut machine = LockMachine::with_access(self.rw_key.clone(), token, access, &self.work.lock, &mut ids);
        machine.inject(self.bugs);
        let configs = [self.work.lock.clone(), self.work.lock_alt.clone()];
        Client::Lock(LockClient::new(0, machine, configs, worker.id.clone(), self.spawn_rng.child()))
    }

    /// A new holder of a permit of the semaphore on worker `w`, with a token of its own.
    fn sem_client(&mut self, w: usize) -> Client {
        let worker = &mut self.workers[w];
        worker.tokens += 1;
        let mut ids = self.spawn_rng.fork();
        let token = Token::fresh_holder(&worker.id, HolderKind::Task, worker.tokens, &mut ids);
        let access = Access::Permit(self.permits);
        let mut machine = LockMachine::with_access(self.sem_key.clone(), token, access, &self.work.lock, &mut ids);
        machine.inject(self.bugs);
        let configs = [self.work.lock.clone(), self.work.lock_alt.clone()];
        Client::Lock(LockClient::new(0, machine, configs, worker.id.clone(), self.spawn_rng.child()))
    }

    /// Every machine of every live worker that believes it holds or leads, with its name.
    fn believers(&self) -> Vec<(Target, usize, Option<FencingToken>)> {
        let mut out = Vec::new();
        for (w, worker) in self.workers.iter().enumerate().filter(|(_, worker)| worker.alive) {
            let local = worker.clock.local(self.now);
            for slot in &worker.slots {
                if slot.client.believes(local) {
                    out.push((slot.client.target(), w, slot.client.fence()));
                }
            }
        }
        out
    }

    // ---- network and store --------------------------------------------------------------------

    fn delay(&mut self) -> u64 {
        let (low, high) = self.faults.delay;
        let base = self.net.between(low, high);
        if !self.healed && self.net.chance(self.faults.spike) {
            base + self.net.between(0, self.faults.spike_max)
        } else {
            base
        }
    }

    /// Whether the network loses a message it would lose with probability `p`.
    fn lost(&mut self, p: f64) -> bool {
        !self.healed && self.net.chance(p)
    }

    /// How many copies of a message arrive (0 is handled by the caller).
    fn copies(&mut self) -> usize {
        if !self.healed && self.net.chance(self.faults.duplicate) { 2 } else { 1 }
    }

    /// When a message on client `c`'s connection arrives: after its delay, and, on an ordered
    /// connection, after every message sent on it before.
    fn arrival(&mut self, w: usize, life: u32, c: usize, to_store: bool) -> u64 {
        let at = self.now + self.delay();
        let worker = &self.workers[w];
        let current = worker.life == life;
        let lock = current
            && matches!(
                worker.slots.get(c).map(|s| s.client.target()),
                Some(Target::Lock(_) | Target::Rw { .. } | Target::Sem)
            );
        if self.faults.pooled && lock {
            return at;
        }
        let key = (w, life, c, to_store);
        let last = self.connections.entry(key).or_insert(0);
        *last = (*last).max(at);
        *last
    }

    fn send_request(&mut self, w: usize, c: usize, id: OpId, op: &StoreOp) {
        if self.workers[w].cut_up || self.lost(self.faults.loss) {
            return;
        }
        for _ in 0..self.copies() {
            let life = self.workers[w].life;
            let at = self.arrival(w, life, c, true);
            self.push(at, Event::Request { worker: w, life, client: c, id, op: op.clone() });
        }
    }

    fn send_reply(&mut self, w: usize, life: u32, c: usize, id: OpId, reply: &Result<StoreReply, BackendError>) {
        if self.workers[w].cut_down || self.lost(self.faults.reply_loss) {
            return;
        }
        for _ in 0..self.copies() {
            let at = self.arrival(w, life, c, false);
            let event = Event::Reply {
                worker: w,
                life,
                client: c,
                id,
                reply: reply.clone(),
                store_life: self.store_life,
                applied_at: self.now,
            };
            self.push(at, event);
        }
    }

    fn at_store(&mut self, w: usize, life: u32, c: usize, id: OpId, op: &StoreOp) -> Result<(), Failure> {
        if !self.store_up {
            let refused =
                BackendError::new(BackendErrorKind::Unavailable, "connection refused: the store is restarting");
            self.send_reply(w, life, c, id, &Err(refused));
            return Ok(());
        }
        let holder_before = match op {
            StoreOp::LockAcquire { key, .. } | StoreOp::LockAcquireQueued { key, .. } => {
                self.store.lock_lease(key, Timestamp::from_nanos(self.now))
            }
            _ => None,
        }
        .map(|lease| lease.token.clone());
        let now = Timestamp::from_nanos(self.now);
        let writer_before = match op {
            StoreOp::RwAcquireWrite { key, .. } => self.store.rw_holders(key, now).0,
            _ => None,
        };
        let permit_before = match op {
            StoreOp::SemAcquire { key, token, .. } => {
                self.store.sem_holders(key, now).into_iter().find(|(held, _)| held == token).map(|(_, fence)| fence)
            }
            _ => None,
        };
        let queue_before = match op {
            StoreOp::LockAcquireQueued { key, .. } | StoreOp::LockRelease { key, .. } => {
                self.store.lock_queue(key, now)
            }
            _ => Vec::new(),
        };
        let (reply, grant) = match op {
            StoreOp::LockAcquireQueued { key, token, lease, wait, details } => {
                let place = (w as u64, details.as_ref());
                let (fence, grant) = self.store.lock_acquire_queued(key, token, (*lease, *wait), place, now);
                (StoreReply::Fence(fence), grant)
            }
            // Where holders queue, a release hands the lock to the queue's head.
            StoreOp::LockRelease { key, token } if self.queue_wait.is_some() => {
                let (released, grant) = self.store.lock_release_queued(key, token, now);
                (StoreReply::Flag(released), grant)
            }
            _ => (self.store.apply(op, now), None),
        };
        match (op, &reply) {
            (
                StoreOp::LockAcquire { key, token, .. } | StoreOp::LockAcquireQueued { key, token, .. },
                StoreReply::Fence(Some(fence)),
            ) => {
                let renewal = holder_before.as_ref() == Some(token);
                self.checker.issued(key, token, *fence, renewal).map_err(|what| self.failure(what))?;
            }
            (StoreOp::LockRelease { key, .. } | StoreOp::LeaderRelease { key, .. }, StoreReply::Flag(true))
                if self.faults.wakeups =>
            {
                self.wake_all(key);
            }
            (StoreOp::RwAcquireWrite { key, token, .. }, StoreReply::Write(Some(grant))) => {
                let renewal = writer_before.as_ref() == Some(token);
                self.checker.issued(key, token, grant.fence, renewal).map_err(|what| self.failure(what))?;
                self.checker.rw_written(token, *grant, renewal).map_err(|what| self.failure(what))?;
            }
            (StoreOp::SemAcquire { .. }, StoreReply::Permit(tenure_core::PermitAnswer { fence: Some(fence), .. })) => {
                self.checker.permit(*fence, permit_before).map_err(|what| self.failure(what))?;
            }
            (StoreOp::SemRelease { key, .. }, StoreReply::Flag(true)) if self.faults.wakeups => self.wake_all(key),
            (StoreOp::RwAcquireRead { key, .. }, StoreReply::Fence(Some(generation))) => {
                self.checker.rw_read(key, *generation).map_err(|what| self.failure(what))?;
            }
            (StoreOp::RwReleaseWrite { key, .. } | StoreOp::RwDowngrade { key, .. }, StoreReply::Flag(true))
            | (StoreOp::RwDowngrade { key, .. }, StoreReply::Fence(Some(_))) => {
                self.checker.rw_write_ended(matches!(op, StoreOp::RwDowngrade { .. }));
                if self.faults.wakeups {
                    self.wake_all(key);
                }
            }
            (StoreOp::RwReleaseRead { key, .. } | StoreOp::RwCancelIntent { key, .. }, StoreReply::Flag(true))
                if self.faults.wakeups =>
            {
                self.wake_all(key);
            }
            _ => {}
        }
        if let Some(grant) = grant {
            // Handed to the oldest waiter whose place was live (not the asker): a waiter that
            // vanished blocks the queue no longer than its place lasts.
            let asker = match op {
                StoreOp::LockAcquireQueued { token, .. } | StoreOp::LockRelease { token, .. } => Some(token),
                _ => None,
            };
            let head = queue_before.iter().find(|waiter| waiter.expires_at >= now && Some(&waiter.token) != asker);
            if head.map(|waiter| &waiter.token) != Some(&grant.token) {
                return Err(self.failure(format!(
                    "the store handed {} to a waiter that was not the oldest with a live place",
                    op.key().name_str()
                )));
            }
            self.hand_over(op.key(), grant)?;
        }
        self.send_reply(w, life, c, id, &Ok(reply));
        Ok(())
    }

    /// The store handed `key` to the head of its queue: the grant is a new fence, pushed to the
    /// waiter's worker (lost, late or never heard if the network says so: the lease then lapses).
    fn hand_over(&mut self, key: &Key, grant: tenure_core::Grant) -> Result<(), Failure> {
        self.checker.issued(key, &grant.token, grant.fence, false).map_err(|what| self.failure(what))?;
        let w = usize::try_from(grant.route).unwrap_or(usize::MAX);
        let Some(worker) = self.workers.get(w).filter(|worker| worker.alive && !worker.cut_down) else {
            return Ok(());
        };
        let life = worker.life;
        if self.lost(self.faults.reply_loss) {
            return Ok(());
        }
        let at = self.now + self.delay();
        self.push(at, Event::Grant { worker: w, life, token: grant.token, fence: grant.fence });
        Ok(())
    }

    fn wake_all(&mut self, key: &Key) {
        for w in 0..self.workers.len() {
            let worker = &self.workers[w];
            if !worker.alive || worker.cut_down {
                continue;
            }
            let life = worker.life;
            if self.lost(self.faults.reply_loss) {
                continue;
            }
            let at = self.now + self.delay();
            self.push(at, Event::Wake { worker: w, life, key: key.clone() });
        }
    }

    // ---- faults -------------------------------------------------------------------------------

    fn mean(&self, fault: Fault) -> Option<u64> {
        match fault {
            Fault::Pause => self.faults.pause_every,
            Fault::Crash => self.faults.crash_every,
            Fault::Cut => self.faults.partition_every,
            Fault::Jump => self.faults.jump_every,
            Fault::Stall => self.faults.stall_every,
            Fault::StoreDown => self.faults.store_restart_every,
            Fault::Revoke => self.faults.revoke_every,
        }
    }

    /// Schedules the next occurrence of `fault` on worker `w`, if the family is on.
    fn next_fault(&mut self, fault: Fault, w: usize) {
        let Some(mean) = self.mean(fault) else { return };
        let at = self.now + self.fault_rng.exponential(mean);
        self.push(at, Event::Fault { fault, worker: w });
    }

    /// Schedules the end of a fault `len` from now.
    fn end_fault(&mut self, len: u64, event: Event) -> u64 {
        let at = self.now + len;
        self.fault_ends = self.fault_ends.max(at);
        self.push(at, event);
        at
    }

    /// An operator revokes one of the locks (held or not), while the store is up; the checker
    /// holds the fenced resource and the next grant to the fence the revocation advanced to.
    fn revoke(&mut self) -> Result<(), Failure> {
        if !self.healed && self.store_up && !self.lock_keys.is_empty() {
            let last = u64::try_from(self.lock_keys.len() - 1).unwrap_or(0);
            let name = usize::try_from(self.fault_rng.between(0, last)).unwrap_or(0);
            let key = self.lock_keys[name].clone();
            let now = Timestamp::from_nanos(self.now);
            if let Some(revoked) = self.store.lock_revoke(&key, &tenure_core::RevokeReason::default(), now) {
                self.checker.revoked(name, &key, &revoked).map_err(|what| self.failure(what))?;
            }
        }
        self.next_fault(Fault::Revoke, 0);
        Ok(())
    }

    fn start_fault(&mut self, fault: Fault, w: usize) {
        if self.healed {
            return;
        }
        let now = self.now;
        let f = self.faults.clone();
        let rng = &mut self.fault_rng;
        let worker = &mut self.workers[w];
        match fault {
            Fault::Pause if worker.alive && worker.paused_until.is_none() => {
                let len = rng.between(ms(1), f.pause_max);
                worker.paused_until = Some(now + len);
                self.checker.coverage.pauses += 1;
                self.end_fault(len, Event::Resume(w));
            }
            Fault::Crash if worker.alive => {
                worker.alive = false;
                worker.life += 1;
                worker.slots.clear();
                let len = rng.between(f.restart_after.0, f.restart_after.1);
                self.checker.coverage.crashes += 1;
                self.end_fault(len, Event::Restart(w));
            }
            Fault::Cut if !worker.cut_up && !worker.cut_down => {
                let one_way = rng.chance(f.one_way);
                let up_only = rng.chance(0.5);
                (worker.cut_up, worker.cut_down) = if one_way { (up_only, !up_only) } else { (true, true) };
                let len = rng.between(f.partition_len.0, f.partition_len.1);
                self.checker.coverage.partitions += 1;
                self.end_fault(len, Event::Mend(w));
            }
            Fault::Jump => {
                let by = rng.between(1, f.jump_max);
                worker.clock.jump(now, by);
                self.jumped[w] += by;
                self.checker.coverage.clock_jumps += 1;
                self.rearm_all(w);
            }
            Fault::Stall => {
                worker.clock.stall(now, true);
                let len = rng.between(ms(1), f.stall_max);
                self.end_fault(len, Event::Unstall(w));
            }
            Fault::StoreDown if self.store_up => {
                self.store_up = false;
                self.store_life += 1;
                let len = rng.between(f.store_down.0, f.store_down.1);
                self.checker.coverage.store_restarts += 1;
                self.end_fault(len, Event::StoreUp);
            }
            _ => {}
        }
        self.next_fault(fault, w);
    }
}

/// The words of a reply that the trace keeps.
fn reply_word(reply: &Result<StoreReply, BackendError>) -> u64 {
    match reply {
        Ok(StoreReply::Fence(fence)) => 1 + fence.map_or(0, |f| f.get() << 4),
        Ok(StoreReply::Flag(flag)) => 2 + (u64::from(*flag) << 4),
        Ok(StoreReply::Leader(record)) => 3 + (record.transitions << 4),
        Ok(_) => 4,
        Err(_) => 5,
    }
}

/// SplitMix64's finaliser, to chain the trace hash.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
