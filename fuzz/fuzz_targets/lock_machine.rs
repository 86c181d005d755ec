//! Arbitrary commands, network steps and forged replies into three `LockMachine`s on one lock, or
//! on the permits of one semaphore (1 or 2 permits, drawn with the timings).
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use std::num::NonZeroU32;

use tenure_core::{Access, KeyKind, LockConfig, LockMachine, SplitMix64, Token};
use tenure_fuzz::{Harness, Input, key, millis, tokens};

#[derive(Arbitrary, Debug)]
struct Timings {
    lease: u16,
    retry: u16,
    timeout: u16,
    jitter: u8,
    /// 0: a lock; otherwise a semaphore of 1 or 2 permits.
    permits: u8,
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
    let permits = NonZeroU32::new(u32::from(input.timings.permits % 3));
    let (kind, access) = match permits {
        None => (KeyKind::Lock, Access::Exclusive),
        Some(n) => (KeyKind::Semaphore, Access::Permit(n)),
    };
    let machines =
        tokens.iter().map(|t| LockMachine::with_access(key(kind), t.clone(), access, &config, &mut rng)).collect();
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
        let believers: Vec<&LockMachine> = h.machines.iter().filter(|lock| lock.is_held(h.now)).collect();
        for lock in &believers {
            let kept = match permits {
                None => h.store.lock_owned(lock.key(), lock.token(), h.now),
                Some(_) => h.store.sem_holders(lock.key(), h.now).iter().any(|(t, _)| t == lock.token()),
            };
            assert!(kept, "a holder believes in a lease the store does not keep");
        }
        let bound = permits.map_or(1, |n| n.get() as usize);
        assert!(believers.len() <= bound, "{} holders believe at once, of {bound}", believers.len());
    });
});
