//! Two workers coordinating through the store model, in virtual time: mutual exclusion with
//! increasing fencing tokens, a lease lost by a stalled holder, and a leader hand-over.
//!
//! `cargo run -p tenure-core --example two_workers`
#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::time::Duration;

use tenure_core::machine::Machine;
use tenure_core::{
    ElectionEvent, ElectionMachine, Key, KeyKind, LeaderElectionConfig, LockConfig, LockEvent, LockMachine, Metadata,
    Name, SplitMix64, StoreModel, Timestamp, Token, WallTime, WorkerId,
};

/// What the script asks a worker to do.
#[derive(Clone, Copy, Debug)]
enum Action {
    Acquire,
    Release,
    /// Stop answering timers: the process is paused (a long GC, a stopped container).
    Stall,
    Resume,
    StartElection,
    StopElection,
}

struct Worker {
    name: &'static str,
    lock: LockMachine,
    election: ElectionMachine,
    stalled: bool,
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn main() {
    let mut rng = SplitMix64::new(2026);
    let mut store = StoreModel::new(WallTime::from_unix_micros(1_795_939_200_000_000));
    let lock_key = Key::new(KeyKind::Lock, &Name::new("orders").unwrap());
    let leader_key = Key::new(KeyKind::Leader, &Name::new("scheduler").unwrap());
    let mut workers: Vec<Worker> = ["A", "B"]
        .into_iter()
        .map(|name| {
            let worker = WorkerId::new(&format!("worker-{name}")).unwrap();
            let lock_config = LockConfig::builder()
                .worker(worker.clone())
                .lease_duration(ms(300))
                .retry_interval(ms(50))
                .build(&mut rng)
                .unwrap();
            let election_config = LeaderElectionConfig::builder()
                .worker(worker.clone())
                .lease_duration(ms(400))
                .renew_deadline(ms(300))
                .retry_interval(ms(100))
                .backend_timeout(ms(50))
                .build(&mut rng)
                .unwrap();
            let token = Token::new(&format!("{worker}:task:1.0123456789abcdef")).unwrap();
            let meta = Metadata::from_pairs([("pod", name)]).unwrap();
            Worker {
                name,
                lock: LockMachine::new(lock_key.clone(), token, &lock_config, &mut rng),
                election: ElectionMachine::new(
                    leader_key.clone(),
                    Token::leader(&worker),
                    election_config,
                    meta,
                    Timestamp::ZERO,
                    &mut rng,
                ),
                stalled: false,
            }
        })
        .collect();

    let script = [
        (0, 0, Action::Acquire),
        (10, 1, Action::Acquire),
        (120, 0, Action::Release),
        (200, 1, Action::Stall),
        (250, 0, Action::Acquire),
        (600, 1, Action::Resume),
        (700, 0, Action::Release),
        (900, 0, Action::StartElection),
        (950, 1, Action::StartElection),
        (1400, 0, Action::StopElection),
    ];
    println!("virtual time  worker  what");
    let mut now = Timestamp::ZERO;
    let mut next_action = 0;
    let end = Timestamp::ZERO + ms(1800);
    while now < end {
        let scripted = script.get(next_action).map(|&(at, _, _)| Timestamp::ZERO + ms(at));
        let timers =
            workers.iter().filter(|w| !w.stalled).flat_map(|w| [w.lock.poll_timeout(), w.election.poll_timeout()]);
        let Some(next) = timers.chain([scripted, Some(end)]).flatten().min() else { break };
        now = now.max(next);
        for w in workers.iter_mut().filter(|w| !w.stalled) {
            w.lock.handle_timeout(now);
            w.election.handle_timeout(now);
        }
        while let Some(&(at, who, action)) = script.get(next_action) {
            if Timestamp::ZERO + ms(at) > now {
                break;
            }
            next_action += 1;
            let w = &mut workers[who];
            match action {
                Action::Acquire => w.lock.acquire(now, None).unwrap(),
                Action::Release => w.lock.release(now).unwrap(),
                Action::Stall => {
                    w.stalled = true;
                    say(now, w.name, "process paused");
                }
                Action::Resume => {
                    w.stalled = false;
                    say(now, w.name, "process resumed");
                    w.lock.handle_timeout(now);
                }
                Action::StartElection => {
                    w.election.start(now);
                }
                Action::StopElection => w.election.stop(now),
            }
        }
        let mut released_leadership = false;
        for w in &mut workers {
            for event in run(&mut w.lock, &mut store, now) {
                say(now, w.name, &lock_line(&event));
            }
            for event in run(&mut w.election, &mut store, now) {
                released_leadership |= event == ElectionEvent::Released { released: true };
                say(now, w.name, &election_line(&event, &w.election));
            }
        }
        if released_leadership {
            // A push wake-up, as Redis pub/sub or LISTEN/NOTIFY deliver it: followers try at once.
            for w in workers.iter_mut().filter(|w| !w.stalled) {
                w.election.wake(now);
                for event in run(&mut w.election, &mut store, now) {
                    say(now, w.name, &election_line(&event, &w.election));
                }
            }
        }
    }
    println!("fencing counter of lock:orders in the store: {}", store.last_fence(&lock_key).unwrap());
}

/// Runs the machine's requests against the store (a 0 ms round trip) and returns its events.
fn run<M: Machine>(machine: &mut M, store: &mut StoreModel, now: Timestamp) -> Vec<M::Event> {
    let mut events = Vec::new();
    loop {
        while let Some(event) = machine.poll_event() {
            events.push(event);
        }
        let Some(request) = machine.poll_effect() else { return events };
        let reply = store.apply(&request.op, now);
        machine.handle_reply(now, request.id, Ok(reply));
    }
}

fn say(now: Timestamp, worker: &str, what: &str) {
    println!("{:>9.3}s     {worker}     {what}", now.as_nanos() as f64 / 1e9);
}

fn lock_line(event: &LockEvent) -> String {
    match event {
        LockEvent::Acquired { fence, .. } => format!("lock orders: acquired, fencing token {fence}"),
        LockEvent::Extended { fence, .. } => format!("lock orders: extended, fencing token {fence}"),
        LockEvent::Released { .. } => "lock orders: released".into(),
        LockEvent::Lost { fence, reason } => format!("lock orders: lease with fencing token {fence} lost ({reason:?})"),
        LockEvent::Failed(e) => format!("lock orders: {e}"),
        other => format!("lock orders: {other:?}"),
    }
}

fn election_line(event: &ElectionEvent, election: &ElectionMachine) -> String {
    let record = election.record();
    match event {
        ElectionEvent::Elected => {
            let transitions = record.map_or(0, |r| r.transitions);
            format!("election scheduler: elected leader (transitions {transitions})")
        }
        ElectionEvent::Deposed { reason } => format!("election scheduler: no longer leader ({reason:?})"),
        ElectionEvent::Released { released } => format!("election scheduler: released the lease ({released})"),
        ElectionEvent::Stopped => "election scheduler: stopped".into(),
        other => format!("election scheduler: {other:?}"),
    }
}
