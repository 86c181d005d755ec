//! An etcd member the tests start on free loopback ports (etcd from Debian's `etcd-server`).

#![allow(dead_code)] // each test file uses part of it

pub(crate) mod cluster;

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One etcd member with its own data directory, killed and removed when dropped.
pub(crate) struct Member {
    pub(crate) client_port: u16,
    dir: PathBuf,
    child: Child,
}

/// `n` distinct free ports (their listeners held together while they are picked).
pub(crate) fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<TcpListener> = (0..n).map(|_| TcpListener::bind("127.0.0.1:0").expect("a free port")).collect();
    listeners.iter().map(|l| l.local_addr().expect("an address").port()).collect()
}

impl Member {
    /// Starts a single-member cluster and waits until it answers (on other ports if a port was
    /// taken meanwhile by another test's server).
    pub(crate) fn start() -> Self {
        let mut last_log = String::new();
        for _ in 0..3 {
            let ports = free_ports(2);
            let (client_port, peer_port) = (ports[0], ports[1]);
            let dir = std::env::temp_dir().join(format!("tenure-etcd-{}-{client_port}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("member dir");
            let client = format!("http://127.0.0.1:{client_port}");
            let peer = format!("http://127.0.0.1:{peer_port}");
            let log = std::fs::File::create(dir.join("etcd.log")).expect("log file");
            let child = Command::new("etcd")
                .args(["--name", "t", "--data-dir"])
                .arg(dir.join("data"))
                .args(["--listen-client-urls", &client, "--advertise-client-urls", &client])
                .args(["--listen-peer-urls", &peer, "--initial-advertise-peer-urls", &peer])
                .args(["--initial-cluster", &format!("t={peer}")])
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .expect("etcd (apt-get install etcd-server)");
            let member = Self { client_port, dir, child };
            let deadline = Instant::now() + Duration::from_secs(15);
            while Instant::now() < deadline {
                if member.etcdctl(&["endpoint", "health"]).status().is_ok_and(|s| s.success()) {
                    return member;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            last_log = std::fs::read_to_string(member.dir.join("etcd.log")).unwrap_or_default();
        }
        panic!("etcd did not start:\n{last_log}");
    }

    /// The store URL of this member, with `prefix`.
    pub(crate) fn url(&self, prefix: &str) -> String {
        format!("etcd://127.0.0.1:{}/?prefix={prefix}", self.client_port)
    }

    /// An `etcdctl` command on this member (API v3).
    pub(crate) fn etcdctl(&self, args: &[&str]) -> Command {
        let mut command = Command::new("etcdctl");
        command
            .env("ETCDCTL_API", "3")
            .arg(format!("--endpoints=127.0.0.1:{}", self.client_port))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        command
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
