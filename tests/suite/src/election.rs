//! `LeaderElection` behaviours (spec §8.6, §8.7, DESIGN §4.2).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tenure::{Error, MemoryBackend, Runtime, WorkerId};

use crate::support::{Faulty, election, eventually, ms, sleep};
use tenure::backend::LeaderElectionCalls;

pub async fn election_single_worker_leads_with_its_record<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let e = election(&rt, backend.clone(), "w1");
    assert!(e.record().is_none(), "no record before the first attempt");
    assert!(e.start());
    e.wait_for_leader().await;
    let record = e.record().unwrap();
    assert_eq!((record.holder.as_str(), record.transitions), ("w1", 0));
    assert_eq!(record.metadata.get("pod"), Some("w1"));
    let stored = LeaderElectionCalls::get(&backend, "leader:svc").await.unwrap().unwrap();
    assert_eq!(stored.holder, "w1", "the record lives under leader:<name>");
    e.stop().await;
}

pub async fn election_changes_tell_every_term_in_order<R: Runtime>(rt: R) {
    use futures_lite::StreamExt as _;
    let e = election(&rt, MemoryBackend::new(), "w1");
    let mut changes = std::pin::pin!(e.changes());
    // Two whole terms before the stream first looks: told as a lead and its end (terms missed
    // in a row run together, never two alike in a row).
    for _ in 0..2 {
        assert!(e.start());
        e.wait_for_leader().await;
        e.stop().await;
    }
    assert_eq!(changes.next().await, Some(true));
    assert_eq!(changes.next().await, Some(false));
    // A term under way is told at its start and its end.
    assert!(e.start());
    assert_eq!(changes.next().await, Some(true));
    e.stop().await;
    assert_eq!(changes.next().await, Some(false));
    // Nothing more without a new term.
    let next = rt.timeout_at(rt.now() + ms(100), changes.next()).await;
    assert!(next.is_none(), "told {next:?} without a term");
}

pub async fn election_confirmation_age_and_freshness<R: Runtime>(rt: R) {
    let e = election(&rt, MemoryBackend::new(), "w1");
    assert!(e.last_confirmation_age().is_none());
    e.start();
    e.wait_for_leader().await;
    assert!(e.last_confirmation_age().is_some());
    assert!(e.is_leader_confirmed_within(Duration::from_secs(1)));
    e.stop().await;
    assert!(e.last_confirmation_age().is_none(), "a loss resets the age");
    assert!(!e.is_leader_confirmed_within(Duration::from_secs(1)));
}

pub async fn election_lifecycle_and_stop_clears_at_once<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let e = election(&rt, backend.clone(), "w1");
    assert!(!e.is_running() && !e.is_leader());
    assert!(e.start());
    assert!(!e.start(), "a second start is a no-op");
    e.wait_for_leader().await;
    assert!(e.is_running());
    let stopping = e.stop();
    assert!(!e.is_leader(), "leadership ends when stop is called");
    stopping.await;
    assert!(!e.is_running());
    assert!(LeaderElectionCalls::get(&backend, "leader:svc").await.unwrap().is_none(), "released");
    e.wait_lose_leader().await; // returns at once
    assert!(e.start(), "it can run again");
    e.wait_for_leader().await;
    e.stop().await;
}

pub async fn election_four_workers_one_leader_and_hand_over<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let workers: Vec<_> = ["w1", "w2", "w3", "w4"].iter().map(|w| election(&rt, backend.clone(), w)).collect();
    for e in &workers {
        e.start();
    }
    let leaders = |ws: &[tenure::LeaderElection<R>]| ws.iter().filter(|e| e.is_leader_confirmed_within(ms(70))).count();
    eventually(&rt, "a leader", || leaders(&workers) == 1).await;
    sleep(&rt, ms(30)).await;
    assert_eq!(leaders(&workers), 1, "exactly one");
    let first = workers.iter().position(|e| e.is_leader()).unwrap();
    let started = rt.now();
    workers[first].stop().await;
    eventually(&rt, "another leader", || workers.iter().enumerate().any(|(i, e)| i != first && e.is_leader())).await;
    assert!(rt.now().saturating_duration_since(started) < ms(1000));
    assert_eq!(leaders(&workers), 1);
    for e in &workers {
        e.stop().await;
    }
    assert_eq!(leaders(&workers), 0, "none after stop");
}

pub async fn election_backend_failure_loses_leadership_after_renew_deadline<R: Runtime>(rt: R) {
    let backend = Faulty::default();
    let e = election(&rt, backend.clone(), "w1");
    e.start();
    e.wait_for_leader().await;
    backend.fail();
    let failed_at = rt.now();
    e.wait_lose_leader().await;
    let after = rt.now().saturating_duration_since(failed_at);
    assert!(after < ms(1000), "lost after {after:?}");
    assert!(!e.is_leader() && e.last_confirmation_age().is_none());
    backend.heal();
    e.wait_for_leader().await;
    e.stop().await;
}

