//! The election machine against the store model: spec §3.5, §8.6, §8.7 and DESIGN §4.2.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use support::{World, key, ms, token};
use tenure_core::{
    BackendError, BackendErrorKind, ElectionEvent, ElectionMachine, KeyKind, LeaderElectionConfig, LeadershipLoss,
    Metadata, StoreOp, StoreReply, WorkerId,
};

/// The reference fixture: lease 100 ms, renew deadline 70 ms, retry 5 ms, backend timeout 5 ms.
fn config(w: &mut World, worker: &str, error_interval: Duration) -> LeaderElectionConfig {
    LeaderElectionConfig::builder()
        .worker(WorkerId::new(worker).unwrap())
        .lease_duration(ms(100))
        .renew_deadline(ms(70))
        .retry_interval(ms(5))
        .backend_timeout(ms(5))
        .error_interval(error_interval)
        .retry_jitter(0.0)
        .build(&mut w.rng)
        .unwrap()
}

fn election(w: &mut World, worker: &str) -> ElectionMachine {
    let cfg = config(w, worker, ms(10));
    let meta = Metadata::from_pairs([("pod", worker)]).unwrap();
    ElectionMachine::new(key(KeyKind::Leader, "svc"), token(worker), cfg, meta, w.now, &mut w.rng)
}

fn down() -> Result<StoreReply, BackendError> {
    Err(BackendError::new(BackendErrorKind::Unavailable, "down"))
}

#[test]
fn a_single_worker_leads_after_its_first_attempt() {
    let mut w = World::new();
    let mut e = election(&mut w, "w1");
    assert!(e.record().is_none() && !e.is_running() && e.last_confirmation_age(w.now).is_none());
    assert!(e.start(w.now));
    assert!(!e.start(w.now), "a second start is a no-op");
    let request = w.take(&mut e);
    assert!(matches!(&request.op, StoreOp::LeaderAcquireOrRenew { key, lease, metadata, .. }
        if key.as_str() == "leader:svc" && *lease == ms(100) && metadata.get("pod") == Some("w1")));
    let sent = w.now;
    w.advance(ms(2));
    assert_eq!(w.answer(&mut e, &request), vec![ElectionEvent::Elected]);
    let record = e.record().unwrap();
    assert_eq!((record.holder.as_str(), record.transitions), ("w1", 0));
    assert!(e.is_leader(w.now));
    assert_eq!(e.last_confirmation_age(w.now), Some(ms(2)), "confirmed as of the send");
    assert!(e.is_leader_confirmed_within(w.now, ms(2)), "age == max_age passes");
    assert!(!e.is_leader_confirmed_within(w.now, ms(1)));
    assert_eq!(e.poll_timeout(), Some(w.now + ms(5)), "jitter 0: exactly retry_interval after the answer");
    assert!(e.is_leader(sent + ms(70) - Duration::from_nanos(1)) && !e.is_leader(sent + ms(70)));
}

#[test]
fn terms_count_each_time_the_worker_becomes_leader_not_its_renewals() {
    let mut w = World::new();
    let mut e = election(&mut w, "w1");
    assert_eq!(e.terms(), 0);
    e.start(w.now);
    assert_eq!(w.pump(&mut e), vec![ElectionEvent::Elected]);
    assert_eq!(e.terms(), 1);
    w.advance(ms(5));
    assert!(w.fire(&mut e).is_empty(), "a renewal");
    assert_eq!(e.terms(), 1, "a renewal is the same term");
    e.stop(w.now);
    let _ = w.pump(&mut e);
    assert!(!e.is_leader(w.now));
    e.start(w.now);
    let _ = w.pump(&mut e);
    assert_eq!(e.terms(), 2);
}

#[test]
fn each_term_has_the_fence_of_the_take_that_began_it() {
    let mut w = World::new();
    let mut e = election(&mut w, "w1");
    assert_eq!(e.fence(), None, "not leading");
    e.start(w.now);
    assert_eq!(w.pump(&mut e), vec![ElectionEvent::Elected]);
    let first = e.fence().unwrap();
    assert_eq!(e.record().unwrap().fence, Some(first));
    w.advance(ms(5));
    assert!(w.fire(&mut e).is_empty(), "a renewal");
    assert_eq!(e.fence(), Some(first), "a renewal keeps the term's fence");
    e.stop(w.now);
    let _ = w.pump(&mut e);
    assert_eq!(e.fence(), None, "stopped");
    e.start(w.now);
    let _ = w.pump(&mut e);
    let second = e.fence().unwrap();
    assert!(second > first, "the next term's fence {second} is above the last's {first}");
    // The store answers a renewal with another fence (it began a term of its own under this
    // worker): the term it believed in ended, and a new one began.
    let at = e.poll_timeout().unwrap();
    w.now = w.now.max(at);
    e.handle_timeout(w.now);
    let renewal = w.take(&mut e);
    let mut record = match w.store.apply(&renewal.op, w.now) {
        StoreReply::Leader(record) => record,
        other => panic!("{other:?}"),
    };
    record.fence = Some(second.next());
    let events = w.answer_with(&mut e, &renewal, Ok(StoreReply::Leader(record)));
    assert_eq!(
        events,
        vec![ElectionEvent::Deposed { reason: LeadershipLoss::NotHolder }, ElectionEvent::Elected],
        "a term changed under the worker"
    );
    assert_eq!((e.fence(), e.terms()), (Some(second.next()), 3));
}

