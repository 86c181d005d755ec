//! The simulator's own promises: a seed replays exactly, a clean core passes every profile, and
//! each deliberate defect is caught (so a green run means something).

use tenure_sim::{Bugs, Profile, run_guarded};

#[test]
fn a_seed_replays_event_for_event_and_seeds_differ() {
    let first = run_guarded(7, Profile::Mixed, Bugs::NONE, false).expect("seed 7 passes");
    let again = run_guarded(7, Profile::Mixed, Bugs::NONE, false).expect("seed 7 passes");
    assert_eq!(first.trace, again.trace);
    assert_eq!(first.events, again.events);
    assert_eq!(first.coverage, again.coverage);
    let other = run_guarded(8, Profile::Mixed, Bugs::NONE, false).expect("seed 8 passes");
    assert_ne!(first.trace, other.trace);
    // The driver on its simulated runtime replays too (its jitter is seeded by the runtime).
    let first = run_guarded(7, Profile::Driver, Bugs::NONE, false).expect("driver seed 7 passes");
    let again = run_guarded(7, Profile::Driver, Bugs::NONE, false).expect("driver seed 7 passes");
    assert_eq!((first.trace, first.events, first.coverage), (again.trace, again.events, again.coverage));
    assert_ne!(first.trace, run_guarded(8, Profile::Driver, Bugs::NONE, false).expect("driver seed 8").trace);
}

#[test]
fn every_profile_runs_clean_and_does_real_work() {
    for (name, profile) in Profile::NAMED {
        for seed in 100..103 {
            let outcome = run_guarded(seed, profile, Bugs::NONE, false)
                .unwrap_or_else(|f| panic!("profile {name}, seed {seed} failed at {} ns: {}", f.at, f.what));
            let c = outcome.coverage;
            assert!(outcome.events > 1_000, "profile {name}, seed {seed}: only {} events", outcome.events);
            assert!(c.acquisitions > 0 && c.bodies > 0 && c.writes > 0, "profile {name}, seed {seed}: {c}");
        }
    }
}

#[test]
fn every_injected_bug_is_caught_within_1000_seeds_and_replays_identically() {
    for (name, bug) in Bugs::NAMED {
        let caught =
            (5_000..6_000).find_map(|seed| run_guarded(seed, Profile::Mixed, bug, false).err().map(|f| (seed, f)));
        let Some((seed, failure)) = caught else { panic!("{name} was not caught within 1000 seeds") };
        let again = run_guarded(seed, Profile::Mixed, bug, false).expect_err("the failure replays");
        assert_eq!((failure.at, &failure.what), (again.at, &again.what), "{name}");
        assert!(
            run_guarded(seed, Profile::Mixed, Bugs::NONE, false).is_ok(),
            "{name}: seed {seed} passes without the bug"
        );
    }
}
