//! A virtual-time world for driving machines against the store model in tests.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::time::Duration;

use tenure_core::machine::Machine;
use tenure_core::{
    BackendError, Error, FencingToken, Key, KeyKind, LockConfig, LockEvent, LockMachine, Name, SplitMix64, StoreModel,
    StoreReply, StoreRequest, Timestamp, Token, WallTime,
};

pub fn acquired(events: &[LockEvent]) -> FencingToken {
    match events {
        [LockEvent::Acquired { fence, .. }] => *fence,
        other => panic!("expected Acquired, got {other:?}"),
    }
}

pub fn failed(events: &[LockEvent]) -> &Error {
    match events {
        [LockEvent::Failed(e)] => e,
        other => panic!("expected Failed, got {other:?}"),
    }
}

pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

pub fn key(kind: KeyKind, name: &str) -> Key {
    Key::new(kind, &Name::new(name).unwrap())
}

pub fn token(text: &str) -> Token {
    Token::new(text).unwrap()
}

/// The store model, a clock and a seeded generator.
pub struct World {
    pub store: StoreModel,
    pub now: Timestamp,
    pub rng: SplitMix64,
}

impl World {
    pub fn new() -> Self {
        Self {
            store: StoreModel::new(WallTime::from_unix_micros(1_795_000_000_000_000)),
            now: Timestamp::from_nanos(1_000_000_000),
            rng: SplitMix64::new(42),
        }
    }

    pub fn advance(&mut self, d: Duration) {
        self.now = self.now + d;
    }

    /// Takes the pending request without answering it.
    pub fn take<M: Machine>(&mut self, m: &mut M) -> StoreRequest {
        m.poll_effect().expect("a store request")
    }

    /// Answers `request` from the store at the current time.
    pub fn answer<M: Machine>(&mut self, m: &mut M, request: &StoreRequest) -> Vec<M::Event> {
        let reply = self.store.apply(&request.op, self.now);
        m.handle_reply(self.now, request.id, Ok(reply));
        self.pump(m)
    }

    /// Answers `request` with `reply` (a failure, a forged answer).
    pub fn answer_with<M: Machine>(
        &mut self,
        m: &mut M,
        request: &StoreRequest,
        reply: Result<StoreReply, BackendError>,
    ) -> Vec<M::Event> {
        m.handle_reply(self.now, request.id, reply);
        self.pump(m)
    }

    /// Runs every request the machine emits against the store until it asks nothing more, and
    /// returns the events.
    pub fn pump<M: Machine>(&mut self, m: &mut M) -> Vec<M::Event> {
        let mut events = Vec::new();
        for _ in 0..64 {
            while let Some(e) = m.poll_event() {
                events.push(e);
            }
            let Some(request) = m.poll_effect() else { break };
            let reply = self.store.apply(&request.op, self.now);
            m.handle_reply(self.now, request.id, Ok(reply));
        }
        events
    }

    /// Moves the clock to the machine's next deadline (if later), fires it and pumps.
    pub fn fire<M: Machine>(&mut self, m: &mut M) -> Vec<M::Event> {
        let at = m.poll_timeout().expect("a deadline");
        self.now = self.now.max(at);
        m.handle_timeout(self.now);
        self.pump(m)
    }

    pub fn lock_config(&mut self, lease: Duration) -> LockConfig {
        LockConfig::builder()
            .lease_duration(lease)
            .retry_interval(ms(10))
            .retry_jitter(0.0)
            .build(&mut self.rng)
            .unwrap()
    }

    pub fn lock(&mut self, name: &str, holder: &str, config: &LockConfig) -> LockMachine {
        LockMachine::new(key(KeyKind::Lock, name), token(holder), config, &mut self.rng)
    }
}
