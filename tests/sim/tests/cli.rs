//! The command line: a failure prints a line that replays it, the regressions file runs first,
//! bad usage is refused with a clear message.

use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

static RUNS: AtomicUsize = AtomicUsize::new(0);

fn sim(args: &[&str], regressions: &str) -> Output {
    let run = RUNS.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("tenure-sim-cli-{}-{run}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let file = dir.join("regressions.txt");
    std::fs::write(&file, regressions).expect("a regressions file");
    let output = Command::new(env!("CARGO_BIN_EXE_tenure-sim"))
        .args(args)
        .env("TENURE_SIM_REGRESSIONS", &file)
        .output()
        .expect("tenure-sim runs");
    std::fs::remove_dir_all(&dir).ok();
    output
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn a_failure_prints_a_replay_line_that_fails_the_same_way() {
    let first =
        sim(&["--seed", "9000", "--seeds", "200", "--inject-bug", "leader-ignores-deadline", "--threads", "1"], "");
    assert_eq!(first.status.code(), Some(1), "{}", stdout(&first));
    let text = stdout(&first);
    let fail = text.lines().find(|l| l.starts_with("FAIL seed ")).expect("a FAIL line");
    let replay = text.lines().find_map(|l| l.strip_prefix("replay: ")).expect("a replay line");
    let args: Vec<&str> = replay.split(" -- ").nth(1).expect("arguments after --").split_whitespace().collect();
    assert!(args.contains(&"--inject-bug"), "{replay}");
    let again = sim(&args, "");
    assert_eq!(again.status.code(), Some(1));
    let again_fail = stdout(&again).lines().find(|l| l.starts_with("FAIL seed ")).map(str::to_owned);
    assert_eq!(again_fail.as_deref(), Some(fail), "the replay fails at the same instant with the same message");
}

#[test]
fn the_regressions_file_runs_first_and_a_bad_line_is_refused() {
    let ok = sim(&["--seed", "1", "--seeds", "2"], "# a comment\n42 calm  # once failed\n");
    assert_eq!(ok.status.code(), Some(0), "{}", stdout(&ok));
    assert!(stdout(&ok).contains("(+1 from regressions.txt)"), "{}", stdout(&ok));
    assert!(stdout(&ok).contains("3 seeds in"), "{}", stdout(&ok));

    let bad = sim(&["--seed", "1"], "42 no-such-profile\n");
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("expected `SEED PROFILE`"));
}

#[test]
fn bad_arguments_are_refused_with_the_reason() {
    for (args, reason) in [
        (&["--profile", "stormy"][..], "unknown profile \"stormy\""),
        (&["--inject-bug", "typo"][..], "unknown bug \"typo\""),
        (&["--seeds", "0"][..], "--seeds must be at least 1"),
        (&["--seed", "x"][..], "--seed takes a whole number"),
    ] {
        let out = sim(args, "");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(reason),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
