//! A Redis server of the test's own, on a free loopback port, that the test may kill, restart,
//! freeze and thaw. It persists with an fsync per write (`appendfsync always`), the setting under
//! which fencing counters survive a crash.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

pub struct Server {
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl Server {
    /// Starts one and waits until it answers.
    pub fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let dir = std::env::temp_dir().join(format!("tenure-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("server dir");
        let mut server = Self { port, dir, child: None };
        server.spawn();
        server
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn spawn(&mut self) {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", ""])
            .args(["--appendonly", "yes", "--appendfsync", "always", "--daemonize", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server (apt-get install redis-server)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            let ready = redis::Client::open(self.url())
                .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(200)))
                .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c));
            if ready.is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("redis-server on port {} did not start", self.port);
    }

    fn signal(&self, signal: Signal) {
        if let Some(child) = &self.child {
            let pid = i32::try_from(child.id()).expect("pid");
            kill(Pid::from_raw(pid), signal).expect("signal the server");
        }
    }

    /// `kill -9`, then waits for the process to be gone.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port and files.
    pub fn restart(&mut self) {
        self.kill9();
        self.spawn();
    }

    /// `SIGSTOP`: connections stay open, nothing answers.
    pub fn freeze(&self) {
        self.signal(Signal::SIGSTOP);
    }

    /// `SIGCONT`.
    pub fn thaw(&self) {
        self.signal(Signal::SIGCONT);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.thaw();
        self.kill9();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
