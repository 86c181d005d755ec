//! `tenure` driven as a user drives it: real processes on a SQLite file.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rusqlite::Connection;

mod common;

use common::{TENURE, run, tenure};

/// A fresh directory holding a fresh store.
fn workspace() -> (PathBuf, String) {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir =
        std::env::temp_dir().join(format!("tenure-cli-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::SeqCst)));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let url = format!("sqlite://{}", dir.join("store.db").display());
    (dir, url)
}

/// `url` with commits that do not wait for the disk (synchronous=normal): the keep-alive tests
/// check renewal, and on CI a commit waiting on fsync behind the parallel tests' stalled past a
/// 1.5 s lease once (and past 0.6 s leases before).
fn without_fsync(url: &str) -> String {
    format!("{url}?synchronous=normal")
}

fn code(output: &Output) -> i32 {
    output.status.code().unwrap_or(-1)
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn db(dir: &Path) -> Connection {
    Connection::open(dir.join("store.db")).expect("open the store file")
}

/// Waits until `check` holds, or fails after 10 s.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < Duration::from_secs(10), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Ends a `tenure` holder as an operator would, with SIGTERM: tenure passes it on to the
/// command, waits for it and gives the lease back. (SIGKILL would leave the command running,
/// holding the test's output open, until it ends by itself.)
fn stop(holder: &mut Child) {
    let _ = Command::new("kill").args(["-TERM", &holder.id().to_string()]).status();
    let exited = (0..500).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        matches!(holder.try_wait(), Ok(Some(_)))
    });
    if !exited {
        let _ = holder.kill();
        let _ = holder.wait();
    }
    assert!(exited, "tenure did not end within 10 s of SIGTERM");
}

fn held_by_someone(dir: &Path, key: &str) -> bool {
    db(dir)
        .query_row("SELECT count(*) FROM locks WHERE name = ?1 AND token IS NOT NULL", [key], |r| r.get::<_, i64>(0))
        .map(|n| n == 1)
        .unwrap_or(false)
}

#[test]
fn contending_processes_never_overlap_and_fences_strictly_increase() {
    let (dir, url) = workspace();
    let log = dir.join("sections.log");
    let script = format!(
        "echo \"start $TENURE_FENCING_TOKEN $TENURE_LOCK_NAME\" >> {log}; sleep 0.05; echo \"end $TENURE_FENCING_TOKEN\" >> {log}",
        log = log.display()
    );
    let workers: Vec<Child> = (0..4)
        .map(|_| {
            let rounds =
                format!("for i in 1 2 3; do {TENURE} --backend {url} lock counter -- sh -c '{script}' || exit 1; done");
            Command::new("sh").arg("-c").arg(rounds).spawn().expect("spawn a worker")
        })
        .collect();
    for mut worker in workers {
        assert!(worker.wait().expect("wait").success(), "a worker failed");
    }
    let text = std::fs::read_to_string(&log).expect("log");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 24, "12 sections of 2 lines:\n{text}");
    let mut last = 0;
    for pair in lines.chunks(2) {
        let start: Vec<&str> = pair[0].split(' ').collect();
        let end: Vec<&str> = pair[1].split(' ').collect();
        assert_eq!((start[0], end[0]), ("start", "end"), "sections interleaved:\n{text}");
        assert_eq!(start[1], end[1], "sections interleaved:\n{text}");
        assert_eq!(start[2], "counter", "TENURE_LOCK_NAME");
        let fence: u64 = start[1].parse().expect("a fencing token");
        assert!(fence > last, "fencing tokens went {last} then {fence}:\n{text}");
        last = fence;
    }
}

