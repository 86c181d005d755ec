//! Configuration through the builders (spec §8.4, §8.5, §8.6 config tests).

use std::sync::Arc;
use std::time::Duration;

use tenure::{EnvVars, LeaderElection, Lock, LockConfig, MemoryBackend, Runtime, TaskLock, WorkerId};

use crate::support::ms;

fn vars(pairs: &[(&str, &str)]) -> EnvVars {
    pairs.iter().copied().collect()
}

pub async fn config_builder_environment_and_defaults<R: Runtime>(rt: R) {
    let env = vars(&[
        ("GREL_LOCK_CART_LEASE_DURATION", "7"),
        ("GREL_LOCK_RETRY_INTERVAL", "0.5"),
        ("GREL_LOCK_PAYMENTS_EU_LEASE_DURATION", "PT0.5S"),
        ("GREL_TASKLOCK_CLEANUP_MIN_HOLD_DURATION", "2"),
        ("GREL_LEADERELECTION_CRON_LEASE_DURATION", "20"),
        ("MYAPP_LOCK_CART_LEASE_DURATION", "3"),
    ]);
    let build = |name: &str| Lock::builder(name, rt.clone()).backend(MemoryBackend::new()).env_vars(env.clone());
    let cart = build("cart").build().unwrap().config();
    assert_eq!((cart.lease_duration(), cart.retry_interval()), (Duration::from_secs(7), ms(500)));
    assert_eq!(build("payments-eu").build().unwrap().config().lease_duration(), ms(500));
    assert_eq!(
        build("cart").lease_duration(ms(40)).build().unwrap().config().lease_duration(),
        ms(40),
        "set beats env"
    );
    assert_eq!(
        build("cart").env_prefix("MYAPP_LOCK_CART_").build().unwrap().config().lease_duration(),
        Duration::from_secs(3)
    );
    let off = build("cart").env_load(false).build().unwrap().config();
    assert_eq!(
        (off.lease_duration(), off.retry_interval(), off.retry_jitter()),
        (Duration::from_secs(60), ms(100), 0.1)
    );
    assert_eq!(off.worker().as_str().len(), 16, "a generated worker");
    let task =
        TaskLock::builder("cleanup", rt.clone()).backend(MemoryBackend::new()).env_vars(env.clone()).build().unwrap();
    assert_eq!(task.config().min_hold_duration(), Duration::from_secs(2));
    let election = LeaderElection::builder("cron", rt).backend(MemoryBackend::new()).env_vars(env).build().unwrap();
    assert_eq!(election.config().lease_duration(), Duration::from_secs(20));
}

pub async fn config_invalid_names_and_settings_are_refused<R: Runtime>(rt: R) {
    for bad in ["has space", "-x", ""] {
        let err = Lock::builder(bad, rt.clone()).backend(MemoryBackend::new()).env_load(false).build().unwrap_err();
        assert!(err.is_settings() && err.to_string().contains("Invalid lock name"), "{err}");
    }
    let err = Lock::builder("cart", rt.clone())
        .backend(MemoryBackend::new())
        .retry_interval(Duration::from_micros(100))
        .env_load(false)
        .build();
    assert!(err.unwrap_err().to_string().contains("retry_interval must be >= 0.001"));
    let err = TaskLock::builder("job", rt.clone())
        .backend(MemoryBackend::new())
        .min_hold_duration(ms(20))
        .lease_duration(ms(10))
        .env_load(false)
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("min_hold_duration must be less than or equal to lease_duration"));
    let err = LeaderElection::builder("svc", rt.clone())
        .backend(MemoryBackend::new())
        .renew_deadline(Duration::from_secs(20))
        .env_load(false)
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("Renew deadline must be shorter than lease duration"));
    let env = vars(&[("GREL_LOCK_CART_LEASE_DURATION", "soon")]);
    let err = Lock::builder("cart", rt).backend(MemoryBackend::new()).env_vars(env).build().unwrap_err();
    assert!(err.to_string().contains("GREL_LOCK_CART_LEASE_DURATION") && !err.to_string().contains("soon"), "{err}");
}

pub async fn config_from_config_reads_no_environment<R: Runtime>(rt: R) {
    let config = LockConfig::builder()
        .worker(WorkerId::new("w1").unwrap())
        .lease_duration(ms(250))
        .build(&mut tenure::core::SplitMix64::new(3))
        .unwrap();
    let lock = Lock::from_config("cart", config.clone(), Arc::new(MemoryBackend::new()), rt.clone()).unwrap();
    assert_eq!(lock.config(), config);
    let guard = lock.acquire().await.unwrap();
    assert!(guard.handle().token.as_str().starts_with("w1:task:"));
    guard.release().await.unwrap();
    assert!(Lock::from_config("bad name", config, Arc::new(MemoryBackend::new()), rt).is_err());
}
