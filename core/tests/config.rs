//! Configuration defaults, validation and environment resolution: spec §2 as amended by 0.44,
//! and the checklists of spec §8.4, §8.5 and §8.6.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use tenure_core::config::ensure_same_worker;
use tenure_core::{
    EnvOptions, EnvVars, EnvWarning, Error, LeaderElectionConfig, LockConfig, SplitMix64, TaskLockConfig, WorkerId,
};

fn rng() -> SplitMix64 {
    SplitMix64::new(5)
}

fn env(pairs: &[(&str, &str)]) -> EnvVars {
    pairs.iter().copied().collect()
}

fn message(result: Result<impl std::fmt::Debug, Error>) -> String {
    let err = result.unwrap_err();
    assert!(err.is_settings(), "{err:?}");
    err.to_string()
}

const S: fn(u64) -> Duration = Duration::from_secs;
const MS: fn(u64) -> Duration = Duration::from_millis;

#[test]
fn lock_defaults_are_60s_100ms_10pct_and_a_generated_worker() {
    let c = LockConfig::builder().build(&mut rng()).unwrap();
    assert_eq!((c.lease_duration(), c.retry_interval(), c.retry_jitter()), (S(60), MS(100), 0.1));
    assert_eq!(c.backend_timeout(), S(5));
    assert_eq!(c.worker().as_str().len(), 16);
    let other = LockConfig::builder().build(&mut rng()).unwrap();
    let third = LockConfig::builder().build(&mut SplitMix64::new(6)).unwrap();
    assert_eq!(c.worker(), other.worker(), "the same injected generator gives the same id");
    assert_ne!(c.worker(), third.worker());
    let explicit = LockConfig::builder().worker(WorkerId::new("w1").unwrap()).build(&mut rng()).unwrap();
    assert_eq!(explicit.worker().as_str(), "w1");
}

#[test]
fn lock_validation_names_the_field() {
    let b = LockConfig::builder;
    assert!(message(b().lease_duration(Duration::ZERO).build(&mut rng())).contains("lease_duration"));
    assert!(
        message(b().retry_interval(Duration::from_micros(100)).build(&mut rng())).contains("retry_interval must be")
    );
    assert!(b().retry_interval(MS(1)).build(&mut rng()).is_ok());
    for j in [0.0, 0.99] {
        assert!(b().retry_jitter(j).build(&mut rng()).is_ok(), "{j}");
    }
    for j in [1.0, 1.5, -0.1, f64::NAN, f64::INFINITY] {
        assert!(message(b().retry_jitter(j).build(&mut rng())).contains("retry_jitter must be"), "{j}");
    }
    assert!(message(b().backend_timeout(Duration::ZERO).build(&mut rng())).contains("backend_timeout"));
    assert!(message(b().lease_duration(S(3_155_760_001)).build(&mut rng())).contains("at most 100 years"));
}

#[test]
fn task_lock_min_hold_may_equal_but_not_exceed_the_lease() {
    let c = TaskLockConfig::builder().build(&mut rng()).unwrap();
    assert_eq!((c.min_hold_duration(), c.lease_duration()), (S(1), S(60)));
    assert!(TaskLockConfig::builder().min_hold_duration(S(5)).lease_duration(S(5)).build(&mut rng()).is_ok());
    let m = message(TaskLockConfig::builder().min_hold_duration(S(6)).lease_duration(S(5)).build(&mut rng()));
    assert!(m.contains("min_hold_duration must be less than or equal to lease_duration"), "{m}");
    assert!(
        message(TaskLockConfig::builder().min_hold_duration(Duration::ZERO).build(&mut rng())).contains("min_hold")
    );
}