#[test]
fn the_command_status_and_the_failure_codes() {
    let (dir, url) = workspace();
    assert_eq!(code(&run(&url, &["lock", "x", "--", "sh", "-c", "exit 7"])), 7);
    assert_eq!(code(&run(&url, &["lock", "x", "--", "sh", "-c", "kill -9 $$"])), 137, "killed by signal 9");
    assert_eq!(code(&run(&url, &["lock", "x", "--", "/no/such/program"])), 127);

    // Held by someone else: --no-wait exits 75 at once, --timeout 124 after it.
    let mut holder = tenure(&url, &["lock", "x", "--", "sleep", "30"]).spawn().expect("holder");
    eventually("the holder to take the lock", || held_by_someone(&dir, "lock:x"));
    let busy = run(&url, &["lock", "x", "--no-wait", "--", "true"]);
    assert_eq!(code(&busy), 75, "{}", stderr(&busy));
    assert!(stderr(&busy).contains("held"), "{}", stderr(&busy));
    let start = Instant::now();
    let late = run(&url, &["lock", "x", "--timeout", "0.3", "--", "true"]);
    assert_eq!(code(&late), 124, "{}", stderr(&late));
    assert!(start.elapsed() >= Duration::from_millis(300), "gave up early");
    stop(&mut holder);
}

#[test]
fn version_prints_the_workspace_version() {
    let output = Command::new(TENURE).arg("--version").output().expect("run");
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(String::from_utf8_lossy(&output.stdout), format!("tenure {}\n", env!("CARGO_PKG_VERSION")));
}

#[test]
fn bad_urls_and_durations_exit_2_naming_the_problem() {
    let (_dir, url) = workspace();
    for (args, needle) in [
        (
            vec!["--backend", "mysql://u:secret@x", "lock", "x", "--", "true"],
            "names no store Tenure knows (known: memory:",
        ),
        (vec!["--backend", "sqlite://", "lock", "x", "--", "true"], "names no file"),
        (vec!["--backend", "sqlite:///tmp/a.db?busy_timeout=-1", "lock", "x", "--", "true"], "busy_timeout"),
        (vec!["--backend", "redis://:secret@host?command_timeout=0", "lock", "x", "--", "true"], "command_timeout"),
        (vec!["--backend", "postgres://u:secret@host/db?sslmode=sometimes", "lock", "x", "--", "true"], "sslmode"),
        (vec!["--backend", "etcd://u:secret@host:0", "lock", "x", "--", "true"], "port is not a number"),
        (vec!["--backend", &url, "lock", "x", "--lease", "0", "--", "true"], "--lease"),
        (vec!["--backend", &url, "lock", "x", "--lease", "-1", "--", "true"], "--lease"),
        (vec!["--backend", &url, "lock", "x", "--timeout", "NaN", "--", "true"], "--timeout"),
        (vec!["--backend", &url, "lock", "x", "--lease", "inf", "--", "true"], "--lease"),
        (vec!["--backend", &url, "lock", "x", "--lease", "soon", "--", "true"], "--lease"),
        (vec!["--backend", &url, "lock", "bad name!", "--", "true"], "bad name!"),
        (vec!["--backend", &url, "lock", "x"], "CMD"),
        (vec!["--backend", &url, "task", "t", "--", "true"], "--min-hold"),
        (vec!["--backend", &url, "task", "t", "--min-hold", "100", "--lease", "5", "--", "true"], "--lease (5s)"),
    ] {
        let output = Command::new(TENURE).args(&args).output().expect("run");
        assert_eq!(code(&output), 2, "{args:?}: {}", stderr(&output));
        assert!(stderr(&output).contains(needle), "{args:?}: {}", stderr(&output));
        assert!(!stderr(&output).contains("secret"), "a password was shown: {}", stderr(&output));
    }
}

#[test]
fn the_lease_is_renewed_while_the_command_runs() {
    let (dir, url) = workspace();
    let url = without_fsync(&url);
    // Leases of 1.5 s, as in the suite's SQLite keep-alive tests: shorter ones lapsed under CI's
    // load.
    let mut child = tenure(&url, &["lock", "long", "--lease", "1.5", "--", "sleep", "4.5"]).spawn().expect("spawn");
    eventually("the lock to be taken", || held_by_someone(&dir, "lock:long"));
    std::thread::sleep(Duration::from_millis(3300)); // over 2 leases
    let busy = run(&url, &["lock", "long", "--no-wait", "--", "true"]);
    assert_eq!(code(&busy), 75, "the lease lapsed while the command ran: {}", stderr(&busy));
    assert!(child.wait().expect("wait").success());
    assert!(!held_by_someone(&dir, "lock:long"), "not released after the command");
}

