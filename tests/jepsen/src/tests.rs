//! The checkers on small histories written out by hand: a valid one of each, and one per anomaly.

use crate::{F, Kind, Verdict, mutex, ops, parse, set};

/// A history from lines `process type f name [fence=N] [value=N] [values=a,b] time`.
fn history(lines: &str) -> Vec<crate::Op> {
    let json: Vec<String> = lines
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let (time, extra) = words[4..].split_last().expect("a time");
            let mut fields = vec![
                format!("\"process\": {}", words[0]),
                format!("\"type\": \"{}\"", words[1]),
                format!("\"f\": \"{}\"", words[2]),
                format!("\"name\": \"{}\"", words[3]),
                format!("\"time\": {time}"),
            ];
            for field in extra {
                let (key, value) = field.split_once('=').expect("key=value");
                let value = if key == "values" { format!("[{value}]") } else { value.to_owned() };
                fields.push(format!("\"{key}\": {value}"));
            }
            format!("{{{}}}", fields.join(", "))
        })
        .collect();
    ops(&parse(&json.join("\n")).expect("a history")).expect("paired")
}

fn kinds(verdict: &Verdict) -> Vec<&'static str> {
    verdict.anomalies.iter().map(|a| a.kind).collect()
}

#[test]
fn a_fenced_mutex_handed_over_in_order_is_valid() {
    let ops = history(
        "1 invoke acquire l 0
         2 invoke acquire l 1
         1 ok acquire l fence=1 2
         1 invoke write l fence=1 3
         1 ok write l fence=1 4
         1 invoke release l 5
         1 ok release l 6
         2 ok acquire l fence=2 7
         2 invoke write l fence=2 8
         2 ok write l fence=2 9
         3 invoke acquire l 10
         3 info acquire l 11",
    );
    let verdict = mutex::check(&ops);
    assert!(verdict.is_valid(), "{:?}", verdict.anomalies);
    assert_eq!(verdict.checked, 2);
    assert!(mutex::check_resource(&ops).is_valid());
}

#[test]
fn an_election_s_process_renewing_its_own_term_is_one_term() {
    // Process 1 stops (its release of unknown outcome) and leads again under the same fence (the
    // store kept its lease): the same term. Process 2 then leading under that fence is not.
    let ops = history(
        "1 invoke acquire e 0
         1 ok acquire e fence=4 1
         1 invoke release e 2
         1 info release e 3
         1 invoke acquire e 4
         1 ok acquire e fence=4 5
         1 invoke release e 6
         1 ok release e 7
         2 invoke acquire e 8
         2 ok acquire e fence=4 9",
    );
    let verdict = mutex::check_terms(&ops);
    assert_eq!(kinds(&verdict), ["stale-fence", "duplicate-fence"], "{:?}", verdict.anomalies);
    let second = ops.len() - 1; // process 2's grant
    assert!(verdict.anomalies.iter().all(|a| a.ops.contains(&second)), "{:?}", verdict.anomalies);
    // A lock's grants (a fresh token each) may not repeat a fence, even in one process.
    assert_eq!(kinds(&mutex::check(&ops[..second])), ["stale-fence", "duplicate-fence"]);
}

#[test]
fn a_lower_or_equal_fence_after_a_completed_grant_is_stale() {
    let ops = history(
        "1 invoke acquire l 0
         1 ok acquire l fence=5 1
         2 invoke acquire l 2
         2 ok acquire l fence=5 3
         3 invoke acquire l 4
         3 ok acquire l fence=4 5",
    );
    let verdict = mutex::check(&ops);
    assert_eq!(kinds(&verdict), ["stale-fence", "stale-fence", "duplicate-fence"]);
    assert!(verdict.anomalies[0].message.contains("process 2 was granted fencing token 5 after process 1"));
}

#[test]
fn concurrent_grants_may_come_in_either_order_but_never_share_a_fence() {
    let ordered = history(
        "1 invoke acquire l 0
         2 invoke acquire l 1
         2 ok acquire l fence=2 2
         1 ok acquire l fence=1 3",
    );
    assert!(mutex::check(&ordered).is_valid(), "overlapping acquires bind no order");
    let shared = history(
        "1 invoke acquire l 0
         2 invoke acquire l 1
         2 ok acquire l fence=2 2
         1 ok acquire l fence=2 3",
    );
    assert_eq!(kinds(&mutex::check(&shared)), ["duplicate-fence"]);
}

#[test]
fn a_release_by_a_process_that_held_nothing_is_foreign() {
    let ops = history(
        "1 invoke acquire l 0
         1 ok acquire l fence=1 1
         2 invoke release l 2
         2 ok release l 3
         1 invoke release l 4
         1 ok release l 5
         3 invoke acquire l 6
         3 info acquire l 7
         3 invoke release l 8
         3 ok release l 9",
    );
    let verdict = mutex::check(&ops);
    assert_eq!(kinds(&verdict), ["foreign-release"], "an acquire of unknown outcome may hold");
    assert_eq!(verdict.anomalies[0].ops, [1]);
}

/// Process 1 granted fence 1, then process 2 fence 2, whose write the resource accepted.
const SECOND_HOLDER_WROTE: &str = "1 invoke acquire l 0
    1 ok acquire l fence=1 1
    2 invoke acquire l 2
    2 ok acquire l fence=2 3
    2 invoke write l fence=2 4
    2 ok write l fence=2 5";

