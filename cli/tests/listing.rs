//! `tenure locks` read as an operator reads it, and `tenure exporter` scraped as Prometheus
//! scrapes it: real holders on a SQLite file, an unreachable and a frozen store, malformed records
//! and bad settings.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

mod common;

use common::tenure;

/// A fresh SQLite store's URL and its file.
fn sqlite_store() -> (String, PathBuf) {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "tenure-exporter-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("store.db");
    (format!("sqlite://{}?synchronous=normal", file.display()), file)
}

/// A running exporter, ended with SIGTERM when dropped.
struct Exporter {
    child: Child,
    address: String,
    said: std::sync::mpsc::Receiver<String>,
}

impl Exporter {
    fn start(url: &str, extra: &[&str]) -> Self {
        let mut args = vec!["exporter", "--listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        let mut child = tenure(url, &args).stderr(Stdio::piped()).spawn().expect("exporter");
        let (tell, said) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().expect("stderr");
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tell.send(line);
            }
        });
        let mut exporter = Self { child, address: String::new(), said };
        let line = exporter.wait_for("serving http://");
        exporter.address =
            line.split("http://").nth(1).and_then(|r| r.split('/').next()).expect("an address").to_owned();
        exporter
    }

    /// The first line said that contains `text` (waiting up to 30 s).
    fn wait_for(&self, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.said.recv_timeout(left) {
                Ok(line) if line.contains(text) => return line,
                Ok(_) => {}
                Err(e) => panic!("the exporter never said {text:?}: {e}"),
            }
        }
    }

    /// `GET path`: the status line and the body.
    fn get(&self, path: &str) -> (String, String) {
        let mut stream = TcpStream::connect(&self.address).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
        write!(stream, "GET {path} HTTP/1.1\r\nHost: {}\r\nAccept: text/plain\r\n\r\n", self.address).expect("send");
        let mut reply = String::new();
        stream.read_to_string(&mut reply).expect("a whole answer");
        let (head, body) = reply.split_once("\r\n\r\n").expect("a head and a body");
        (head.lines().next().unwrap_or_default().to_owned(), body.to_owned())
    }

    fn metrics(&self) -> String {
        let (status, body) = self.get("/metrics");
        assert_eq!(status, "HTTP/1.1 200 OK");
        body
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let _ = self.child.wait();
    }
}