#[test]
fn election_defaults_and_ordering_rules_in_grelmicro_order() {
    let c = LeaderElectionConfig::builder().build(&mut rng()).unwrap();
    assert_eq!(
        (c.lease_duration(), c.renew_deadline(), c.retry_interval(), c.backend_timeout(), c.error_interval()),
        (S(15), S(10), S(2), S(5), S(30))
    );
    assert_eq!(c.retry_jitter(), 0.1);
    let b = LeaderElectionConfig::builder;
    let m = message(b().renew_deadline(S(15)).build(&mut rng()));
    assert!(m.contains("Renew deadline must be shorter than lease duration"), "{m}");
    let m = message(b().retry_interval(S(10)).build(&mut rng()));
    assert!(m.contains("Retry interval must be shorter than renew deadline"), "{m}");
    let m = message(b().backend_timeout(S(10)).build(&mut rng()));
    assert!(m.contains("Backend timeout must be shorter than renew deadline"), "{m}");
    // The first broken rule is the one reported.
    let m = message(b().renew_deadline(S(20)).retry_interval(S(30)).build(&mut rng()));
    assert!(m.contains("Renew deadline"), "{m}");
    assert!(message(b().error_interval(Duration::ZERO).build(&mut rng())).contains("error_interval"));
}

#[test]
fn named_instances_read_their_variables_then_the_kind_wide_ones() {
    let vars = env(&[
        ("GREL_LOCK_CART_LEASE_DURATION", "7"),
        ("GREL_LOCK_RETRY_INTERVAL", "0.5"),
        ("GREL_LOCK_CART_WORKER", "pod-1"),
    ]);
    let r = LockConfig::builder().resolve("cart", &vars, &EnvOptions::default(), &mut rng()).unwrap();
    assert_eq!((r.config.lease_duration(), r.config.retry_interval()), (S(7), MS(500)));
    assert_eq!(r.config.worker().as_str(), "pod-1");
    assert!(r.warnings.is_empty());
}

#[test]
fn the_default_instance_reads_the_bare_kind_prefix() {
    let vars = env(&[("GREL_LOCK_LEASE_DURATION", "PT0.5S")]);
    let r = LockConfig::builder().resolve("default", &vars, &EnvOptions::default(), &mut rng()).unwrap();
    assert_eq!(r.config.lease_duration(), MS(500));
}

#[test]
fn values_set_on_the_builder_beat_the_environment() {
    let vars = env(&[("GREL_LOCK_CART_LEASE_DURATION", "7")]);
    let r = LockConfig::builder().lease_duration(S(3)).resolve("cart", &vars, &EnvOptions::default(), &mut rng());
    assert_eq!(r.unwrap().config.lease_duration(), S(3));
}

#[test]
fn segments_of_punctuated_names() {
    let vars = env(&[("GREL_LOCK_PAYMENTS_EU_LEASE_DURATION", "8"), ("GREL_LOCK_CART_V2_LEASE_DURATION", "9")]);
    let lease = |name| {
        LockConfig::builder().resolve(name, &vars, &EnvOptions::default(), &mut rng()).unwrap().config.lease_duration()
    };
    assert_eq!(lease("payments-eu"), S(8));
    assert_eq!(lease("cart.v2"), S(9));
}

#[test]
fn env_prefix_and_env_load_are_honoured() {
    let vars = env(&[("MYAPP_LOCK_CART_LEASE_DURATION", "4"), ("GREL_LOCK_CART_LEASE_DURATION", "7")]);
    let prefixed = EnvOptions { env_prefix: Some("MYAPP_LOCK_CART_".into()), env_load: None };
    let r = LockConfig::builder().resolve("cart", &vars, &prefixed, &mut rng()).unwrap();
    assert_eq!(r.config.lease_duration(), S(4));
    let off = EnvOptions { env_prefix: None, env_load: Some(false) };
    let r = LockConfig::builder().resolve("cart", &vars, &off, &mut rng()).unwrap();
    assert_eq!(r.config.lease_duration(), S(60));
    assert!(r.warnings.is_empty(), "an explicit env_load=false is silent");
}

#[test]
fn grel_env_load_off_ignores_and_warns_about_each_set_variable() {
    let vars = env(&[("GREL_ENV_LOAD", "0"), ("GREL_TASKLOCK_CLEANUP_LEASE_DURATION", "30")]);
    let r = TaskLockConfig::builder().resolve("cleanup", &vars, &EnvOptions::default(), &mut rng()).unwrap();
    assert_eq!(r.config.lease_duration(), S(60));
    assert_eq!(r.warnings, vec![EnvWarning::EnvLoadOff { variable: "GREL_TASKLOCK_CLEANUP_LEASE_DURATION".into() }]);
    let on = EnvOptions { env_prefix: None, env_load: Some(true) };
    let r = TaskLockConfig::builder().resolve("cleanup", &vars, &on, &mut rng()).unwrap();
    assert_eq!(r.config.lease_duration(), S(30), "env_load=true overrides the gate");
}

