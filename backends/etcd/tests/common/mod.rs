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
    pub(crate) dir: PathBuf,
    child: Child,
    /// Whether it speaks TLS (certificates in `dir`), and requires clients' certificates.
    tls: Option<ClientAuth>,
}

/// Whether a TLS member requires client certificates.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClientAuth {
    Optional,
    Required,
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
        Self::start_with(None)
    }

    /// Starts a member that speaks only TLS, its certificates (`ca.pem`, `client.pem`,
    /// `client.key`…) in [`Member::dir`].
    pub(crate) fn start_tls(auth: ClientAuth) -> Self {
        Self::start_with(Some(auth))
    }

    fn start_with(tls: Option<ClientAuth>) -> Self {
        let mut last_log = String::new();
        for _ in 0..3 {
            let ports = free_ports(2);
            let (client_port, peer_port) = (ports[0], ports[1]);
            let dir = std::env::temp_dir().join(format!("tenure-etcd-{}-{client_port}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("member dir");
            let scheme = if tls.is_some() { "https" } else { "http" };
            let client = format!("{scheme}://127.0.0.1:{client_port}");
            let peer = format!("http://127.0.0.1:{peer_port}");
            let log = std::fs::File::create(dir.join("etcd.log")).expect("log file");
            let mut command = Command::new("etcd");
            command
                .args(["--name", "t", "--data-dir"])
                .arg(dir.join("data"))
                .args(["--listen-client-urls", &client, "--advertise-client-urls", &client])
                .args(["--listen-peer-urls", &peer, "--initial-advertise-peer-urls", &peer])
                .args(["--initial-cluster", &format!("t={peer}")]);
            if let Some(auth) = tls {
                tenure_conformance::tls::certificates(&dir);
                command.arg("--cert-file").arg(dir.join("server.pem")).arg("--key-file").arg(dir.join("server.key"));
                if auth == ClientAuth::Required {
                    command.arg("--client-cert-auth").arg("--trusted-ca-file").arg(dir.join("ca.pem"));
                }
            }
            let child = command.stdout(Stdio::null()).stderr(log).spawn().expect("etcd (apt-get install etcd-server)");
            let member = Self { client_port, dir, child, tls };
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

    /// The store URL of this member, with `prefix` (for a TLS member: `etcds://` trusting its CA).
    pub(crate) fn url(&self, prefix: &str) -> String {
        match self.tls {
            Some(_) => {
                format!(
                    "etcds://127.0.0.1:{}/?prefix={prefix}&ca={}",
                    self.client_port,
                    self.dir.join("ca.pem").display()
                )
            }
            None => format!("etcd://127.0.0.1:{}/?prefix={prefix}", self.client_port),
        }
    }

    /// An `etcdctl` command on this member (API v3).
    pub(crate) fn etcdctl(&self, args: &[&str]) -> Command {
        let mut command = Command::new("etcdctl");
        command.env("ETCDCTL_API", "3");
        match self.tls {
            Some(_) => command
                .arg(format!("--endpoints=https://127.0.0.1:{}", self.client_port))
                .arg(format!("--cacert={}", self.dir.join("ca.pem").display()))
                .arg(format!("--cert={}", self.dir.join("client.pem").display()))
                .arg(format!("--key={}", self.dir.join("client.key").display())),
            None => command.arg(format!("--endpoints=127.0.0.1:{}", self.client_port)),
        };
        command.args(args).stdout(Stdio::piped()).stderr(Stdio::null());
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
