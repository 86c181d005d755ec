//! `tenure watch` used as a person uses it: in a real terminal (tmux), over a Redis store, while
//! `tenure lock` processes take a lock, hand it over and give it up; then Ctrl-C. The screen is
//! read as it is drawn (`tmux capture-pane`), each event waited for.

use std::process::{Child, Command, Stdio};

use nix::sys::signal::Signal;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const TENURE: &str = env!("CARGO_BIN_EXE_tenure");

/// A fresh key prefix on the machine's Redis (`TENURE_REDIS_URL`, default 127.0.0.1:6379).
fn redis_store() -> String {
    let server = std::env::var("TENURE_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").subsec_nanos();
    format!("{server}?prefix=watch-{}-{nanos}:", std::process::id())
}

/// A tmux server of the test's own (its own socket), with one window running a command.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(command: &str) -> Self {
        let tmux = Self { socket: format!("tenure-watch-{}", std::process::id()) };
        assert!(
            tmux.run(&["new-session", "-d", "-s", "w", "-x", "150", "-y", "45", command]).status.success(),
            "tmux starts"
        );
        // A window whose command ended stays, with the command's exit status.
        tmux.run(&["set-option", "-t", "w", "remain-on-exit", "on"]);
        tmux
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux").arg("-L").arg(&self.socket).args(args).output().expect("tmux runs")
    }

    /// What the window shows now.
    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", "w"]).stdout).into_owned()
    }

    fn show(&self, format: &str) -> String {
        let out = self.run(&["display-message", "-p", "-t", "w", format]).stdout;
        String::from_utf8_lossy(&out).trim().to_owned()
    }

    /// Waits (up to 30 s) until the screen shows every one of `texts`, in this order; the screen.
    fn wait_for(&self, texts: &[&str]) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            let mut rest = screen.as_str();
            let shown = texts.iter().all(|t| match rest.find(t) {
                Some(at) => {
                    rest = &rest[at + t.len()..];
                    true
                }
                None => false,
            });
            if shown {
                return screen;
            }
            assert!(start.elapsed() < Duration::from_secs(30), "the screen never showed {texts:?}:\n{screen}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

/// `tenure lock job` running `sleep 60`, with a lease of 6 s (renewed every 2 s).
fn holder(url: &str) -> Child {
    Command::new(TENURE)
        .args(["--backend", url, "lock", "job", "--lease", "6", "--", "sleep", "60"])
        .env_remove("TENURE_BACKEND")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tenure lock")
}

/// `HH:MM:SS.mmm` of an event line, as milliseconds of the day.
fn shown_at(screen: &str, text: &str) -> u64 {
    let line = screen.lines().find(|l| l.contains(text)).expect("the line");
    let clock: Vec<u64> = line[..12].split([':', '.']).map(|p| p.parse().expect("a clock")).collect();
    ((clock[0] * 60 + clock[1]) * 60 + clock[2]) * 1_000 + clock[3]
}

fn now_ms_of_day() -> u64 {
    u64::try_from(SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_millis() % 86_400_000).expect("ms")
}

#[test]
fn a_lock_taken_handed_over_and_revoked_shows_on_screen_in_order_and_ctrl_c_leaves() {
    let url = redis_store();
    // (the shell ignores Ctrl-C, so that it outlives the view and says how the view ended)
    let tmux = Tmux::start(&format!("trap '' INT; {TENURE} --backend '{url}' watch job; echo exited:$?; sleep 60"));
    tmux.wait_for(&["tenure watch: names under \"job\"", "no lock or election under this prefix", "EVENTS"]);
    assert_eq!(tmux.show("#{alternate_on}"), "1", "the view draws on the alternate screen");
    assert_eq!(tmux.show("#{cursor_flag}"), "0", "with the cursor hidden");

    let began = now_ms_of_day();
    let mut first = Ended(holder(&url));
    let screen = tmux.wait_for(&["EVENTS", "lock job: granted to "]);
    let alpha = word_after(&screen, "lock job: granted to ");
    assert!(screen.contains(&format!("granted to {alpha} (fence 1)")), "{screen}");
    tmux.wait_for(&["lock", "job", "1", &format!("{alpha} (exclusive)"), "EVENTS"]);
    let granted = shown_at(&screen, "granted to");

    // beta waits; alpha's command is ended, and alpha gives the lock up to beta.
    let mut second = Ended(holder(&url));
    std::thread::sleep(Duration::from_millis(300));
    let handed = now_ms_of_day();
    signal(&first.0, Signal::SIGTERM);
    let _ = first.0.wait();
    let screen = tmux.wait_for(&["(fence 1)", "(fence 2)"]);
    let beta = if screen.contains("handed over from") {
        word_after(&screen, &format!("lock job: handed over from {alpha} to "))
    } else {
        assert!(screen.contains(&format!("lock job: released by {alpha}")), "{screen}");
        word_after(&screen.replacen("granted to", "", 1), "lock job: granted to ")
    };
    assert_ne!(alpha, beta);
    let over = shown_at(&screen, "(fence 2)");

    // An operator revokes it: shown at once; beta's next renewal fails and its command is stopped.
    let revoked_at = now_ms_of_day();
    let revoke = Command::new(TENURE)
        .args(["--backend", &url, "revoke", "job", "--reason", "stuck on a deploy"])
        .env_remove("TENURE_BACKEND")
        .output()
        .expect("tenure revoke");
    let said = String::from_utf8_lossy(&revoke.stdout);
    assert!(revoke.status.success(), "{said} {}", String::from_utf8_lossy(&revoke.stderr));
    assert!(said.contains(&format!("revoked lock job from {beta} (fence 2); the fence is now 3")), "{said}");
    let screen = tmux.wait_for(&["(fence 1)", "(fence 2)", &format!("lock job: revoked from {beta} (fence 3)")]);
    let revoked = shown_at(&screen, "revoked from");
    assert!(tmux.screen().contains("tenure-revoked (exclusive)"), "the placeholder holds it:\n{}", tmux.screen());
    let status = second.0.wait().expect("beta ends");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut second.0.stderr.take().expect("stderr"), &mut stderr).expect("stderr");
    assert_eq!(status.code(), Some(70), "{stderr}");
    assert!(stderr.contains("revoked by an operator: stuck on a deploy"), "{stderr}");
    // Free again when beta's lease would have ended.
    tmux.wait_for(&["revoked from", "lock job: free again after the revocation"]);
    #[allow(clippy::print_stdout)]
    {
        println!(
            "shown after (the event line's clock - the action's): grant {} ms, hand-over {} ms, revocation {} ms",
            granted.saturating_sub(began),
            over.saturating_sub(handed),
            revoked.saturating_sub(revoked_at)
        );
    }

    // Ctrl-C: the view ends with status 0 and gives the terminal back as it was.
    tmux.run(&["send-keys", "-t", "w", "C-c"]);
    let screen = tmux.wait_for(&["exited:0"]);
    assert!(!screen.contains("EVENTS"), "the screen the user had is back:\n{screen}");
    assert_eq!(tmux.show("#{alternate_on}"), "0", "the alternate screen was left");
    assert_eq!(tmux.show("#{cursor_flag}"), "1", "the cursor is shown again");
}