#[test]
fn every_election_field_reads_from_its_variable() {
    let vars = env(&[
        ("GREL_LEADERELECTION_CRON_LEASE_DURATION", "20"),
        ("GREL_LEADERELECTION_CRON_RENEW_DEADLINE", "PT12S"),
        ("GREL_LEADERELECTION_CRON_RETRY_INTERVAL", "1.5"),
        ("GREL_LEADERELECTION_CRON_BACKEND_TIMEOUT", "3"),
        ("GREL_LEADERELECTION_CRON_ERROR_INTERVAL", "PT1M"),
        ("GREL_LEADERELECTION_CRON_RETRY_JITTER", "0.2"),
    ]);
    let c = LeaderElectionConfig::builder().resolve("cron", &vars, &EnvOptions::default(), &mut rng()).unwrap().config;
    assert_eq!(
        (c.lease_duration(), c.renew_deadline(), c.retry_interval(), c.backend_timeout(), c.error_interval()),
        (S(20), S(12), MS(1500), S(3), S(60))
    );
    assert_eq!(c.retry_jitter(), 0.2);
    let vars = env(&[("GREL_TASKLOCK_CLEANUP_MIN_HOLD_DURATION", "2"), ("GREL_TASKLOCK_CLEANUP_BACKEND_TIMEOUT", "1")]);
    let c = TaskLockConfig::builder().resolve("cleanup", &vars, &EnvOptions::default(), &mut rng()).unwrap().config;
    assert_eq!((c.min_hold_duration(), c.backend_timeout()), (S(2), S(1)));
}

#[test]
fn a_bad_variable_is_an_error_naming_it_without_its_value() {
    let vars = env(&[("GREL_LOCK_CART_LEASE_DURATION", "-5s-secret")]);
    let m = message(LockConfig::builder().resolve("cart", &vars, &EnvOptions::default(), &mut rng()));
    assert!(m.starts_with("GREL_LOCK_CART_LEASE_DURATION") && !m.contains("secret"), "{m}");
    let vars = env(&[("GREL_LEADERELECTION_SVC_RENEW_DEADLINE", "20")]);
    let m = message(LeaderElectionConfig::builder().resolve("svc", &vars, &EnvOptions::default(), &mut rng()));
    assert!(m.contains("Renew deadline must be shorter"), "cross-field rules apply to the environment too: {m}");
}

#[test]
fn names_without_a_segment_need_env_prefix_only_when_reading() {
    let m = message(LockConfig::builder().resolve("42abc", &EnvVars::new(), &EnvOptions::default(), &mut rng()));
    assert!(m.contains("starts with a digit") && m.contains("env_prefix"), "{m}");
    let off = EnvOptions { env_prefix: None, env_load: Some(false) };
    assert!(LockConfig::builder().resolve("42abc", &EnvVars::new(), &off, &mut rng()).is_ok());
    let prefixed = EnvOptions { env_prefix: Some("JOB42_".into()), env_load: None };
    assert!(LockConfig::builder().resolve("42abc", &EnvVars::new(), &prefixed, &mut rng()).is_ok());
}

#[test]
fn the_worker_is_immutable() {
    let a = WorkerId::new("w1").unwrap();
    assert!(ensure_same_worker(&a, &a.clone()).is_ok());
    let m = message(ensure_same_worker(&a, &WorkerId::new("w2").unwrap()).map(|()| 0));
    assert!(m.contains("worker is immutable"), "{m}");
}

#[test]
fn configs_round_trip_through_their_builders() {
    let c = LockConfig::builder().lease_duration(S(9)).build(&mut rng()).unwrap();
    assert_eq!(c.to_builder().build(&mut SplitMix64::new(1)).unwrap(), c);
    let t = TaskLockConfig::builder().min_hold_duration(S(2)).build(&mut rng()).unwrap();
    assert_eq!(t.to_builder().build(&mut SplitMix64::new(1)).unwrap(), t);
    let e = LeaderElectionConfig::builder().retry_jitter(0.0).build(&mut rng()).unwrap();
    assert_eq!(e.to_builder().build(&mut SplitMix64::new(1)).unwrap(), e);
}
