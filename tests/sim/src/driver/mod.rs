//! The driver itself under simulation (`--profile driver`): workers use the public API —
//! `Lock` (waiting, bounded and one-shot acquires, extends, releases, dropped guards, acquires
//! and releases abandoned mid-call), keep-alives and `TaskLock` — on a simulated runtime
//! ([`runtime`]) against a simulated store ([`store`]) that delays, loses, fails and freezes
//! calls. So the driver's foreground and background drives, hand-offs and renewals are checked
//! by the same invariants as the core's runs, seeded and replayable.
//!
//! After every step of the executor: no two holders believe they hold one key at one instant;
//! each acquisition's fencing token is above every one seen before on its key; the fenced
//! resource never sees two holders write under one token. At the end: every worker finished its
//! rounds, and every background task the driver spawned has ended (hand-offs are bounded; a
//! store call that never answers holds up no later command); and when the workers finish after
//! the faults have stopped, no lock is left held a few round trips later — every guard dropped
//! and every acquire or release given up mid-call was finished in the background.

mod runtime;
mod store;
mod worker;

use std::sync::{Arc, Mutex, PoisonError};

use tenure::Runtime;

use crate::check::Coverage;
use crate::profile::ms;
use crate::rand::Stream;
use crate::sim::{Failure, Outcome};
use runtime::{SimRuntime, Step};
use store::{Network, Store};
use worker::{Plan, World};

/// How long the workers may take (virtual): far beyond what their rounds need.
const WORKERS_LIMIT: u64 = ms(600_000);
/// How long background tasks may outlive the workers: the driver's hand-off bound and then some.
const BACKGROUND_LIMIT: u64 = ms(90_000);

/// Runs one seed of the driver's simulation.
pub(crate) fn run_seed(seed: u64, print: bool) -> Result<Outcome, Failure> {
    let rt = SimRuntime::new(seed);
    let mut draw = Stream::new(seed, "driver-workload");
    let plan = Plan::draw(&mut draw);
    let network = Network::draw(&mut Stream::new(seed, "driver-faults"), plan.lease, plan.backend_timeout);
    let store = Store::new(seed, network);
    let world = Arc::new(Mutex::new(World::new(print)));
    for w in 0..plan.workers {
        worker::spawn(&rt, &store, &world, &plan, w, draw.child());
    }
    rt.spawn(worker::all_let_go(rt.clone(), store.clone(), world.clone(), plan.clone()));
    let result = run(&rt, &world, &plan);
    rt.shut_down();
    let world = world.lock().unwrap_or_else(PoisonError::into_inner);
    result.map(|events| Outcome { trace: world.trace(), coverage: world.coverage, events })
}

fn run(rt: &SimRuntime, world: &Arc<Mutex<World>>, plan: &Plan) -> Result<u64, Failure> {
    let mut events = 0;
    let mut done_at = None;
    loop {
        let limit = done_at.map_or(WORKERS_LIMIT, |at| at + BACKGROUND_LIMIT);
        let step = rt.step(limit);
        events += 1;
        let now = rt.nanos();
        world.lock().unwrap_or_else(PoisonError::into_inner).check(now).map_err(|what| Failure { at: now, what })?;
        if done_at.is_none() && world.lock().unwrap_or_else(PoisonError::into_inner).finished == plan.workers {
            done_at = Some(now);
        }
        if let Step::Idle = step {
            break;
        }
    }
    let now = rt.nanos();
    let world = world.lock().unwrap_or_else(PoisonError::into_inner);
    if world.finished < plan.workers {
        return Err(Failure {
            at: now,
            what: format!("{} of {} workers never finished their rounds", plan.workers - world.finished, plan.workers),
        });
    }
    let left = rt.tasks_left();
    if left > 0 {
        return Err(Failure { at: now, what: format!("{left} tasks the driver left never ended") });
    }
    Ok(events)
}

/// The coverage counters a batch of driver runs must have made non-zero.
pub(crate) fn required(coverage: &Coverage) -> Vec<(&'static str, u64)> {
    vec![
        ("contention", coverage.contention),
        ("commands abandoned mid-call", coverage.abandoned),
        ("leases kept alive", coverage.kept),
        ("locks checked free once every holder let go", coverage.let_go),
    ]
}