#[test]
fn the_renew_deadline_is_reached_at_exactly_renew_deadline() {
    let mut w = World::new();
    let mut e = election(&mut w, "w1");
    e.start(w.now);
    let confirmed = w.now;
    w.pump(&mut e);
    // Every later attempt fails; the deadline timer deposes exactly at confirmed + 70 ms.
    let mut deposed_at = None;
    for _ in 0..100 {
        let at = e.poll_timeout().unwrap();
        w.now = w.now.max(at);
        e.handle_timeout(w.now);
        while let Some(request) = e.poll_effect() {
            e.handle_reply(w.now, request.id, down());
        }
        while let Some(event) = e.poll_event() {
            if event == (ElectionEvent::Deposed { reason: LeadershipLoss::RenewDeadline }) {
                deposed_at = Some(w.now);
            }
        }
        if deposed_at.is_some() {
            break;
        }
        assert!(e.is_leader(w.now), "still leader before the deadline at {:?}", w.now);
    }
    assert_eq!(deposed_at, Some(confirmed + ms(70)));
    assert!(!e.is_leader(confirmed + ms(70)));
    assert!(e.last_confirmation_age(w.now).is_none(), "a confirmed loss resets the age");
}

#[test]
fn is_leader_turns_false_at_the_deadline_even_if_the_loop_stalls() {
    let mut w = World::new();
    let mut e = election(&mut w, "w1");
    e.start(w.now);
    let confirmed = w.now;
    w.pump(&mut e);
    assert!(e.is_leader(confirmed + ms(70) - Duration::from_nanos(1)));
    assert!(!e.is_leader(confirmed + ms(70)), "computed lazily when no timer ran");
}

#[test]
fn four_workers_elect_exactly_one_leader_and_a_stop_hands_over() {
    let mut w = World::new();
    let mut workers: Vec<_> = ["w1", "w2", "w3", "w4"].iter().map(|n| election(&mut w, n)).collect();
    for e in &mut workers {
        e.start(w.now);
        w.pump(e);
    }
    let leaders = |ws: &[ElectionMachine], now| ws.iter().filter(|e| e.is_leader_confirmed_within(now, ms(70))).count();
    assert_eq!(leaders(&workers, w.now), 1);
    assert!(workers[0].is_leader(w.now));
    workers[0].stop(w.now);
    assert!(!workers[0].is_leader(w.now), "stop clears leadership at once");
    let events = w.pump(&mut workers[0]);
    assert_eq!(
        events,
        vec![
            ElectionEvent::Deposed { reason: LeadershipLoss::Stopped },
            ElectionEvent::Released { released: true },
            ElectionEvent::Stopped
        ]
    );
    assert!(!workers[0].is_running());
    // A follower woken by the release takes over at once, with a fresh record.
    workers[1].wake(w.now);
    assert_eq!(w.pump(&mut workers[1]), vec![ElectionEvent::Elected]);
    assert_eq!(workers[1].record().unwrap().transitions, 0, "a clean release deletes the record");
    for e in &mut workers[2..] {
        w.fire(e);
        assert!(!e.is_leader(w.now));
        assert_eq!(e.record().unwrap().holder, "w2");
    }
    assert_eq!(leaders(&workers, w.now), 1);
}

#[test]
fn a_crashed_leader_is_taken_over_after_its_lease_with_a_transition() {
    let mut w = World::new();
    let mut a = election(&mut w, "w1");
    let mut b = election(&mut w, "w2");
    a.start(w.now);
    w.pump(&mut a);
    let crashed_at = w.now;
    b.start(w.now);
    w.pump(&mut b);
    while !b.is_leader(w.now) {
        w.fire(&mut b);
        assert!(w.now <= crashed_at + ms(110), "no takeover");
    }
    assert!(w.now >= crashed_at + ms(100), "not before the lease expired");
    assert_eq!(b.record().unwrap().transitions, 1);
}

