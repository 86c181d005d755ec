//! Arbitrary commands, network steps and forged replies into three `LockMachine`s on one lock.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use tenure_core::{KeyKind, LockConfig, LockMachine, SplitMix64, Token};
use tenure_fuzz::{Harness, Input, key, millis, tokens};

#[derive(Arbitrary, Debug)]
struct Timings {
    lease: u16,
    retry: u16,
    timeout: u16,
    jitter: u8,
}

impl Timings {
    fn config(&self, rng: &mut SplitMix64) -> Option<LockConfig> {
        LockConfig::builder()
            .lease_duration(millis(self.lease))
            .retry_interval(millis(self.retry))
            .backend_timeout(millis(self.timeout))
            .retry_jitter(f64::from(self.jitter) / 256.0)
            .build(rng)
            .ok()
    }
}

#[derive(Arbitrary, Debug)]
enum Command {
    Acquire(Option<u16>),
    AcquireNowait,
    Extend,
    Release,
    Cancel,
    Wake,
    Reconfigure(Timings),
    NewToken(u16),
}

fuzz_target!(|input: Input<Timings, Command>| {
    let mut rng = SplitMix64::new(input.seed);
    let Some(config) = input.timings.config(&mut rng) else { return };
    let tokens = tokens();
    let machines = tokens.iter().map(|t| LockMachine::new(key(KeyKind::Lock), t.clone(), &config, &mut rng)).collect();
    let mut h = Harness::new(machines, tokens);
    let command = |lock: &mut LockMachine, now, m: usize, command: &Command| {
        // Refusals (re-entrant, busy, not owned) are answers, not failures.
        match command {
            Command::Acquire(timeout) => drop(lock.acquire(now, timeout.map(millis))),
            Command::AcquireNowait => drop(lock.acquire_nowait(now)),
            Command::Extend => drop(lock.extend(now)),
            Command::Release => drop(lock.release(now)),
            Command::Cancel => lock.cancel(now),
            Command::Wake => lock.wake(now),
            Command::Reconfigure(timings) => {
                if let Some(c) = timings.config(&mut rng) {
                    lock.set_config(&c);
                }
            }
            Command::NewToken(n) => {
                let token = Token::new(&format!("holder-{m}-{n}")).expect("a valid token");
                drop(lock.set_token(token));
            }
        }
    };
    h.run(&input.steps, command, |h| {
        for lock in h.machines.iter().filter(|lock| lock.is_held(h.now)) {
            assert!(
                h.store.lock_owned(lock.key(), lock.token(), h.now),
                "a holder believes in a lease the store does not keep"
            );
        }
    });
});
