//! A Redis server of the test's own, on a free loopback port, that the test may kill, restart,
//! freeze and thaw. It persists with an fsync per write (`appendfsync always`), the setting under
//! which fencing counters survive a crash.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tenure_conformance::faults::{self, Server as _};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

pub struct Server {
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
    extra: Vec<String>,
    scheme: &'static str,
    password: Option<String>,
}

impl Server {
    /// Starts one and waits until it answers.
    pub fn start() -> Self {
        Self::configured(|_| {})
    }

    /// One that requires `password`.
    pub fn with_password(password: &str) -> Self {
        Self::configured(|s| {
            s.extra.extend(["--requirepass".into(), password.into()]);
            s.password = Some(password.into());
        })
    }

    /// A replica of the server on `master_port`, which a failover may promote.
    pub fn replica_of(master_port: u16) -> Self {
        Self::configured(|s| s.extra.extend(["--replicaof".into(), "127.0.0.1".into(), master_port.to_string()]))
    }

    /// A server of a Sentinel group: a replica of `replica_of` if given, speaking only TLS
    /// with the certificates in `tls` if given (replication over TLS too), its replication
    /// links (as a replica, now or after a failover) leaving from the loopback address `source`
    /// if given, so that a test can cut them and nothing else (it announces 127.0.0.1 to its
    /// master, which tells the sentinels).
    pub fn in_group(replica_of: Option<u16>, tls: Option<&std::path::Path>, source: Option<&str>) -> Self {
        Self::configured(|s| {
            if let Some(source) = source {
                s.extra.extend(["--bind-source-addr".into(), source.into()]);
                s.extra.extend(["--replica-announce-ip".into(), "127.0.0.1".into()]);
                // (protected mode refuses every address but 127.0.0.1 and ::1; the server
                // listens on 127.0.0.1 alone)
                s.extra.extend(["--protected-mode".into(), "no".into()]);
            }
            if let Some(certs) = tls {
                let file = |name: &str| certs.join(name).display().to_string();
                s.extra.extend(["--tls-port".into(), s.port.to_string(), "--port".into(), "0".into()]);
                s.extra.extend([
                    "--tls-cert-file".into(),
                    file("server.pem"),
                    "--tls-key-file".into(),
                    file("server.key"),
                ]);
                s.extra.extend(["--tls-ca-cert-file".into(), file("ca.pem"), "--tls-auth-clients".into(), "no".into()]);
                s.extra.extend(["--tls-replication".into(), "yes".into()]);
                s.scheme = "rediss";
            }
            if let Some(master) = replica_of {
                s.extra.extend(["--replicaof".into(), "127.0.0.1".into(), master.to_string()]);
            }
        })
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// One that speaks only TLS, with a certificate for `localhost` and 127.0.0.1 signed by
    /// [`Server::ca`].
    pub fn with_tls() -> Self {
        Self::configured(|s| {
            tenure_conformance::tls::certificates(&s.dir);
            let file = |name: &str| s.dir.join(name).display().to_string();
            s.extra = vec![
                "--tls-port".into(),
                s.port.to_string(),
                "--port".into(),
                "0".into(),
                "--tls-cert-file".into(),
                file("server.pem"),
                "--tls-key-file".into(),
                file("server.key"),
                "--tls-ca-cert-file".into(),
                file("ca.pem"),
                "--tls-auth-clients".into(),
                "no".into(),
            ];
            s.scheme = "rediss";
        })
    }

    fn configured(configure: impl FnOnce(&mut Self)) -> Self {
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let dir = std::env::temp_dir().join(format!("tenure-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("server dir");
        let mut server = Self { port, dir, child: None, extra: Vec::new(), scheme: "redis", password: None };
        configure(&mut server);
        server.spawn();
        server
    }

    /// The URL of the server (without its password).
    pub fn url(&self) -> String {
        format!("{}://127.0.0.1:{}", self.scheme, self.port)
    }

    /// The PEM file of the certificate authority of a TLS server.
    pub fn ca(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// A URL the test's own probes connect with.
    fn probe_url(&self) -> String {
        let auth = self.password.as_ref().map(|p| format!(":{p}@")).unwrap_or_default();
        let insecure = if self.scheme == "rediss" { "#insecure" } else { "" };
        format!("{}://{auth}127.0.0.1:{}{insecure}", self.scheme, self.port)
    }

    fn spawn(&mut self) {
        // The probes' TLS needs a crypto provider, as the backend's does.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", ""])
            .args(["--appendonly", "yes", "--appendfsync", "always", "--daemonize", "no"])
            .args(&self.extra)
            .arg("--dir")
            .arg(&self.dir)
            .args(["--logfile", "server.log"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server (apt-get install redis-server)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut last = None;
        while Instant::now() < deadline {
            let ready = redis::Client::open(self.probe_url())
                .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(200)))
                .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c));
            match ready {
                Ok(_) => return,
                Err(e) => last = Some(e),
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
        panic!("redis-server on port {} did not start: {last:?}\n{log}", self.port);
    }

    /// Starts it again on the same port and files as a replica of the server on `master`, as
    /// an operator brings a failed master back once another was promoted. (Started as it was
    /// first, an old master comes back a master, or a replica of the master it first followed,
    /// until the sentinels notice and convert it: 8 s of its reports at the earliest, longer on a
    /// loaded machine.)
    pub fn restart_as_replica_of(&mut self, master: u16) {
        if let Some(at) = self.extra.iter().position(|a| a == "--replicaof") {
            self.extra.drain(at..at + 3);
        }
        self.extra.extend(["--replicaof".into(), "127.0.0.1".into(), master.to_string()]);
        faults::Server::restart(self);
    }

    fn signal(&self, signal: Signal) {
        if let Some(child) = &self.child {
            let pid = i32::try_from(child.id()).expect("pid");
            kill(Pid::from_raw(pid), signal).expect("signal the server");
        }
    }
}

impl faults::Server for Server {
    /// `SIGSTOP`: connections stay open, nothing answers.
    fn freeze(&self) {
        self.signal(Signal::SIGSTOP);
        if let Some(child) = &self.child {
            faults::wait_stopped(child.id());
        }
    }

    /// `SIGCONT`.
    fn thaw(&self) {
        self.signal(Signal::SIGCONT);
    }

    /// `kill -9`, then waits for the process to be gone.
    fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port and files.
    fn restart(&mut self) {
        self.kill9();
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

/// A Redis Cluster of three primaries of the test's own, on free loopback ports (each with its
/// cluster bus on port + 10000).
pub struct Cluster {
    nodes: Vec<Server>,
}

impl Cluster {
    pub fn start() -> Self {
        let mut nodes = Vec::new();
        while nodes.len() < 3 {
            let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
            let bus_free = port < 55_000 && TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok();
            if !bus_free {
                continue;
            }
            let dir = std::env::temp_dir().join(format!("tenure-redis-cluster-{}-{port}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("node dir");
            let mut node = Server { port, dir, child: None, extra: Vec::new(), scheme: "redis", password: None };
            node.extra = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--appendonly", "no"]
                .map(String::from)
                .to_vec();
            node.spawn();
            nodes.push(node);
        }
        let addresses: Vec<String> = nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        let created = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addresses)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(created, "redis-cli --cluster create {addresses:?}");
        let cluster = Self { nodes };
        cluster.wait_until_ok();
        cluster
    }

    fn wait_until_ok(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        for node in &self.nodes {
            loop {
                let info: Result<String, _> = redis::Client::open(node.url())
                    .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(200)))
                    .and_then(|mut c| redis::cmd("CLUSTER").arg("INFO").query(&mut c));
                if info.is_ok_and(|i| i.contains("cluster_state:ok")) {
                    break;
                }
                assert!(Instant::now() < deadline, "the cluster did not become ready");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// `redis+cluster://` naming every node as a seed.
    pub fn url(&self) -> String {
        let nodes: Vec<String> = self.nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        format!("redis+cluster://{}", nodes.join(","))
    }
}