#[test]
fn the_resource_never_accepts_one_fence_from_two_holders_nor_an_older_one() {
    let ops = history(&format!(
        "{SECOND_HOLDER_WROTE}
         1 invoke write l fence=1 6
         1 ok write l fence=1 7
         3 invoke write l fence=2 8
         3 ok write l fence=2 9"
    ));
    let verdict = mutex::check_resource(&ops);
    assert_eq!(kinds(&verdict), ["shared-fence", "ungranted-fence", "accepted-stale"]);
    let refused = history(&format!("{SECOND_HOLDER_WROTE}\n1 invoke write l fence=1 6\n1 fail write l fence=1 7"));
    assert!(mutex::check_resource(&refused).is_valid(), "a refused stale write is the fence working");
}

#[test]
fn a_guarded_set_keeps_every_acknowledged_element() {
    let ops = history(
        "1 invoke add s value=1 0
         1 ok add s value=1 1
         2 invoke add s value=2 2
         2 info add s value=2 3
         3 invoke add s value=3 4
         3 fail add s value=3 5
         4 invoke read s 6
         4 ok read s values=1 7",
    );
    let verdict = set::check(&ops);
    assert!(verdict.is_valid(), "{:?}", verdict.anomalies);
    assert_eq!(verdict.checked, 4);
}

#[test]
fn a_lost_update_a_phantom_and_a_duplicate_are_caught() {
    let ops = history(
        "1 invoke add s value=1 0
         1 ok add s value=1 1
         2 invoke add s value=2 2
         2 ok add s value=2 3
         4 invoke read s 6
         4 ok read s values=2,2,9 7",
    );
    let verdict = set::check(&ops);
    assert_eq!(kinds(&verdict), ["lost", "duplicate", "phantom"]);
    assert!(verdict.anomalies[0].message.contains("element 1, acknowledged to process 1"));
    let unread = history("1 invoke add s value=1 0\n1 ok add s value=1 1");
    assert_eq!(kinds(&set::check(&unread)), ["unread"]);
}

#[test]
fn an_add_concurrent_with_the_read_may_be_missing() {
    let ops = history(
        "4 invoke read s 0
         1 invoke add s value=1 1
         1 ok add s value=1 2
         4 ok read s values= 3",
    );
    assert!(set::check(&ops).is_valid());
}

#[test]
fn histories_that_do_not_pair_are_refused() {
    let events = parse(r#"{"process": 1, "type": "ok", "f": "acquire", "name": "l", "time": 0}"#).expect("an event");
    assert!(ops(&events).is_err());
    let err = parse("{\"process\": 1}").expect_err("no event");
    assert!(err.to_string().starts_with("line 1 is no event"), "{err}");
    let twice = [F::Acquire, F::Acquire].map(|f| crate::Event {
        process: 1,
        kind: Kind::Invoke,
        f,
        name: "l".into(),
        fence: None,
        value: None,
        values: None,
        time: 0,
    });
    assert!(ops(&twice).is_err(), "one operation at a time per process");
}

/// Client 1 granted once, then (restarted as 101) refused for good while client 2 is granted
/// `others` times: starved from `STARVED_AFTER` grants on.
fn one_client_stuck(others: usize) -> Vec<crate::Op> {
    let mut lines = vec!["1 invoke acquire l 0".to_owned(), "1 ok acquire l fence=1 1".to_owned()];
    let mut time = 2;
    for fence in 2..2 + others {
        lines.push(format!("101 invoke acquire l {time}"));
        lines.push(format!("101 info acquire l {}", time + 1));
        lines.push(format!("2 invoke acquire l {}", time + 2));
        lines.push(format!("2 ok acquire l fence={fence} {}", time + 3));
        lines.push(format!("2 invoke release l {}", time + 4));
        lines.push(format!("2 ok release l {}", time + 5));
        time += 6;
    }
    history(&lines.join("\n"))
}

#[test]
fn a_client_granted_nothing_while_the_others_go_on_is_starved() {
    let verdict = crate::progress::check(&one_client_stuck(crate::progress::STARVED_AFTER));
    assert_eq!(kinds(&verdict), ["starved"]);
    assert!(verdict.anomalies[0].message.starts_with("client process 1 was granted nothing after its last grant"));
    assert!(crate::progress::check(&one_client_stuck(crate::progress::STARVED_AFTER - 1)).is_valid());
}

#[test]
fn a_timeline_window_draws_only_what_overlaps_it() {
    // Two grants of one process, at 1 s and at 10 s (times in nanoseconds).
    let s = 1_000_000_000u64;
    let ops = history(&format!(
        "1 invoke acquire l {}\n 1 ok acquire l fence=1 {}\n 1 invoke release l {}\n 1 ok release l {}\n\
         1 invoke acquire l {}\n 1 ok acquire l fence=2 {}\n 1 invoke release l {}\n 1 ok release l {}",
        s,
        s + 1,
        2 * s,
        2 * s + 1,
        10 * s,
        10 * s + 1,
        11 * s,
        11 * s + 1
    ));
    let bars = |window| crate::report::timeline("t", &ops, &[], &[], window).matches("<title>").count();
    assert_eq!(bars(None), 6, "four operations and two holds");
    assert_eq!(bars(Some((9 * s, 12 * s))), 3, "the second grant: its acquire, its hold, its release");
    let svg = crate::report::timeline("t", &ops, &[], &[], Some((9 * s, 12 * s)));
    assert!(svg.contains(">9.0 s<") && svg.contains(">11.0 s<"), "a window past the run ends with it: {svg}");
}
