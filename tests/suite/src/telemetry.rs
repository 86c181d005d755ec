//! The driver's metrics and spans (`tenure::telemetry`), seen through a sink that records them:
//! what a user's exporter would receive for each kind of outcome.
//!
//! The sink is the process's one (installed once, never removed): each test reads only what
//! carries its own lock name, and store calls (which carry no name) as counts that only grow.

use std::sync::{Arc, Mutex, OnceLock};

use tenure::telemetry::{self, Measurement, SpanRecord, Telemetry};
use tenure::{KeepAliveEnd, LeaderElection, MemoryBackend, Runtime, WorkerId};

use crate::support::{Faulty, eventually, lock, ms, sleep, task_lock};

/// One measurement: its instrument, its value and its attributes.
type Recorded = (&'static str, f64, Vec<(String, String)>);

/// What the sink received: measurements and spans about names starting with `telemetry-`, and
/// every store call.
#[derive(Debug, Default)]
pub struct Recorder {
    measurements: Mutex<Vec<Recorded>>,
    spans: Mutex<Vec<SpanRecord>>,
}

impl Telemetry for Recorder {
    fn record(&self, m: &Measurement<'_>) {
        let attributes: Vec<(String, String)> =
            m.attributes.iter().map(|(k, v)| ((*k).to_owned(), v.to_string())).collect();
        let ours = attributes.iter().any(|(key, value)| key == "name" && value.starts_with("telemetry-"));
        if ours || m.instrument.name == telemetry::STORE_CALL_DURATION.name {
            self.measurements.lock().unwrap().push((m.instrument.name, m.value, attributes));
        }
    }

    fn span(&self, span: &SpanRecord) {
        let ours =
            span.attributes.iter().any(|(key, value)| *key == "name" && value.to_string().starts_with("telemetry-"));
        if ours {
            self.spans.lock().unwrap().push(span.clone());
        }
    }
}

impl Recorder {
    /// The values recorded on `instrument` for `name` with every attribute of `with`.
    pub fn values(&self, instrument: &str, name: &str, with: &[(&str, &str)]) -> Vec<f64> {
        let has = |attributes: &[(String, String)], key: &str, value: &str| {
            attributes.iter().any(|(k, v)| k == key && v == value)
        };
        let measurements = self.measurements.lock().unwrap();
        let matching = measurements.iter().filter(|(i, _, attributes)| {
            *i == instrument
                && (name.is_empty() || has(attributes, "name", name))
                && with.iter().all(|(k, v)| has(attributes, k, v))
        });
        matching.map(|(_, value, _)| *value).collect()
    }

    /// How many measurements [`Recorder::values`] finds.
    pub fn count(&self, instrument: &str, name: &str, with: &[(&str, &str)]) -> usize {
        self.values(instrument, name, with).len()
    }

    /// The spans about `name`, in the order they ended.
    pub fn spans(&self, name: &str) -> Vec<SpanRecord> {
        let spans = self.spans.lock().unwrap();
        let about = |span: &&SpanRecord| span.attributes.iter().any(|(k, v)| *k == "name" && v.to_string() == name);
        spans.iter().filter(about).cloned().collect()
    }
}

/// The process's recording sink, installed at the first call.
pub fn recorder() -> Arc<Recorder> {
    static RECORDER: OnceLock<Arc<Recorder>> = OnceLock::new();
    RECORDER
        .get_or_init(|| {
            let recorder = Arc::new(Recorder::default());
            telemetry::install(recorder.clone());
            recorder
        })
        .clone()
}

/// A span's attribute `key`, as text.
fn attribute(span: &SpanRecord, key: &str) -> Option<String> {
    span.attributes.iter().find(|(k, _)| *k == key).map(|(_, v)| v.to_string())
}

/// What an observable instrument reports now for `name` (`None`: not reported).
pub fn gauge(instrument: &telemetry::Instrument, name: &str) -> Option<f64> {
    let mut found = None;
    telemetry::observe(instrument, |value, attributes| {
        if attributes.iter().any(|(k, v)| *k == "name" && v.to_string() == name) {
            found = Some(value);
        }
    });
    found
}

const ACQUIRE: &str = "tenure.lock.acquire.duration";
const HOLD: &str = "tenure.lock.hold.duration";

pub async fn telemetry_a_lock_cycle_is_measured_and_its_spans_carry_no_token<R: Runtime>(rt: R) {
    let recorder = recorder();
    let calls = || recorder.count(telemetry::STORE_CALL_DURATION.name, "", &[("operation", "lock_acquire")]);
    let calls_before = calls();
    let name = "telemetry-cycle";
    let lock = lock(&rt, MemoryBackend::new(), name, ms(500));
    let guard = lock.acquire().await.unwrap();
    let (fence, token) = (guard.fencing_token(), guard.handle().token.as_str().to_owned());
    assert_eq!(gauge(&telemetry::HOLDERS, name), Some(1.0), "the lease is counted among the holders");
    guard.release().await.unwrap();

    assert_eq!(recorder.count(ACQUIRE, name, &[("outcome", "acquired"), ("primitive", "lock")]), 1);
    assert_eq!(gauge(&telemetry::HOLDERS, name), Some(0.0), "and leaves them once released");
    assert_eq!(recorder.count(HOLD, name, &[("cause", "released")]), 1);
    assert_eq!(gauge(&telemetry::FENCE, name), Some(fence.get() as f64));
    assert_eq!(recorder.count("tenure.lock.losses", name, &[]), 0);
    assert!(calls() > calls_before, "the store calls are counted by operation");

    let spans = recorder.spans(name);
    let names: Vec<&str> = spans.iter().map(|span| span.name).collect();
    assert_eq!(names, ["tenure.acquire", "tenure.hold", "tenure.release"]);
    for span in &spans {
        assert_eq!(attribute(span, "fence"), Some(fence.get().to_string()), "{} carries the fence", span.name);
        assert!(span.start <= span.end && span.error.is_none());
        let text = format!("{span:?}");
        assert!(!text.contains(&token), "a span carries no ownership token: {text}");
    }
    assert_eq!(attribute(&spans[0], "outcome").as_deref(), Some("acquired"));
    assert_eq!(attribute(&spans[1], "cause").as_deref(), Some("released"));
}

pub async fn telemetry_a_contended_acquire_counts_its_wait_timeout_and_refusal<R: Runtime>(rt: R) {
    let recorder = recorder();
    let name = "telemetry-contended";
    let backend = MemoryBackend::new();
    let holder = lock(&rt, backend.clone(), name, ms(2_000));
    let other = lock(&rt, backend, name, ms(2_000));
    let guard = holder.acquire().await.unwrap();
    let waiting = other.acquire_timeout(ms(300));
    let counted = async {
        eventually(&rt, "the waiter counted", || gauge(&telemetry::WAITERS, name) == Some(1.0)).await;
    };
    let (refused, ()) = futures_lite::future::zip(waiting, counted).await;
    assert!(refused.unwrap_err().is_timeout());
    assert!(other.acquire_nowait().await.unwrap_err().is_would_block());
    guard.release().await.unwrap();

    for outcome in ["acquired", "timed_out", "would_block"] {
        assert_eq!(recorder.count(ACQUIRE, name, &[("outcome", outcome)]), 1, "{outcome}");
    }
    assert_eq!(gauge(&telemetry::WAITERS, name), Some(0.0), "the waiter is gone once it gave up");
    let waited = recorder.values("tenure.lock.wait.duration", name, &[("outcome", "timed_out")]);
    assert_eq!(waited.len(), 1);
    assert!(waited[0] > 0.0 && waited[0] < 60.0, "waited {waited:?} s");
    let failed = recorder.spans(name).into_iter().find(|span| span.name == "tenure.acquire" && span.error.is_some());
    assert!(failed.is_some_and(|span| attribute(&span, "outcome").as_deref() == Some("timed_out")));
}

pub async fn telemetry_a_dropped_acquire_is_cancelled_and_leaves_no_waiter<R: Runtime>(rt: R) {
    let recorder = recorder();
    let name = "telemetry-cancelled";
    let backend = MemoryBackend::new();
    let holder = lock(&rt, backend.clone(), name, ms(2_000));
    let guard = holder.acquire().await.unwrap();
    let other = lock(&rt, backend, name, ms(2_000));
    let waiting = other.acquire();
    let dropped = rt.timeout_at(rt.now() + ms(50), waiting).await;
    assert!(dropped.is_none(), "the waiter was still waiting when dropped");
    assert_eq!(recorder.count(ACQUIRE, name, &[("outcome", "cancelled")]), 1);
    assert_eq!(gauge(&telemetry::WAITERS, name), Some(0.0));
    guard.release().await.unwrap();
}

pub async fn telemetry_a_lease_lost_while_renewals_fail_warns_then_counts_the_store_unreachable<R: Runtime>(rt: R) {
    let recorder = recorder();
    let name = "telemetry-unreachable";
    let store = Faulty::default();
    let lock = lock(&rt, store.clone(), name, ms(150));
    let kept = lock.acquire().await.unwrap().keep_alive(std::time::Duration::MAX);
    store.fail();
    kept.lost().await;
    eventually(&rt, "the keep-alive says why", || kept.ended().is_some()).await;
    assert_eq!(kept.ended(), Some(KeepAliveEnd::Unreachable));
    // Counted when the keep-alive saw it, before anyone released.
    assert_eq!(recorder.count("tenure.lock.losses", name, &[("cause", "unreachable")]), 1);
    assert_eq!(gauge(&telemetry::HOLDERS, name), Some(0.0));
    assert!(recorder.count("tenure.lock.renewals", name, &[("outcome", "error")]) >= 1);
    assert_eq!(recorder.count("tenure.lock.validity.warnings", name, &[]), 1, "one warning before the loss");
    store.heal();
    let _ = kept.stop().release().await;
    assert_eq!(gauge(&telemetry::HOLDERS, name), Some(0.0), "a release after the loss counts nothing twice");
    assert_eq!(recorder.count("tenure.lock.losses", name, &[]), 1);

    let hold = recorder.spans(name).into_iter().find(|span| span.name == "tenure.hold").unwrap();
    let events: Vec<&str> = hold.events.iter().map(|event| event.name).collect();
    assert_eq!(events.first(), Some(&"tenure.renewal_failed"), "{events:?}");
    assert!(events.contains(&"tenure.validity_low"), "{events:?}");
    assert_eq!(events.last(), Some(&"tenure.lost"), "{events:?}");
    assert!(hold.error.as_deref().is_some_and(|error| error.contains("unreachable")));
}

pub async fn telemetry_a_lease_taken_by_another_holder_is_a_loss_by_taking<R: Runtime>(rt: R) {
    let recorder = recorder();
    let name = "telemetry-taken";
    let backend = MemoryBackend::new();
    let first = lock(&rt, backend.clone(), name, ms(60));
    let second = lock(&rt, backend, name, ms(2_000));
    let mut guard = first.acquire().await.unwrap();
    sleep(&rt, ms(80)).await;
    let taker = second.acquire().await.unwrap();
    let refused = guard.extend().await.unwrap_err();
    assert!(refused.is_not_owned(), "{refused:?}");
    assert_eq!(recorder.count("tenure.lock.renewals", name, &[("outcome", "taken")]), 1);
    assert_eq!(recorder.count("tenure.lock.losses", name, &[]), 1);
    let lost = recorder.values("tenure.lock.losses", name, &[("cause", "expired")]).len()
        + recorder.values("tenure.lock.losses", name, &[("cause", "taken")]).len();
    assert_eq!(lost, 1, "lost by expiry or taking, as the machine saw it first");
    assert_eq!(gauge(&telemetry::HOLDERS, name), Some(1.0), "the taker holds");
    taker.release().await.unwrap();
    assert_eq!(gauge(&telemetry::HOLDERS, name), Some(0.0));
}

pub async fn telemetry_a_task_lock_run_is_measured_as_one<R: Runtime>(rt: R) {
    let recorder = recorder();
    let name = "telemetry-task";
    let task = task_lock(&rt, MemoryBackend::new(), name, ms(1), ms(500));
    assert_eq!(task.run(async { 7 }).await.unwrap(), Some(7));
    assert_eq!(recorder.count(ACQUIRE, name, &[("outcome", "acquired"), ("primitive", "task_lock")]), 1);
    assert_eq!(gauge(&telemetry::HOLDERS, name), Some(0.0));
    assert_eq!(recorder.count(HOLD, name, &[("cause", "released")]), 1);
}

pub async fn telemetry_an_election_reports_its_leader_and_each_change<R: Runtime>(rt: R) {
    let recorder = recorder();
    let name = "telemetry-election";
    let election = LeaderElection::builder(name, rt.clone())
        .backend(MemoryBackend::new())
        .worker(WorkerId::new("w1").unwrap())
        .lease_duration(ms(200))
        .renew_deadline(ms(140))
        .retry_interval(ms(10))
        .backend_timeout(ms(50))
        .env_load(false)
        .build()
        .unwrap();
    assert!(election.start());
    election.wait_for_leader().await;
    eventually(&rt, "the gauge says so", || gauge(&telemetry::LEADER, name) == Some(1.0)).await;
    assert!(election.health(ms(1_000)).is_healthy());
    election.stop().await;
    assert_eq!(gauge(&telemetry::LEADER, name), Some(0.0), "a candidate that does not lead reports 0");
    assert_eq!(recorder.count("tenure.election.changes", name, &[("outcome", "elected")]), 1);
    assert_eq!(recorder.count("tenure.election.changes", name, &[("outcome", "stopped")]), 1);
}