pub async fn election_guard_refuses_followers<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let a = election(&rt, backend.clone(), "w1");
    let b = election(&rt, backend, "w2");
    let err = a.guard().unwrap_err();
    assert!(err.is_would_block() && err.to_string() == "Not leader: svc", "{err}");
    a.start();
    a.wait_for_leader().await;
    b.start();
    let guard = a.guard().unwrap();
    assert!(guard.is_valid());
    assert!(matches!(b.guard(), Err(Error::WouldBlock { .. })));
    a.stop().await;
    guard.lost().await;
    b.stop().await;
}

pub async fn election_lead_returns_result_and_cancels_on_loss<R: Runtime>(rt: R) {
    let e = election(&rt, MemoryBackend::new(), "w1");
    e.start();
    assert_eq!(e.lead(async { 7 }).await, Some(7));
    let cancelled = Arc::new(AtomicUsize::new(0));
    let (flag, rt2, stopper) = (cancelled.clone(), rt.clone(), e.clone());
    rt.spawn(async move {
        sleep(&rt2, ms(20)).await;
        stopper.stop().await;
    });
    let body = async {
        let _mark = Mark(flag);
        sleep(&rt, Duration::from_secs(60)).await;
        1
    };
    assert_eq!(e.lead(body).await, None, "loss cancels the body");
    assert_eq!(cancelled.load(Ordering::SeqCst), 1, "the body was dropped");
}

/// Counts its drops.
struct Mark(Arc<AtomicUsize>);

impl Drop for Mark {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

pub async fn election_lead_repeat_runs_again_after_reelection<R: Runtime>(rt: R) {
    let backend = Faulty::default();
    let e = election(&rt, backend.clone(), "w1");
    e.start();
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let (rt2, faulty) = (rt.clone(), backend.clone());
    let error = e
        .lead_repeat(|| {
            let (counter, rt, faulty) = (counter.clone(), rt2.clone(), faulty.clone());
            async move {
                match counter.fetch_add(1, Ordering::SeqCst) {
                    // First run: the store fails, so leadership is lost mid-body (which is
                    // dropped); it heals 150 ms later and this worker is elected again.
                    0 => {
                        faulty.fail();
                        let (rt3, healer) = (rt.clone(), faulty.clone());
                        rt.spawn(async move {
                            sleep(&rt3, ms(150)).await;
                            healer.heal();
                        });
                        sleep(&rt, Duration::from_secs(60)).await;
                        Ok(())
                    }
                    1 => Ok(()),
                    _ => Err("done"),
                }
            }
        })
        .await;
    assert_eq!(error, "done");
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    e.stop().await;
}

pub async fn election_reconfigure_keeps_the_worker<R: Runtime>(rt: R) {
    let e = election(&rt, MemoryBackend::new(), "w1");
    let other =
        e.config().to_builder().worker(WorkerId::new("w2").unwrap()).build(&mut tenure::core::SplitMix64::new(1));
    let err = e.reconfigure(other.unwrap()).unwrap_err();
    assert!(err.to_string().contains("worker is immutable"), "{err}");
    let slower = e.config().to_builder().error_interval(ms(500)).build(&mut tenure::core::SplitMix64::new(1)).unwrap();
    e.reconfigure(slower).unwrap();
    assert_eq!(e.config().error_interval(), ms(500));
}

pub async fn election_dropping_every_handle_stops_and_releases<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let e = election(&rt, backend.clone(), "w1");
    e.start();
    e.wait_for_leader().await;
    drop(e);
    let successor = election(&rt, backend, "w2");
    successor.start();
    successor.wait_for_leader().await;
    let record = successor.record().unwrap();
    assert_eq!((record.holder.as_str(), record.transitions), ("w2", 0), "released, not taken over");
    successor.stop().await;
}

pub async fn election_start_stop_cycles_leave_nothing_behind<R: Runtime>(rt: R) {
    let backend = MemoryBackend::new();
    let e = election(&rt, backend.clone(), "w1");
    for _ in 0..200 {
        assert!(e.start());
        e.stop().await;
        assert!(!e.is_running() && !e.is_leader());
    }
    assert!(LeaderElectionCalls::get(&backend, "leader:svc").await.unwrap().is_none());
}

pub async fn election_attempts_slower_than_backend_timeout_never_elect<R: Runtime>(rt: R) {
    let backend = Faulty::default();
    let e = election(&rt, backend.clone(), "w1"); // backend_timeout 20 ms
    backend.slow(&rt, ms(300));
    e.start();
    sleep(&rt, ms(150)).await;
    assert!(!e.is_leader() && e.record().is_none(), "abandoned attempts elect nobody");
    let started = rt.now();
    e.stop().await; // the release is bounded by backend_timeout too
    assert!(rt.now().saturating_duration_since(started) < ms(1000));
    assert!(!e.is_running());
}

pub async fn election_stop_with_a_frozen_store_is_bounded<R: Runtime>(rt: R) {
    let backend = Faulty::default();
    let e = election(&rt, backend.clone(), "w1");
    e.start();
    e.wait_for_leader().await;
    backend.freeze();
    let started = rt.now();
    let stopping = e.stop();
    assert!(!e.is_leader());
    stopping.await;
    assert!(rt.now().saturating_duration_since(started) < ms(1000), "the release gave up at backend_timeout");
    backend.heal();
}