#[test]
fn error_logs_are_throttled_by_a_quiet_period() {
    for (error_interval, expected) in [(ms(1000), 1), (ms(1), 3)] {
        let mut w = World::new();
        let cfg = config(&mut w, "w1", error_interval);
        let mut e =
            ElectionMachine::new(key(KeyKind::Leader, "svc"), token("w1"), cfg, Metadata::new(), w.now, &mut w.rng);
        e.start(w.now);
        let mut logged = 0;
        let start = w.now;
        while w.now < start + ms(11) {
            while let Some(request) = e.poll_effect() {
                e.handle_reply(w.now, request.id, down());
            }
            while let Some(event) = e.poll_event() {
                if let ElectionEvent::AttemptFailed { log: true, .. } = event {
                    logged += 1;
                }
            }
            w.now = e.poll_timeout().unwrap();
            e.handle_timeout(w.now);
        }
        assert_eq!(logged, expected, "error_interval {error_interval:?}");
    }
}

#[test]
fn an_attempt_slower_than_backend_timeout_is_abandoned() {
    let mut w = World::new();
    let mut e = election(&mut w, "w1");
    e.start(w.now);
    let request = w.take(&mut e);
    let events = w.fire(&mut e);
    assert!(
        matches!(&events[..], [ElectionEvent::AttemptFailed { error, .. }] if error.kind() == BackendErrorKind::Timeout)
    );
    assert!(e.record().is_none() && !e.is_leader(w.now));
    assert!(w.answer(&mut e, &request).is_empty(), "the late answer is ignored");
    assert!(!e.is_leader(w.now));
}

#[test]
fn stop_awaits_the_attempt_in_flight_then_releases() {
    let mut w = World::new();
    let mut e = election(&mut w, "w1");
    e.start(w.now);
    let attempt = w.take(&mut e);
    e.stop(w.now);
    assert_eq!(e.poll_effect(), None, "no release before the attempt answered");
    let events = w.answer(&mut e, &attempt);
    assert_eq!(events, vec![ElectionEvent::Released { released: true }, ElectionEvent::Stopped]);
    assert!(!e.is_leader(w.now), "an answer that arrives while stopping does not elect");
    assert!(e.record().is_some(), "the record is kept");
    assert!(w.store.leader_get(e.key(), w.now).is_none(), "another worker can take it at once");
}

#[test]
fn a_release_that_fails_or_hangs_still_stops() {
    let mut w = World::new();
    let mut e = election(&mut w, "w1");
    e.start(w.now);
    w.pump(&mut e);
    e.stop(w.now);
    let _release = w.take(&mut e);
    let events = w.fire(&mut e);
    assert!(
        matches!(
            &events[..],
            [ElectionEvent::Deposed { .. }, ElectionEvent::ReleaseFailed { .. }, ElectionEvent::Stopped]
        ),
        "{events:?}"
    );
    assert!(e.start(w.now), "it can run again");
}

#[test]
fn reconfigure_keeps_the_worker_and_applies_at_the_next_attempt() {
    let mut w = World::new();
    let mut e = election(&mut w, "w1");
    let other = config(&mut w, "w2", ms(10));
    let err = e.reconfigure(other).unwrap_err();
    assert!(err.is_settings() && err.to_string().contains("worker is immutable"), "{err}");
    let longer = e.config().to_builder().lease_duration(ms(200)).renew_deadline(ms(150)).build(&mut w.rng).unwrap();
    e.reconfigure(longer).unwrap();
    e.start(w.now);
    let request = w.take(&mut e);
    assert!(matches!(request.op, StoreOp::LeaderAcquireOrRenew { lease, .. } if lease == ms(200)));
}

#[test]
fn a_wrong_reply_shape_is_an_attempt_failure() {
    let mut w = World::new();
    let mut e = election(&mut w, "w1");
    e.start(w.now);
    let request = w.take(&mut e);
    let events = w.answer_with(&mut e, &request, Ok(StoreReply::Flag(true)));
    assert!(
        matches!(&events[..], [ElectionEvent::AttemptFailed { error, log: true }] if error.kind() == BackendErrorKind::Protocol)
    );
}

#[test]
fn reconfigure_never_stretches_a_confirmed_leadership_and_a_shorter_lease_pulls_it_in() {
    let mut w = World::new();
    let mut e = election(&mut w, "w1");
    e.start(w.now);
    let confirmed = w.now;
    w.pump(&mut e);
    let longer = e.config().to_builder().lease_duration(ms(300)).renew_deadline(ms(200)).build(&mut w.rng).unwrap();
    e.reconfigure(longer).unwrap();
    assert!(!e.is_leader(confirmed + ms(70)), "still the deadline of the confirming attempt");
    let shorter = e.config().to_builder().lease_duration(ms(20)).renew_deadline(ms(10)).build(&mut w.rng).unwrap();
    e.reconfigure(shorter).unwrap();
    w.advance(ms(5));
    let sent = w.now;
    e.handle_timeout(w.now); // the next attempt goes out with the 20 ms lease
    let request = w.take(&mut e);
    assert!(matches!(request.op, StoreOp::LeaderAcquireOrRenew { lease, .. } if lease == ms(20)));
    assert!(!e.is_leader(sent + ms(20)), "the store may end the lease 20 ms after applying it");
}

