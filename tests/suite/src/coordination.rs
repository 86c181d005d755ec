//! `Coordination` and `Registry` behaviours (spec §8.11).

use std::sync::Arc;

use tenure::{Coordination, Error, LeaderElectionBackend, MemoryBackend, Registry, Runtime};

use crate::support::ms;
use tenure::backend::{LeaderElectionCalls, LockCalls};

pub async fn coordination_binds_each_slot<R: Runtime>(rt: R) {
    let locks = MemoryBackend::new();
    let elections = MemoryBackend::new();
    let c = Coordination::new(rt.clone())
        .source(&locks)
        .with_leader_election_backend(Arc::new(elections.clone()) as Arc<dyn LeaderElectionBackend>);
    let lock = c.lock("cart").unwrap().env_load(false).build().unwrap();
    let guard = lock.acquire().await.unwrap();
    assert!(LockCalls::locked(&locks, "lock:cart").await.unwrap(), "the lock slot came from the source");
    guard.release().await.unwrap();
    let task = c.task_lock("job").unwrap().env_load(false).build().unwrap();
    task.enter().await.unwrap().exit().await.unwrap();
    assert!(locks.lock_names() >= 2);
    let election = c.leader_election("svc").unwrap().env_load(false).retry_interval(ms(5)).build().unwrap();
    election.start();
    election.wait_for_leader().await;
    assert!(LeaderElectionCalls::get(&elections, "leader:svc").await.unwrap().is_some(), "the keyword overrides");
    assert!(LeaderElectionCalls::get(&locks, "leader:svc").await.unwrap().is_none());
    election.stop().await;
    assert!(c.schedule_backend().is_ok());
    assert_eq!(c.name(), "default");
    // A store serving every kind fills the read-write lock slot too, on the same store.
    let from_source = c.read_write_lock("doc").unwrap().env_load(false).build().unwrap();
    let reading = from_source.read().acquire().await.unwrap();
    assert!(reading.holder().lock().locked().await.unwrap(), "a side's locked() asks the read-write lock");
    reading.release().await.unwrap();
    let memory = Coordination::memory(rt.clone());
    let rw = memory.read_write_lock("doc").unwrap().env_load(false).build().unwrap();
    let writing = rw.write().acquire().await.unwrap();
    assert!(rw.read().acquire_nowait().await.unwrap_err().is_would_block());
    writing.release().await.unwrap();
    let backend = memory.read_write_lock_backend().unwrap();
    let rw = Coordination::new(rt).with_read_write_lock_backend(backend).read_write_lock("doc").unwrap();
    assert_eq!(rw.env_load(false).build().unwrap().state().await.unwrap().generation, 1, "one store");
}

pub async fn coordination_missing_slots_and_backends_are_errors<R: Runtime>(rt: R) {
    let empty = Coordination::new(rt.clone());
    assert!(matches!(empty.lock("cart"), Err(Error::BackendMissing { .. })));
    let message = empty.read_write_lock("doc").unwrap_err().to_string();
    assert!(message.contains("no read-write lock backend"), "{message}");
    assert!(matches!(empty.leader_election("svc"), Err(Error::BackendMissing { .. })));
    let message = empty.task_lock("job").unwrap_err().to_string();
    assert!(message.contains("no lock backend"), "{message}");
    let lock_only = Coordination::new(rt.clone()).with_lock_backend(Arc::new(MemoryBackend::new()));
    assert!(lock_only.lock("cart").is_ok());
    assert!(lock_only.leader_election("svc").is_err(), "constructs, errors only on use");
    let err = tenure::Lock::builder("cart", rt).env_load(false).build().unwrap_err();
    assert!(err.is_out_of_context() && err.to_string().contains("Lock('cart')"), "{err}");
}

pub async fn coordination_registry_resolves_default_and_named<R: Runtime>(rt: R) {
    let mut registry = Registry::new();
    assert!(registry.default_component().unwrap_err().is_out_of_context());
    registry.register(Coordination::memory(rt.clone()).named("analytics")).unwrap();
    assert_eq!(registry.default_component().unwrap().name(), "analytics", "the sole component");
    registry.register(Coordination::memory(rt.clone()).named("billing")).unwrap();
    assert!(registry.default_component().is_err(), "ambiguous");
    registry.register(Coordination::memory(rt.clone())).unwrap();
    assert_eq!(registry.default_component().unwrap().name(), "default");
    assert_eq!(registry.get("billing").unwrap().name(), "billing");
    assert!(registry.register(Coordination::memory(rt).named("billing")).unwrap_err().is_settings());
    let err = registry.get("missing").unwrap_err();
    assert!(err.to_string().contains("analytics, billing, default"), "{err}");
}
