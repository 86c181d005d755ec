//! Arbitrary enters, exits, extends, cancels, network steps and forged replies into three
//! `TaskLockMachine`s on one task.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use tenure_core::{KeyKind, SplitMix64, TaskLockConfig, TaskLockMachine, Token};
use tenure_fuzz::{Harness, Input, key, millis, tokens};

#[derive(Arbitrary, Debug)]
struct Timings {
    min_hold: u16,
    lease: u16,
    timeout: u16,
}

impl Timings {
    fn config(&self, rng: &mut SplitMix64) -> Option<TaskLockConfig> {
        TaskLockConfig::builder()
            .min_hold_duration(millis(self.min_hold))
            .lease_duration(millis(self.lease))
            .backend_timeout(millis(self.timeout))
            .build(rng)
            .ok()
    }
}

#[derive(Arbitrary, Debug)]
enum Command {
    Enter(u16),
    Extend,
    Exit,
    Cancel,
    Reconfigure(Timings),
}

fuzz_target!(|input: Input<Timings, Command>| {
    let mut rng = SplitMix64::new(input.seed);
    let Some(config) = input.timings.config(&mut rng) else { return };
    let machines = (0..tenure_fuzz::MACHINES).map(|_| TaskLockMachine::new(key(KeyKind::TaskLock), &config)).collect();
    let mut h = Harness::new(machines, tokens());
    let command = |task: &mut TaskLockMachine, now, m: usize, command: &Command| {
        // Refusals (re-entrant, busy, not owned) are answers, not failures.
        match command {
            Command::Enter(n) => drop(task.enter(now, Token::new(&format!("task-{m}-{n}")).expect("a valid token"))),
            Command::Extend => drop(task.extend(now)),
            Command::Exit => drop(task.exit(now)),
            Command::Cancel => task.cancel(now),
            Command::Reconfigure(timings) => {
                if let Some(c) = timings.config(&mut rng) {
                    task.set_config(&c);
                }
            }
        }
    };
    h.run(&input.steps, command, |h| {
        for task in h.machines.iter().filter(|task| task.is_held(h.now)) {
            let token = task.token().expect("a running task has a token");
            assert!(h.store.lock_owned(task.key(), token, h.now), "a task believes in a lease the store does not keep");
        }
    });
});