#[test]
fn a_wake_up_during_an_attempt_is_followed_by_another_attempt_at_once() {
    let mut w = World::new();
    let mut a = election(&mut w, "w1");
    let mut b = election(&mut w, "w2");
    a.start(w.now);
    w.pump(&mut a);
    b.start(w.now);
    let attempt = w.take(&mut b);
    let seen = w.store.apply(&attempt.op, w.now); // b sees a leading ...
    a.stop(w.now);
    w.pump(&mut a); // ... a releases, and the wake-up arrives before b's answer
    b.wake(w.now);
    b.handle_reply(w.now, attempt.id, Ok(seen));
    assert_eq!(w.pump(&mut b), vec![ElectionEvent::Elected], "attempted again at once");
}

#[test]
fn a_confirmation_that_arrives_after_the_instant_it_confirms_until_elects_nobody() {
    let mut w = World::new();
    let mut e = election(&mut w, "w1");
    e.start(w.now);
    let request = w.take(&mut e);
    let reply = w.store.apply(&request.op, w.now);
    w.advance(ms(80)); // past the 70 ms renew deadline
    e.handle_reply(w.now, request.id, Ok(reply));
    let events: Vec<_> = std::iter::from_fn(|| e.poll_event()).collect();
    assert_eq!(events, vec![], "no Elected followed at once by Deposed");
    assert!(!e.is_leader(w.now));
    assert_eq!(e.record().map(|r| r.holder.as_str()), Some("w1"), "the record is still kept");
    // The next attempt, answered in time, elects.
    let at = e.poll_timeout().unwrap();
    w.now = w.now.max(at);
    e.handle_timeout(w.now);
    let request = w.take(&mut e);
    assert_eq!(w.answer(&mut e, &request), vec![ElectionEvent::Elected]);
}

#[test]
fn a_leader_whose_loop_stalls_is_stale_past_its_deadline_plus_the_tolerance() {
    let mut w = World::new();
    let mut e = election(&mut w, "w1");
    assert_eq!(e.stale_leadership(w.now, ms(0)), None, "not leading: nothing to check");
    e.start(w.now);
    let sent = w.now;
    assert_eq!(w.pump(&mut e), vec![ElectionEvent::Elected]);
    // Nobody drives the loop from here (its timers stopped): it still believes it leads.
    assert_eq!(e.stale_leadership(sent + ms(70), ms(30)), None, "within the deadline");
    assert_eq!(e.stale_leadership(sent + ms(100), ms(30)), None, "deadline + tolerance exactly");
    assert_eq!(e.stale_leadership(sent + ms(101), ms(30)), Some(ms(101)), "past it: stale");
    // The loop runs again (its timer fires) and the store confirms it: healthy again.
    w.advance(ms(60));
    let _ = w.fire(&mut e);
    assert!(e.is_leader(w.now));
    assert_eq!(e.stale_leadership(w.now, ms(30)), None);
    // Stopped: not leading, nothing to check.
    e.stop(w.now);
    let _ = w.pump(&mut e);
    assert_eq!(e.stale_leadership(w.now + ms(500), ms(30)), None);
}

#[test]
fn the_leaders_details_go_with_each_attempt_to_lead_and_stay_with_the_term() {
    let mut w = World::new();
    let mut e = election(&mut w, "w1");
    let told = tenure_core::HolderDetails::new(r#"{"host":"h","pid":1,"program":"p","purpose":"schedule"}"#).unwrap();
    e.set_details(Some(told.clone()));
    assert!(e.start(w.now));
    let request = w.take(&mut e);
    assert!(
        matches!(&request.op, StoreOp::LeaderAcquireOrRenew { details: Some(d), .. } if *d == told),
        "an attempt to lead tells who: {:?}",
        request.op
    );
    w.advance(ms(1));
    assert_eq!(w.answer(&mut e, &request), vec![ElectionEvent::Elected]);
    let kept = w.store.leader_details(&key(KeyKind::Leader, "svc"), w.now).unwrap().clone();
    assert_eq!((kept.details, Some(kept.fence)), (told, e.record().unwrap().fence));
    w.advance(ms(5));
    e.handle_timeout(w.now);
    let renewal = w.take(&mut e);
    assert!(
        matches!(&renewal.op, StoreOp::LeaderAcquireOrRenew { details: Some(_), .. }),
        "a renewal tells who too (the store may begin a term with it): {:?}",
        renewal.op
    );
    w.answer(&mut e, &renewal);
    let still = w.store.leader_details(&key(KeyKind::Leader, "svc"), w.now).unwrap();
    assert_eq!(still.granted_at, kept.granted_at, "the term keeps what began it");
}