#[test]
fn a_lock_waited_for_longer_than_its_lease_still_runs_the_command() {
    let (dir, url) = workspace();
    let url = without_fsync(&url);
    let marker = dir.join("ran");
    // Leases of 1.5 s: at 0.6 s and 0.3 s a renewal commit on the SQLite file stalled past the
    // lease under CI's load.
    let mut holder = tenure(&url, &["lock", "w", "--lease", "1.5", "--", "sleep", "4.5"]).spawn().expect("holder");
    eventually("the holder to take the lock", || held_by_someone(&dir, "lock:w"));
    let script = format!("sleep 2; echo done > {}", marker.display());
    // Waits about 4.5 seconds, three leases, before its grant: the grant's attempt was sent long
    // after the command line started, and the lease must be counted from a known send.
    let waiter = run(&url, &["lock", "w", "--lease", "1.5", "--", "sh", "-c", &script]);
    assert_eq!(code(&waiter), 0, "{}", stderr(&waiter));
    assert_eq!(std::fs::read_to_string(&marker).ok().as_deref(), Some("done\n"));
    assert!(holder.wait().expect("holder").success());
}

#[test]
fn a_lock_lost_while_the_command_runs_stops_it_and_runs_on_lost() {
    let (dir, url) = workspace();
    let marker = dir.join("stopped");
    let script = format!("trap 'echo term > {}; exit 143' TERM; sleep 30 & wait", marker.display());
    let told = dir.join("on-lost");
    let on_lost = format!(
        "echo \"$TENURE_LOST_CAUSE $TENURE_LOCK_NAME $TENURE_FENCING_TOKEN $TENURE_LOST_REASON\" > {}",
        told.display()
    );
    let args = ["lock", "victim", "--lease", "1", "--on-lost", &on_lost, "--", "sh", "-c", &script];
    let child = tenure(&url, &args).stderr(Stdio::piped()).spawn().expect("spawn");
    eventually("the lock to be taken", || held_by_someone(&dir, "lock:victim"));
    let start = Instant::now();
    // Another holder takes the name (as after an expiry the holder did not notice).
    db(&dir)
        .execute(
            "UPDATE locks SET token = 'thief', expire_at = '2999-01-01 00:00:00.000' WHERE name = 'lock:victim'",
            [],
        )
        .expect("steal");
    let output = child.wait_with_output().expect("wait");
    assert_eq!(code(&output), 70, "{}", stderr(&output));
    assert!(stderr(&output).contains("lost"), "{}", stderr(&output));
    assert!(start.elapsed() < Duration::from_secs(5), "stopped only after {:?}", start.elapsed());
    assert_eq!(std::fs::read_to_string(&marker).ok().as_deref(), Some("term\n"), "the command got no TERM");
    let told = std::fs::read_to_string(&told).expect("--on-lost ran");
    assert!(told.starts_with("taken victim 1 the lease was lost: another holder has it"), "{told}");
}

#[test]
fn a_task_runs_once_per_window_and_says_when_it_skips() {
    let (dir, url) = workspace();
    let ran = dir.join("ran");
    let script = format!("echo run >> {}", ran.display());
    let first = run(&url, &["task", "nightly", "--min-hold", "30", "--", "sh", "-c", &script]);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let second = run(&url, &["task", "nightly", "--min-hold", "30", "--", "sh", "-c", &script]);
    assert_eq!(code(&second), 0, "{}", stderr(&second));
    assert!(stderr(&second).contains("skipped"), "{}", stderr(&second));
    assert_eq!(std::fs::read_to_string(&ran).expect("marker"), "run\n", "the body ran twice in one window");
    // A window longer than the default lease (60 s) needs no --lease: the lease covers it.
    let hourly = run(&url, &["task", "hourly", "--min-hold", "3600", "--", "true"]);
    assert_eq!(code(&hourly), 0, "{}", stderr(&hourly));
    let again = run(&url, &["task", "hourly", "--min-hold", "3600", "--", "true"]);
    assert!(stderr(&again).contains("skipped"), "{}", stderr(&again));
}