/// The value of the sample `series` (name and labels as written), if shown.
fn sample(body: &str, series: &str) -> Option<f64> {
    body.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// Scrapes until `check` holds of the body, or fails after 30 s with the last body.
fn eventually(exporter: &Exporter, what: &str, check: impl Fn(&str) -> bool) -> String {
    let start = Instant::now();
    loop {
        let body = exporter.metrics();
        if check(&body) {
            return body;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "timed out waiting for {what}:\n{body}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Holders, ended with SIGTERM when dropped (a failed assertion included).
struct Holders(Vec<Child>);

impl Holders {
    fn start(url: &str, commands: &[&[&str]]) -> Self {
        Self(commands.iter().map(|args| tenure(url, args).stderr(Stdio::null()).spawn().expect("holder")).collect())
    }
}

impl Drop for Holders {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
        }
        for child in &mut self.0 {
            let _ = child.wait();
        }
    }
}

#[test]
fn every_kind_is_shown_with_its_holders_fences_and_leases_and_never_a_token() {
    let (url, _) = sqlite_store();
    let _holders = Holders::start(
        &url,
        &[
            &["lock", "cart", "--", "sleep", "600"],
            &["lock", "--permits", "2", "pool", "--", "sleep", "600"],
            &["lock", "--shared", "doc", "--", "sleep", "600"],
            &["elect", "svc", "--", "sleep", "600"],
        ],
    );
    let exporter = Exporter::start(&url, &[]);
    let body = eventually(&exporter, "every holder", |b| {
        sample(b, r#"tenure_store_lock_held{kind="lock",name="cart"}"#) == Some(1.0)
            && sample(b, r#"tenure_store_lock_holders{kind="semaphore",name="pool"}"#) == Some(1.0)
            && sample(b, r#"tenure_store_lock_holders{kind="rwlock",name="doc"}"#) == Some(1.0)
            && b.contains(r#"tenure_store_leader_info{name="svc",worker=""#)
    });
    assert_eq!(sample(&body, "tenure_store_up"), Some(1.0));
    assert_eq!(sample(&body, r#"tenure_store_lock_fence{kind="lock",name="cart"}"#), Some(1.0));
    assert_eq!(sample(&body, r#"tenure_store_semaphore_permits{kind="semaphore",name="pool"}"#), Some(2.0));
    assert_eq!(sample(&body, r#"tenure_store_lock_waiters{kind="semaphore",name="pool"}"#), Some(0.0));
    assert_eq!(sample(&body, r#"tenure_store_leader_fence{name="svc"}"#), Some(1.0));
    let left = sample(&body, r#"tenure_store_lock_lease_left_seconds{kind="lock",name="cart"}"#).expect("lease left");
    assert!(left > 0.0 && left <= 60.0, "{left}");
    assert!(body.contains(r#"side="read"} 1"#) && body.contains(r#"side="permit"} 1"#), "{body}");
    assert!(!body.contains(":task:") && !body.contains(":thread:"), "a whole token was shown:\n{body}");
    // Every sample line parses as the text format has it: a series, a space, a number.
    for line in body.lines().filter(|l| !l.starts_with('#')) {
        let (_, value) = line.rsplit_once(' ').expect("a value");
        assert!(value.parse::<f64>().is_ok(), "{line}");
    }

    let narrow = Exporter::start(&url, &["--prefix", "ca"]);
    let body = narrow.metrics();
    assert!(body.contains(r#"name="cart""#) && !body.contains(r#"name="pool""#), "{body}");
    let capped = Exporter::start(&url, &["--max-names", "1"]);
    let body = capped.metrics();
    assert_eq!(sample(&body, "tenure_store_names_omitted"), Some(3.0), "{body}");
    let (status, _) = capped.get("/nothing");
    assert_eq!(status, "HTTP/1.1 404 Not Found");
}

#[test]
fn an_unreachable_store_serves_up_0_names_the_address_and_keeps_serving() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("port").port();
    let exporter = Exporter::start(&format!("redis://:secret@127.0.0.1:{port}/0"), &["--timeout", "5"]);
    for _ in 0..2 {
        let body = exporter.metrics();
        assert_eq!(sample(&body, "tenure_store_up"), Some(0.0), "{body}");
        assert!(!body.contains("tenure_store_lock_held{"), "{body}");
    }
    let said = exporter.wait_for(&format!("127.0.0.1:{port}"));
    assert!(!said.contains("secret"), "the password was shown: {said}");
}

#[test]
fn a_frozen_store_is_given_up_after_the_timeout() {
    // A server that accepts and never answers.
    let frozen = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let address = frozen.local_addr().expect("address");
    let _accepting = std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in frozen.incoming() {
            held.push(stream);
        }
    });
    let exporter = Exporter::start(&format!("redis://{address}/0"), &["--timeout", "1"]);
    let body = exporter.metrics();
    assert_eq!(sample(&body, "tenure_store_up"), Some(0.0), "{body}");
    exporter.wait_for("--timeout");
}

#[test]
fn a_malformed_record_is_named_and_shown_as_up_0() {
    let (url, file) = sqlite_store();
    let output = tenure(&url, &["lock", "--shared", "doc", "--", "true"]).output().expect("reader");
    assert!(output.status.success(), "{output:?}");
    let db = rusqlite::Connection::open(&file).expect("open");
    db.execute("INSERT INTO rwlocks_holders VALUES ('rwlock:doc', 'x', 'r', 'not a time')", []).expect("garbage");
    let exporter = Exporter::start(&url, &[]);
    let body = exporter.metrics();
    assert_eq!(sample(&body, "tenure_store_up"), Some(0.0), "{body}");
    let said = exporter.wait_for("expire_at");
    assert!(said.contains("not a time") || said.contains("expire_at"), "{said}");
}

#[test]
fn bad_settings_exit_2_naming_the_problem() {
    let cases: [(&str, &[&str], &str); 5] = [
        ("redis://:1/0?nonsense=1", &["--listen", "127.0.0.1:0"], "--backend"),
        ("memory:", &["--listen", "127.0.0.1:0"], "memory"),
        ("sqlite:///tmp/x.db", &["--listen", "no-such-host-:99999"], "--listen"),
        ("sqlite:///tmp/x.db", &["--listen", "127.0.0.1:0", "--max-names", "0"], "--max-names"),
        ("sqlite:///tmp/x.db", &["--listen", "127.0.0.1:0", "--timeout", "0"], "--timeout"),
    ];
    for (url, args, named) in cases {
        let mut all = vec!["exporter"];
        all.extend_from_slice(args);
        let output = tenure(url, &all).output().expect("run");
        let said = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{url} {args:?}: {said}");
        assert!(said.contains(named), "{url} {args:?}: {said}");
    }
}

#[test]
fn locks_lists_every_kind_with_holders_waiters_and_leaders_and_never_a_token() {
    let (url, _) = sqlite_store();
    let holders = Holders::start(
        &url,
        &[
            &["lock", "cart", "--purpose", "nightly export", "--", "sleep", "600"],
            &["task", "report", "--min-hold", "600", "--", "sleep", "600"],
            &["lock", "--permits", "1", "pool", "--purpose", "export", "--", "sleep", "600"],
            &["lock", "--permits", "1", "pool", "--", "sleep", "600"],
            &["lock", "--shared", "doc", "--", "sleep", "600"],
            &["elect", "svc", "--purpose", "schedule", "--", "sleep", "600"],
        ],
    );
    let listed = |args: &[&str]| {
        let output = tenure(&url, args).output().expect("tenure locks");
        assert!(output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    // The second permit holder waits in the semaphore's line.
    let start = Instant::now();
    let document = loop {
        let text = listed(&["locks", "--json"]);
        let doc: serde_json::Value = serde_json::from_str(&text).expect("one JSON document");
        let locks = doc["locks"].as_array().cloned().unwrap_or_default();
        let named = |name: &str| locks.iter().find(|l| l["name"] == name).cloned().unwrap_or_default();
        let ready = doc["elections"][0]["name"] == "svc"
            && named("cart")["held"] == true
            && named("report")["held"] == true
            && named("doc")["holders"][0]["side"] == "read"
            && named("pool")["waiters"].as_array().is_some_and(|w| w.len() == 1);
        if ready {
            break text;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "timed out waiting for every holder:\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(!document.contains(":task:") && !document.contains(":thread:"), "a token was shown: {document}");
    // Who holds: the holder's host, pid and program, its purpose (the command line by default),
    // and since when.
    let doc: serde_json::Value = serde_json::from_str(&document).expect("JSON");
    let holder_of = |name: &str| {
        let locks = doc["locks"].as_array().cloned().unwrap_or_default();
        locks.iter().find(|l| l["name"] == name).map(|l| l["holders"][0].clone()).unwrap_or_default()
    };
    let cart = holder_of("cart");
    let pid = u64::from(holders.0[0].id());
    assert_eq!((cart["pid"].as_u64(), cart["program"].as_str()), (Some(pid), Some("tenure")), "{cart}");
    assert_eq!(cart["purpose"], "nightly export", "{cart}");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("hostname");
    assert_eq!(cart["host"].as_str(), Some(host.trim()), "{cart}");
    let held_for = cart["held_for_s"].as_f64().expect("held for");
    assert!((-5.0..120.0).contains(&held_for), "{cart}");
    assert!(cart["acquired_at"].as_str().is_some_and(|t| t.ends_with('Z')), "{cart}");
    let report = holder_of("report");
    assert_eq!(report["purpose"], "sleep", "the command's name by default, never its arguments: {report}");
    assert_eq!(report["pid"].as_u64(), Some(u64::from(holders.0[1].id())), "{report}");
    assert!(document.contains(r#""permits":1"#) && document.contains(r#""kind":"semaphore""#), "{document}");
    // A permit's holder and a reader tell the same: whichever of the two took the permit.
    let permit = holder_of("pool");
    let (first, second) = (u64::from(holders.0[2].id()), u64::from(holders.0[3].id()));
    let expected = if permit["pid"].as_u64() == Some(first) { (first, "export") } else { (second, "sleep") };
    assert_eq!((permit["pid"].as_u64(), permit["purpose"].as_str()), (Some(expected.0), Some(expected.1)), "{permit}");
    assert_eq!(permit["side"], "permit", "{permit}");
    let leader = &doc["elections"][0];
    assert_eq!(leader["leader_details"]["purpose"], "schedule", "{leader}");
    assert_eq!(leader["leader_details"]["pid"].as_u64(), Some(u64::from(holders.0[5].id())), "{leader}");
    let reader = holder_of("doc");
    assert_eq!((reader["purpose"].as_str(), reader["program"].as_str()), (Some("sleep"), Some("tenure")), "{reader}");
    let table = listed(&["locks"]);
    let told = format!("(exclusive) on {} pid {pid} (tenure) for ", host.trim());
    for expected in ["cart", "pool [1/1]", "doc", "svc", "(exclusive)", "(permit)", "(read)", "election", &told] {
        assert!(table.contains(expected), "{expected} missing:\n{table}");
    }
    let narrow = listed(&["locks", "ca"]);
    assert!(narrow.contains("cart") && !narrow.contains("pool"), "{narrow}");
    let capped = listed(&["locks", "--limit", "1"]);
    assert!(capped.contains("svc") && capped.contains("… and 4 more names"), "{capped}");
}