/// The word after `text` on the screen.
fn word_after(screen: &str, text: &str) -> String {
    let at = screen.find(text).unwrap_or_else(|| panic!("no {text:?} on the screen:\n{screen}"));
    screen[at + text.len()..].split_whitespace().next().expect("a word").to_owned()
}

fn signal(child: &Child, signal: Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid")), signal)
        .expect("a signal");
}

#[test]
fn piped_it_prints_the_table_once_then_one_line_per_event() {
    let url = redis_store();
    let mut watch = Ended(
        Command::new(TENURE)
            .args(["--backend", &url, "watch", "piped"])
            .env_remove("TENURE_BACKEND")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("watch"),
    );
    let stdout = watch.0.stdout.take().expect("stdout");
    let (tell, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead as _;
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tell.send(line);
        }
    });
    let next = || lines.recv_timeout(Duration::from_secs(30)).expect("a line");
    assert_eq!(next(), "no lock or election under this prefix");
    let status = Command::new(TENURE)
        .args(["--backend", &url, "lock", "piped", "--", "sleep", "2"])
        .env_remove("TENURE_BACKEND")
        .status()
        .expect("tenure lock");
    assert!(status.success());
    let granted = next();
    assert!(granted.contains("  lock piped: granted to ") && granted.ends_with(" (fence 1)"), "{granted}");
    assert_eq!(granted.as_bytes()[2], b':', "a clock first: {granted}");
    let worker = word_after(&granted, "granted to ");
    assert_eq!(next().split_once("  ").expect("a clock").1, format!("lock piped: released by {worker}"));
    signal(&watch.0, Signal::SIGTERM);
    assert!(watch.0.wait().expect("ends").success(), "SIGTERM ends the watch with status 0");
}

/// A child killed when dropped, so that a failing test leaves no process behind.
struct Ended(Child);

impl Drop for Ended {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