#[test]
fn elect_runs_the_command_while_leading_and_stops_it_on_loss() {
    let (dir, url) = workspace();
    let led = dir.join("led");
    let fast = ["--lease", "1", "--renew-deadline", "0.6", "--retry-interval", "0.1"];
    let mut args = vec!["elect", "svc"];
    args.extend(fast);
    let script = format!("echo $TENURE_LEADER_NAME $TENURE_FENCING_TOKEN > {}", led.display());
    args.extend(["--", "sh", "-c", &script]);
    let output = run(&url, &args);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(std::fs::read_to_string(&led).expect("marker"), "svc 1\n", "the name and the term's fence");
    // The next term (the last one was released) has the next fence.
    let output = run(&url, &args);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(std::fs::read_to_string(&led).expect("marker"), "svc 2\n");

    let marker = dir.join("stopped");
    let script = format!("trap 'echo term > {}; exit 143' TERM; sleep 30 & wait", marker.display());
    let mut args = vec!["elect", "svc2"];
    args.extend(fast);
    args.extend(["--", "sh", "-c", &script]);
    let leader = tenure(&url, &args).stderr(Stdio::piped()).spawn().expect("spawn");
    let leading = || {
        db(&dir)
            .query_row("SELECT count(*) FROM grelmicro_leader_election WHERE name = 'leader:svc2'", [], |r| {
                r.get::<_, i64>(0)
            })
            .unwrap_or(0)
            == 1
    };
    eventually("leadership", leading);
    db(&dir)
        .execute(
            "UPDATE grelmicro_leader_election SET holder = 'thief', expire_at = '2999-01-01 00:00:00.000' WHERE name = 'leader:svc2'",
            [],
        )
        .expect("take over");
    eventually("the command to be stopped", || marker.exists());
    // Now a follower waiting to lead again; TERM ends it (after it has reported the loss).
    let terminated = Command::new("kill").arg("-TERM").arg(leader.id().to_string()).status().expect("kill");
    assert!(terminated.success());
    let output = leader.wait_with_output().expect("wait");
    assert_eq!(code(&output), 143, "{}", stderr(&output));
    assert!(stderr(&output).contains("lost leadership"), "{}", stderr(&output));
}

