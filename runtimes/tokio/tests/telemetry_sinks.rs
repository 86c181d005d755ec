//! The telemetry sink's life, each case in a process of its own (nextest): a sink removed while
//! leases are held and acquires wait leaves the gauges to come back; a sink that panics never
//! fails the operation it measures.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tenure::telemetry::{self, Measurement, Telemetry};
use tenure_tokio::{Lock, MemoryBackend, Tokio};

#[derive(Debug, Default)]
struct Counting(AtomicUsize);

impl Telemetry for Counting {
    fn record(&self, _: &Measurement<'_>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

#[derive(Debug)]
struct Panicking;

impl Telemetry for Panicking {
    fn record(&self, _: &Measurement<'_>) {
        panic!("a sink that panics");
    }
}

fn lock(backend: &MemoryBackend, name: &str) -> Lock {
    Lock::builder(name, Tokio::current()).backend(backend.clone()).env_load(false).build().unwrap()
}

/// What the observable `instrument` reports now for `name`.
fn gauge(instrument: &telemetry::Instrument, name: &str) -> Option<f64> {
    let mut found = None;
    telemetry::observe(instrument, |value, attributes| {
        if attributes.iter().any(|(key, value)| *key == "name" && value.to_string() == name) {
            found = Some(value);
        }
    });
    found
}

async fn until(what: &str, condition: impl Fn() -> bool) {
    for _ in 0..5_000 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gauges_come_back_when_the_sink_is_removed_while_a_lease_is_held_and_an_acquire_waits() {
    let sink = Arc::new(Counting::default());
    telemetry::install(sink.clone());
    let (backend, name) = (MemoryBackend::new(), "toggled");
    let guard = lock(&backend, name).acquire().await.unwrap();
    assert_eq!(gauge(&telemetry::HOLDERS, name), Some(1.0));
    let waiter = tokio::spawn({
        let other = lock(&backend, name);
        async move { other.acquire_timeout(Duration::from_secs(10)).await.unwrap().release().await.unwrap() }
    });
    until("the waiter counted", || gauge(&telemetry::WAITERS, name) == Some(1.0)).await;

    telemetry::uninstall();
    let recorded = sink.0.load(Ordering::Relaxed);
    guard.release().await.unwrap();
    waiter.await.unwrap();
    assert_eq!(gauge(&telemetry::HOLDERS, name), Some(0.0), "the lease counted left the holders");
    assert_eq!(gauge(&telemetry::WAITERS, name), Some(0.0), "the waiter counted left the waiters");
    assert_eq!(sink.0.load(Ordering::Relaxed), recorded, "nothing reached the removed sink");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sink_that_panics_never_fails_the_operation_it_measures() {
    telemetry::install(Arc::new(Panicking));
    let backend = MemoryBackend::new();
    let lock = lock(&backend, "panicking");
    for _ in 0..3 {
        let guard = lock.acquire().await.unwrap();
        guard.release().await.unwrap();
    }
    assert_eq!(gauge(&telemetry::HOLDERS, "panicking"), Some(0.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_past_the_limit_are_reported_as_other() {
    telemetry::set_name_limit(2);
    telemetry::install(Arc::new(Counting::default()));
    let backend = MemoryBackend::new();
    let mut guards = Vec::new();
    for name in ["job-1", "job-2", "job-3", "job-4"] {
        guards.push(lock(&backend, name).acquire().await.unwrap());
    }
    let mut names = Vec::new();
    telemetry::observe(&telemetry::HOLDERS, |value, attributes| {
        let name = attributes.iter().find(|(key, _)| *key == "name").map(|(_, v)| v.to_string()).unwrap();
        names.push((name, value));
    });
    names.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(names, [("_other".to_owned(), 2.0), ("job-1".to_owned(), 1.0), ("job-2".to_owned(), 1.0)]);
    for guard in guards {
        guard.release().await.unwrap();
    }
    assert_eq!(gauge(&telemetry::HOLDERS, telemetry::OTHER_NAME), Some(0.0));
}
