//! Configuration from arbitrary `GREL_*` environments, names, prefixes and values: never a
//! panic; what builds obeys every rule; an error never echoes a value it rejected.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use tenure_core::config::text::{parse_duration, parse_float};
use tenure_core::{EnvOptions, EnvVars, LeaderElectionConfig, LockConfig, Name, SplitMix64, TaskLockConfig, Token};

/// A value carries this marker, which must never appear in an error message. Names (of variables,
/// of the lock, the prefix) may be echoed, so they are kept free of it.
const SECRET: &str = "zq7SECRET";

/// `text` without the marker (removed until none is left: removing one can join another).
fn unmarked(text: &str) -> String {
    let mut text = text.to_owned();
    while text.contains(SECRET) {
        text = text.replace(SECRET, "");
    }
    text
}

#[derive(Arbitrary, Debug)]
struct Var {
    kind: u8,
    name_segment: Option<String>,
    field: u8,
    raw_name: Option<String>,
    value: String,
    mark: bool,
}

const KINDS: [&str; 3] = ["LOCK", "TASKLOCK", "LEADERELECTION"];
const FIELDS: [&str; 9] = [
    "LEASE_DURATION",
    "RETRY_INTERVAL",
    "RETRY_JITTER",
    "BACKEND_TIMEOUT",
    "MIN_HOLD_DURATION",
    "RENEW_DEADLINE",
    "ERROR_INTERVAL",
    "WORKER",
    "ENV_LOAD",
];

#[derive(Arbitrary, Debug)]
struct Input {
    name: String,
    vars: Vec<Var>,
    env_prefix: Option<String>,
    env_load: Option<bool>,
    seed: u64,
}

fn no_echo(result: Result<(), tenure_core::Error>) {
    if let Err(error) = result {
        assert!(!error.to_string().contains(SECRET), "an error echoes the value: {error}");
    }
}

fuzz_target!(|input: Input| {
    let mut env = EnvVars::new();
    for var in input.vars.iter().take(32) {
        let name = match &var.raw_name {
            Some(raw) => unmarked(raw),
            None => {
                let kind = KINDS[usize::from(var.kind) % KINDS.len()];
                let field = FIELDS[usize::from(var.field) % FIELDS.len()];
                match var.name_segment.as_deref().map(unmarked) {
                    Some(segment) => format!("GREL_{kind}_{segment}_{field}"),
                    None => format!("GREL_{kind}_{field}"),
                }
            }
        };
        let value = if var.mark { format!("{}{SECRET}", var.value) } else { var.value.clone() };
        no_echo(parse_duration(&name, &value).map(drop));
        no_echo(parse_float(&name, &value).map(drop));
        env.set(name, value);
    }
    let name = unmarked(&input.name);
    let _ = Name::new(&name);
    let _ = Token::new(&name);
    let options = EnvOptions { env_prefix: input.env_prefix.as_deref().map(unmarked), env_load: input.env_load };
    let mut rng = SplitMix64::new(input.seed);
    match LockConfig::builder().resolve(&name, &env, &options, &mut rng) {
        Ok(resolved) => {
            let c = resolved.config;
            assert!(!c.lease_duration().is_zero() && c.retry_interval() >= tenure_core::config::MIN_RETRY_INTERVAL);
            assert!((0.0..1.0).contains(&c.retry_jitter()));
        }
        Err(e) => no_echo(Err(e)),
    }
    match TaskLockConfig::builder().resolve(&name, &env, &options, &mut rng) {
        Ok(resolved) => assert!(resolved.config.min_hold_duration() <= resolved.config.lease_duration()),
        Err(e) => no_echo(Err(e)),
    }
    match LeaderElectionConfig::builder().resolve(&name, &env, &options, &mut rng) {
        Ok(resolved) => {
            let c = resolved.config;
            assert!(c.renew_deadline() < c.lease_duration());
            assert!(c.retry_interval() < c.renew_deadline() && c.backend_timeout() < c.renew_deadline());
        }
        Err(e) => no_echo(Err(e)),
    }
});
