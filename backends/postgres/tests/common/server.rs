//! A PostgreSQL cluster of the test's own: `initdb` into a temporary directory, one server on a
//! free loopback port, in a process group of its own so the test can stop, kill, freeze and
//! thaw every process of it. Runs as the `postgres` user when the test runs as root (the
//! server refuses root). Commits are synchronous and fsynced, the defaults.

use std::net::TcpListener;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tenure_conformance::faults::{self, Server as _};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::{Pid, Uid, User};

pub struct Server {
    port: u16,
    dir: PathBuf,
    bin: PathBuf,
    user: Option<User>,
    child: Option<Child>,
    tls: bool,
}

impl Server {
    /// Makes a cluster, starts it, and waits until it answers.
    pub fn start() -> Self {
        Self::make(false)
    }

    /// One that also speaks TLS, with a certificate for `localhost` and 127.0.0.1 signed by
    /// [`Server::ca`].
    pub fn with_tls() -> Self {
        Self::make(true)
    }

    /// The PEM file of the certificate authority of a TLS server.
    pub fn ca(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    fn make(tls: bool) -> Self {
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let dir = std::env::temp_dir().join(format!("tenure-postgres-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("cluster dir");
        let user = if Uid::effective().is_root() {
            let user = User::from_name("postgres").expect("users").expect("a postgres user");
            std::os::unix::fs::chown(&dir, Some(user.uid.as_raw()), Some(user.gid.as_raw())).expect("chown");
            Some(user)
        } else {
            None
        };
        let server = Self { port, bin: bindir(), dir, user, child: None, tls };
        let initdb = server
            .command("initdb")
            .args(["-D", &server.data().display().to_string(), "-A", "trust", "-U", "postgres", "--no-sync"])
            .stdout(Stdio::null())
            .output()
            .expect("initdb");
        assert!(initdb.status.success(), "initdb: {}", String::from_utf8_lossy(&initdb.stderr));
        if tls {
            server.certificates();
        }
        let mut server = server;
        server.spawn();
        server
    }

    fn certificates(&self) {
        tenure_conformance::tls::certificates(&self.dir);
        if let Some(user) = &self.user {
            for file in ["server.key", "server.pem"] {
                std::os::unix::fs::chown(self.dir.join(file), Some(user.uid.as_raw()), None).expect("chown");
            }
        }
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(self.bin.join(program));
        if let Some(user) = &self.user {
            command.uid(user.uid.as_raw()).gid(user.gid.as_raw());
        }
        command
    }

    /// The URL of the server's `postgres` database.
    pub fn url(&self) -> String {
        format!("postgresql://postgres@127.0.0.1:{}/postgres", self.port)
    }

    fn spawn(&mut self) {
        let log = std::fs::File::create(self.dir.join("server.log")).expect("log");
        if let Some(user) = &self.user {
            let _ = std::os::unix::fs::chown(self.dir.join("server.log"), Some(user.uid.as_raw()), None);
        }
        let child = self
            .command("postgres")
            .args(["-D", &self.data().display().to_string(), "-p", &self.port.to_string()])
            .args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                &format!("unix_socket_directories={}", self.dir.display()),
            ])
            .args(["-c", "max_connections=40", "-c", "shared_buffers=16MB"])
            .args(if self.tls {
                vec![
                    "-c".to_owned(),
                    "ssl=on".to_owned(),
                    "-c".to_owned(),
                    format!("ssl_cert_file={}", self.dir.join("server.pem").display()),
                    "-c".to_owned(),
                    format!("ssl_key_file={}", self.dir.join("server.key").display()),
                ]
            } else {
                vec!["-c".to_owned(), "ssl=off".to_owned()]
            })
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("postgres");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            let ready = self
                .command("pg_isready")
                .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-t", "1"])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
        panic!("postgres on port {} did not start:\n{log}", self.port);
    }

    /// Signals every process of the server: each child of the postmaster first (every backend
    /// makes itself a group leader of its own, and a child whose postmaster died is no longer
    /// found as its child), then the postmaster's group.
    fn signal(&self, signal: Signal) {
        if let Some(child) = &self.child {
            let pid = i32::try_from(child.id()).expect("pid");
            for child in children(pid) {
                let _ = nix::sys::signal::kill(Pid::from_raw(child), signal);
            }
            let _ = killpg(Pid::from_raw(pid), signal);
        }
    }

    /// A fast shutdown (`SIGINT`): sessions are ended, then the server stops.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pid = i32::try_from(child.id()).expect("pid");
            let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGINT);
            let _ = child.wait();
        }
    }
}

impl faults::Server for Server {
    /// `SIGSTOP` to every process: connections stay open, nothing answers. The postmaster
    /// stops first, so that it forks no backend after its children were listed (each child
    /// calls `setsid`, so a signal to the postmaster's group does not reach one forked late);
    /// then its children are listed again until every one of them is stopped.
    fn freeze(&self) {
        let Some(child) = &self.child else { return };
        let pid = i32::try_from(child.id()).expect("pid");
        let _ = killpg(Pid::from_raw(pid), Signal::SIGSTOP);
        faults::wait_stopped(child.id());
        let mut stopped = Vec::new();
        loop {
            let late: Vec<i32> = children(pid).into_iter().filter(|c| !stopped.contains(c)).collect();
            if late.is_empty() {
                return;
            }
            for process in late {
                let _ = nix::sys::signal::kill(Pid::from_raw(process), Signal::SIGSTOP);
                faults::wait_stopped(process.unsigned_abs());
                stopped.push(process);
            }
        }
    }

    /// `SIGCONT`.
    fn thaw(&self) {
        self.signal(Signal::SIGCONT);
    }

    /// `kill -9` of every process of the server (a crash), then waits for the postmaster.
    fn kill9(&mut self) {
        self.signal(Signal::SIGKILL);
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port and files (after a crash: with recovery).
    fn restart(&mut self) {
        if self.child.is_some() {
            self.kill9();
        }
        self.spawn();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.thaw();
        self.kill9();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The processes whose parent is `pid`, from /proc.
fn children(pid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|child| {
            // /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may hold spaces, so read after ')'.
            std::fs::read_to_string(format!("/proc/{child}/stat")).ok().is_some_and(|stat| {
                stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<i32>().ok())
                    == Some(pid)
            })
        })
        .collect()
}

/// Where the server's programs are: `pg_config --bindir`, else the newest under
/// /usr/lib/postgresql.
fn bindir() -> PathBuf {
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
    {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if dir.join("initdb").exists() {
            return dir;
        }
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir(Path::new("/usr/lib/postgresql"))
        .expect("PostgreSQL's programs (apt-get install postgresql)")
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|bin| bin.join("initdb").exists())
        .collect();
    versions.sort();
    versions.pop().expect("an initdb under /usr/lib/postgresql")
}
