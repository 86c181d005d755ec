//! Arbitrary starts, stops, wake-ups, reconfigurations, network steps and forged replies into
//! three `ElectionMachine`s in one election.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use tenure_core::{ElectionMachine, KeyKind, LeaderElectionConfig, Metadata, SplitMix64, Timestamp, Token, WorkerId};
use tenure_fuzz::{Harness, Input, key, millis};

#[derive(Arbitrary, Debug)]
struct Timings {
    lease: u16,
    renew_deadline: u16,
    retry: u16,
    timeout: u16,
    error_interval: u16,
    jitter: u8,
}

impl Timings {
    fn config(&self, worker: &WorkerId, rng: &mut SplitMix64) -> Option<LeaderElectionConfig> {
        LeaderElectionConfig::builder()
            .worker(worker.clone())
            .lease_duration(millis(self.lease))
            .renew_deadline(millis(self.renew_deadline))
            .retry_interval(millis(self.retry))
            .backend_timeout(millis(self.timeout))
            .error_interval(millis(self.error_interval))
            .retry_jitter(f64::from(self.jitter) / 256.0)
            .build(rng)
            .ok()
    }
}

#[derive(Arbitrary, Debug)]
enum Command {
    Start,
    Stop,
    Wake,
    Reconfigure(Timings),
}

fuzz_target!(|input: Input<Timings, Command>| {
    let mut rng = SplitMix64::new(input.seed);
    let workers: Vec<_> =
        (0..tenure_fuzz::MACHINES).map(|i| WorkerId::new(&format!("worker-{i}")).expect("a valid worker")).collect();
    let mut machines = Vec::new();
    for worker in &workers {
        let Some(config) = input.timings.config(worker, &mut rng) else { return };
        let now = Timestamp::from_nanos(1_000_000_000);
        let token = Token::leader(worker);
        machines.push(ElectionMachine::new(key(KeyKind::Leader), token, config, Metadata::default(), now, &mut rng));
    }
    let mut h = Harness::new(machines, workers.iter().map(Token::leader).collect());
    let command = |election: &mut ElectionMachine, now, m: usize, command: &Command| match command {
        Command::Start => drop(election.start(now)),
        Command::Stop => election.stop(now),
        Command::Wake => election.wake(now),
        Command::Reconfigure(timings) => {
            if let Some(config) = timings.config(&workers[m], &mut rng) {
                election.reconfigure(config).expect("the same worker reconfigures");
            }
        }
    };
    h.run(&input.steps, command, |h| {
        let leaders: Vec<_> = h.machines.iter().filter(|e| e.is_leader(h.now)).collect();
        assert!(leaders.len() <= 1, "{} workers believe they lead", leaders.len());
        for election in leaders {
            let record = h.store.leader_get(election.key(), h.now);
            assert_eq!(
                record.map(|r| r.holder).as_deref(),
                Some(election.token().as_str()),
                "a leader the store does not name"
            );
        }
    });
});