#[test]
fn status_shows_holders_fences_and_leaders() {
    let (dir, url) = workspace();
    let mut holder = tenure(&url, &["lock", "cart", "--", "sleep", "30"]).spawn().expect("holder");
    eventually("the lock", || held_by_someone(&dir, "lock:cart"));
    let output = run(&url, &["status", "cart", "--json"]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains(r#""key":"lock:cart""#) && text.contains(r#""held":true"#), "{text}");
    assert!(text.contains(r#""fencing_token":1"#), "{text}");
    assert!(!text.contains(":task:"), "a whole token was shown: {text}");
    let table = run(&url, &["status"]);
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(table.contains("lock:cart") && table.contains("held"), "{table}");
    stop(&mut holder);
}

/// A fresh key prefix on the machine's Redis (`TENURE_REDIS_URL`, default 127.0.0.1:6379).
fn redis_store() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let server = std::env::var("TENURE_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{server}/?prefix=tenure-cli-{nanos}-{}:", NEXT.fetch_add(1, Ordering::SeqCst))
}

/// Fresh tables on the machine's PostgreSQL (`TENURE_POSTGRES_URL`, default
/// `postgresql://postgres@127.0.0.1:5432/test`).
fn postgres_store() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let server =
        std::env::var("TENURE_POSTGRES_URL").unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/test".into());
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let stem = format!("cli_{nanos}_{}", NEXT.fetch_add(1, Ordering::SeqCst));
    format!(
        "{server}?lock_table={stem}_locks&leader_table={stem}_leaders&schedule_table={stem}_schedules\
         &rwlock_table={stem}_rwlocks"
    )
}

/// Two commands exclude each other through the store `store()` makes, `status` shows the
/// holder, and the demo passes on it.
fn commands_share_locks_through(store: fn() -> String) {
    let url = store();
    let first = run(&url, &["lock", "x", "--", "sh", "-c", "echo fence=$TENURE_FENCING_TOKEN"]);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    assert!(String::from_utf8_lossy(&first.stdout).contains("fence=1"), "{first:?}");
    let mut holder = tenure(&url, &["lock", "x", "--", "sleep", "30"]).spawn().expect("holder");
    let held = || String::from_utf8_lossy(&run(&url, &["status", "x", "--json"]).stdout).contains(r#""held":true"#);
    eventually("the holder to take the lock", held);
    let busy = run(&url, &["lock", "x", "--no-wait", "--", "true"]);
    assert_eq!(code(&busy), 75, "{}", stderr(&busy));
    let status = run(&url, &["status", "--json"]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains(r#""key":"lock:x""#) && text.contains(r#""fencing_token":2"#), "{text}");
    stop(&mut holder);

    let demo = Command::new(TENURE).args(["--backend", &store(), "demo"]).output().expect("demo");
    let text = String::from_utf8_lossy(&demo.stdout);
    assert_eq!(code(&demo), 0, "{text}\n{}", stderr(&demo));
    assert!(text.contains("ok   mutual exclusion: 9 critical sections, 0 overlapping"), "{text}");
    assert!(text.contains("ok   leader failover"), "{text}");
}

/// A store URL naming `127.0.0.1:{port}` where nobody listens exits 1, naming the address
/// and not the password.
fn unreachable_exits_1(url: &str, port: u16) {
    let output = run(url, &["lock", "x", "--", "true"]);
    assert_eq!(code(&output), 1, "{}", stderr(&output));
    assert!(stderr(&output).contains(&format!("127.0.0.1:{port}")), "{}", stderr(&output));
    assert!(!stderr(&output).contains("secret"), "a password was shown: {}", stderr(&output));
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("port").port()
}

/// A writer that gives up (`--timeout`) leaves no intent behind when its process exits: a reader
/// that comes next gets in at once.
fn a_writer_that_gives_up_leaves_readers_free(store: fn() -> String) {
    let url = store();
    let mut reader = tenure(&url, &["lock", "doc", "--shared", "--", "sleep", "30"]).spawn().expect("reader");
    let busy = || code(&run(&url, &["lock", "doc", "--exclusive", "--no-wait", "--", "true"])) == 75;
    eventually("the reader to hold", busy);
    for _ in 0..3 {
        let late = run(&url, &["lock", "doc", "--exclusive", "--timeout", "0.2", "--", "true"]);
        assert_eq!(code(&late), 124, "{}", stderr(&late));
        let next = run(&url, &["lock", "doc", "--shared", "--no-wait", "--", "true"]);
        assert_eq!(code(&next), 0, "an intent outlived its writer: {}", stderr(&next));
    }
    stop(&mut reader);
}

#[test]
fn redis_urls_run_commands_under_the_same_locks() {
    commands_share_locks_through(redis_store);
    a_writer_that_gives_up_leaves_readers_free(redis_store);
}

/// A master and a sentinel of the test's own, killed on drop; the sentinel's URL for
/// [`sentinel_store`].
struct SentinelGroup {
    children: Vec<Child>,
    dir: PathBuf,
}

static SENTINEL_URL: std::sync::OnceLock<String> = std::sync::OnceLock::new();

impl SentinelGroup {
    fn start() -> Self {
        let dir = std::env::temp_dir().join(format!("tenure-cli-sentinel-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let (master, sentinel) = (free_port(), free_port());
        let server = |args: &[&str]| {
            Command::new("redis-server")
                .args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server")
        };
        let folder = dir.display().to_string();
        let mut children =
            vec![server(&["--port", &master.to_string(), "--bind", "127.0.0.1", "--save", "", "--dir", &folder])];
        let config = dir.join("sentinel.conf");
        let text = format!(
            "port {sentinel}\nbind 127.0.0.1\ndir {}\nsentinel monitor mymaster 127.0.0.1 {master} 1\n",
            dir.display()
        );
        std::fs::write(&config, text).expect("sentinel config");
        children.push(server(&[config.to_str().expect("path"), "--sentinel"]));
        let group = Self { children, dir };
        let named = || {
            let asked = Command::new("redis-cli")
                .args(["-p", &sentinel.to_string(), "SENTINEL", "get-master-addr-by-name", "mymaster"])
                .output();
            asked.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(&master.to_string()))
        };
        eventually("the sentinel to name the master", named);
        let _ = SENTINEL_URL.set(format!("redis+sentinel://127.0.0.1:{sentinel}/mymaster/0"));
        group
    }
}

impl Drop for SentinelGroup {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A fresh key prefix on the master behind [`SentinelGroup`]'s sentinel.
fn sentinel_store() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let url = SENTINEL_URL.get().expect("a sentinel group started");
    format!("{url}?prefix=tenure-cli-sentinel-{}:", NEXT.fetch_add(1, Ordering::SeqCst))
}

#[test]
fn sentinel_urls_run_commands_under_the_same_locks() {
    let _group = SentinelGroup::start();
    commands_share_locks_through(sentinel_store);
    a_writer_that_gives_up_leaves_readers_free(sentinel_store);
}

#[test]
fn postgres_urls_run_commands_under_the_same_locks() {
    commands_share_locks_through(postgres_store);
    a_writer_that_gives_up_leaves_readers_free(postgres_store);
}

#[test]
fn an_unreachable_store_exits_1_without_showing_the_password() {
    let port = free_port();
    unreachable_exits_1(&format!("redis://:secret@127.0.0.1:{port}/?connect_timeout=0.5"), port);
    let port = free_port();
    unreachable_exits_1(&format!("postgresql://app:secret@127.0.0.1:{port}/db?connect_timeout=0.5"), port);
}

#[test]
fn the_demo_shows_exclusion_fences_and_failover() {
    let (dir, _url) = workspace();
    // The default store: a file in the state directory.
    let output = Command::new(TENURE)
        .arg("demo")
        .env("XDG_STATE_HOME", &dir)
        .env_remove("TENURE_BACKEND")
        .output()
        .expect("demo");
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(code(&output), 0, "{text}\n{}", stderr(&output));
    assert!(text.contains("ok   mutual exclusion: 9 critical sections, 0 overlapping"), "{text}");
    assert!(text.contains("ok   fencing tokens strictly increase"), "{text}");
    assert!(text.contains("ok   leader failover"), "{text}");
    assert!(dir.join("tenure/tenure.db").exists(), "the default store is not in the state directory");
}

/// Readers held by `--shared` processes on `rwlock:<name>`, as the store counts them.
fn readers(dir: &Path, name: &str) -> i64 {
    db(dir)
        .query_row("SELECT count(*) FROM rwlocks_holders WHERE name = ?1 AND kind = 'r'", [name], |r| r.get(0))
        .unwrap_or(0)
}

#[test]
fn shared_holders_read_together_and_an_exclusive_one_writes_alone() {
    let (dir, url) = workspace();
    // Two readers at once: each waits (up to 10 s) until both hold before it exits.
    let both = format!(
        "echo $TENURE_GENERATION > {d}/gen-$$; i=0; while [ $(ls {d} | grep -c '^gen-') -lt 2 ]; do \
         i=$((i + 1)); [ $i -lt 500 ] || exit 1; sleep 0.02; done",
        d = dir.display()
    );
    let readers_running: Vec<Child> = (0..2)
        .map(|_| tenure(&url, &["lock", "doc", "--shared", "--", "sh", "-c", &both]).spawn().expect("reader"))
        .collect();
    for mut reader in readers_running {
        assert!(reader.wait().expect("wait").success(), "a reader did not run beside the other");
    }
    // A reader holds: a writer with --no-wait is refused (75), one with --timeout gives up (124).
    let mut reader = tenure(&url, &["lock", "doc", "--shared", "--", "sleep", "30"]).spawn().expect("reader");
    eventually("the reader to hold", || readers(&dir, "rwlock:doc") == 1);
    let busy = run(&url, &["lock", "doc", "--exclusive", "--no-wait", "--", "true"]);
    assert_eq!(code(&busy), 75, "{}", stderr(&busy));
    let late = run(&url, &["lock", "doc", "--exclusive", "--timeout", "0.3", "--", "true"]);
    assert_eq!(code(&late), 124, "{}", stderr(&late));
    // The plain lock of the same name is another lock.
    assert_eq!(code(&run(&url, &["lock", "doc", "--no-wait", "--", "true"])), 0, "lock:doc is not rwlock:doc");
    stop(&mut reader);
    // The killed reader's lease (60 s) still holds the writer out; a fresh name shows the
    // writer's variables: the first write's fencing token, not poisoned, then a reader reads it.
    let wrote =
        run(&url, &["lock", "page", "--exclusive", "--", "sh", "-c", "echo $TENURE_FENCING_TOKEN $TENURE_POISONED"]);
    assert_eq!(String::from_utf8_lossy(&wrote.stdout).trim(), "1 0", "{}", stderr(&wrote));
    let read = run(&url, &["lock", "page", "--shared", "--", "sh", "-c", "echo $TENURE_GENERATION"]);
    assert_eq!(String::from_utf8_lossy(&read.stdout).trim(), "1", "{}", stderr(&read));
    let both_flags = run(&url, &["lock", "page", "--shared", "--exclusive", "--", "true"]);
    assert_eq!(code(&both_flags), 2, "{}", stderr(&both_flags));
}

/// Holders of `semaphore:<name>`'s permits, as the store counts them.
fn permit_holders(dir: &Path, name: &str) -> i64 {
    db(dir)
        .query_row("SELECT count(*) FROM semaphores_holders WHERE name = ?1 AND kind = 'h'", [name], |r| r.get(0))
        .unwrap_or(0)
}

#[test]
fn permit_holders_run_up_to_the_count_and_another_count_is_refused() {
    let (dir, url) = workspace();
    // Two holders of 2 permits at once: each waits (up to 10 s) until both hold before it exits.
    let both = format!(
        "echo $TENURE_FENCING_TOKEN > {d}/tmp-$$; mv {d}/tmp-$$ {d}/fence-$$; i=0; while [ $(ls {d} | grep -c '^fence-') -lt 2 ]; do \
         i=$((i + 1)); [ $i -lt 500 ] || exit 1; sleep 0.02; done; sleep 30",
        d = dir.display()
    );
    let mut holders: Vec<Child> = (0..2)
        .map(|_| tenure(&url, &["lock", "pool", "--permits", "2", "--", "sh", "-c", &both]).spawn().expect("holder"))
        .collect();
    eventually("both permits to be held", || permit_holders(&dir, "semaphore:pool") == 2);
    // The store counts a holder before its command has started: wait for both commands' files.
    let fence_files = || -> Vec<String> {
        std::fs::read_dir(&dir)
            .expect("dir")
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with("fence-"))
            .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default().trim().to_owned())
            .collect()
    };
    eventually("both holders' commands to run", || fence_files().len() == 2);
    let mut fences = fence_files();
    fences.sort();
    assert_eq!(fences, ["1", "2"], "each permit has a fencing token of its own");
    // A third holder is refused (75) or gives up (124); another count is a usage error (2).
    let busy = run(&url, &["lock", "pool", "--permits", "2", "--no-wait", "--", "true"]);
    assert_eq!(code(&busy), 75, "{}", stderr(&busy));
    assert!(stderr(&busy).contains("no free permit"), "{}", stderr(&busy));
    let late = run(&url, &["lock", "pool", "--permits", "2", "--timeout", "0.3", "--", "true"]);
    assert_eq!(code(&late), 124, "{}", stderr(&late));
    let other = run(&url, &["lock", "pool", "--permits", "3", "--no-wait", "--", "true"]);
    assert_eq!(code(&other), 2, "{}", stderr(&other));
    assert!(stderr(&other).contains("in use with 2 permits"), "{}", stderr(&other));
    // The lock of the same name is another lock; zero permits and --shared beside it are refused.
    assert_eq!(code(&run(&url, &["lock", "pool", "--no-wait", "--", "true"])), 0, "lock:pool is not semaphore:pool");
    assert_eq!(code(&run(&url, &["lock", "other", "--permits", "0", "--", "true"])), 2);
    assert_eq!(code(&run(&url, &["lock", "other", "--permits", "2", "--shared", "--", "true"])), 2);
    // A holder that ends gives its permit back: the next one gets a greater fencing token.
    stop(&mut holders[0]);
    stop(&mut holders[1]);
    let next = run(&url, &["lock", "spare", "--permits", "1", "--", "sh", "-c", "echo $TENURE_FENCING_TOKEN"]);
    assert_eq!(String::from_utf8_lossy(&next.stdout).trim(), "1", "{}", stderr(&next));
    let again = run(&url, &["lock", "spare", "--permits", "1", "--", "sh", "-c", "echo $TENURE_FENCING_TOKEN"]);
    assert_eq!(String::from_utf8_lossy(&again.stdout).trim(), "2", "{}", stderr(&again));
}
