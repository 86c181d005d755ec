//! `tenure revoke` as an operator runs it, on a SQLite file held by real `tenure` processes: the
//! answer for a held lock, one revoked already (the first reason stands), a name nobody holds, a
//! semaphore's permits (named, not revoked), and a bad reason.

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

mod common;

use common::{run, tenure};

fn workspace() -> (PathBuf, String) {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "tenure-revoke-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let url = format!("sqlite://{}?synchronous=normal", dir.join("store.db").display());
    (dir, url)
}

fn json(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)))
}

/// A `tenure` holder running `sleep`, killed (with its command) when dropped.
struct Holder(Child);

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.0.id().to_string()]).status();
        let _ = self.0.wait();
    }
}

/// Starts `tenure ARGS -- sleep 60` and waits until `tenure locks --json` shows `name` held.
fn hold(url: &str, args: &[&str], name: &str) -> Holder {
    let mut all = args.to_vec();
    all.extend(["--", "sleep", "60"]);
    let holder = Holder(tenure(url, &all).stderr(Stdio::null()).spawn().expect("spawn a holder"));
    let start = Instant::now();
    loop {
        let listed = json(&run(url, &["locks", "--json"]));
        let held =
            listed["locks"].as_array().is_some_and(|all| all.iter().any(|l| l["name"] == name && l["held"] == true));
        if held {
            return holder;
        }
        assert!(start.elapsed() < Duration::from_secs(15), "{name} never held: {listed}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_held_lock_is_revoked_once_and_a_second_revocation_keeps_the_first_reason() {
    let (_dir, url) = workspace();
    let _holder = hold(&url, &["lock", "job", "--lease", "30"], "job");
    let first = run(&url, &["revoke", "job", "--reason", "stuck on a deploy", "--json"]);
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let first = json(&first);
    assert_eq!((first["revoked"].as_bool(), first["already_revoked"].as_bool()), (Some(true), Some(false)), "{first}");
    assert_eq!(first["reason"], "stuck on a deploy");
    assert_eq!(first["fencing_token"].as_u64(), first["revoked_fencing_token"].as_u64().map(|f| f + 1), "{first}");
    let token_shown = first.to_string().contains(":task:") || first.to_string().contains(":thread:");
    assert!(!token_shown, "a token shown: {first}");

    let again = run(&url, &["revoke", "job", "--reason", "another try", "--json"]);
    assert!(again.status.success());
    let again = json(&again);
    assert_eq!((again["revoked"].as_bool(), again["already_revoked"].as_bool()), (Some(false), Some(true)), "{again}");
    assert_eq!(again["reason"], "stuck on a deploy", "the first revocation's reason stands: {again}");
    assert_eq!(again["fencing_token"], first["fencing_token"], "no second fence advance");
    let said = run(&url, &["revoke", "job"]);
    let said = String::from_utf8_lossy(&said.stdout);
    assert!(said.contains("was revoked already") && said.contains("stuck on a deploy"), "{said}");
}

#[test]
fn a_name_nobody_holds_exits_3_and_a_semaphores_holders_are_named_not_revoked() {
    let (_dir, url) = workspace();
    let nobody = run(&url, &["revoke", "ghost", "--json"]);
    assert_eq!(nobody.status.code(), Some(3), "{}", String::from_utf8_lossy(&nobody.stderr));
    let nobody = json(&nobody);
    assert_eq!(
        (nobody["revoked"].as_bool(), nobody["why"].as_str()),
        (Some(false), Some("nobody holds lock ghost: nothing to revoke"))
    );

    let _pool = hold(&url, &["lock", "pool", "--permits", "2"], "pool");
    let permit = run(&url, &["revoke", "pool"]);
    assert_eq!(permit.status.code(), Some(3));
    let why = String::from_utf8_lossy(&permit.stderr);
    assert!(why.contains("no lock pool is held, but the semaphore pool is, by "), "{why}");
    assert!(why.contains("not supported yet"), "{why}");
}

#[test]
fn a_bad_reason_exits_2_naming_it() {
    let (_dir, url) = workspace();
    for reason in ["a\nb", &"r".repeat(300)] {
        let refused = run(&url, &["revoke", "job", "--reason", reason]);
        assert_eq!(refused.status.code(), Some(2), "{}", String::from_utf8_lossy(&refused.stderr));
        assert!(String::from_utf8_lossy(&refused.stderr).contains("--reason"));
    }
}
