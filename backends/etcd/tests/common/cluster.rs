//! A cluster of etcd members on loopback ports, for the fault tests: members killed with
//! SIGKILL, frozen with SIGSTOP, restarted on their data directories.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::free_ports;

struct Node {
    name: String,
    client: u16,
    peer: u16,
    child: Option<Child>,
    /// The `cgroup.procs` file of the cgroup it runs in, if one was asked for.
    procs: Option<PathBuf>,
}

/// `n` members forming one cluster, killed and removed when dropped.
pub(crate) struct Cluster {
    nodes: Vec<Node>,
    dir: PathBuf,
}

impl Cluster {
    /// Starts `n` members and waits until the cluster answers.
    pub(crate) fn start(n: usize) -> Self {
        Self::start_in(vec![None; n])
    }

    /// Starts one member per entry of `procs`, each `Some` in the cgroup whose `cgroup.procs` file
    /// it names (every socket of the member is of that cgroup: the Jepsen harness cuts members
    /// from one another with nftables rules on it).
    pub(crate) fn start_in(procs: Vec<Option<PathBuf>>) -> Self {
        let n = procs.len();
        let ports = free_ports(2 * n);
        let nodes: Vec<Node> = procs
            .into_iter()
            .enumerate()
            .map(|(i, procs)| Node {
                name: format!("m{i}"),
                client: ports[2 * i],
                peer: ports[2 * i + 1],
                child: None,
                procs,
            })
            .collect();
        let dir = std::env::temp_dir().join(format!("tenure-etcd-cluster-{}-{}", std::process::id(), nodes[0].client));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("cluster dir");
        let mut cluster = Self { nodes, dir };
        for i in 0..n {
            cluster.spawn(i);
        }
        cluster.wait_healthy();
        cluster
    }

    fn spawn(&mut self, i: usize) {
        let initial: Vec<String> =
            self.nodes.iter().map(|n| format!("{}=http://127.0.0.1:{}", n.name, n.peer)).collect();
        let node = &self.nodes[i];
        let (client, peer) = (format!("http://127.0.0.1:{}", node.client), format!("http://127.0.0.1:{}", node.peer));
        let log = std::fs::File::options()
            .create(true)
            .append(true)
            .open(self.dir.join(format!("{}.log", node.name)))
            .expect("log file");
        let mut etcd = match &node.procs {
            // (the shell joins the cgroup, then becomes etcd: the child is etcd itself)
            Some(procs) => {
                let mut shell = Command::new("sh");
                shell.arg("-c").arg(format!("echo $$ > '{}' && exec etcd \"$@\"", procs.display())).arg("etcd");
                shell
            }
            None => Command::new("etcd"),
        };
        let child = etcd
            .args(["--name", &node.name, "--data-dir"])
            .arg(self.dir.join(&node.name))
            .args(["--listen-client-urls", &client, "--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer, "--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &initial.join(","), "--initial-cluster-token", "tenure-faults"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("etcd (apt-get install etcd-server)");
        self.nodes[i].child = Some(child);
    }

    /// The store URL naming every member, with `prefix` and short timeouts.
    pub(crate) fn url(&self, prefix: &str) -> String {
        let endpoints: Vec<String> = self.nodes.iter().map(|n| format!("127.0.0.1:{}", n.client)).collect();
        format!("etcd://{}/?prefix={prefix}&connect_timeout=1&command_timeout=1", endpoints.join(","))
    }

    /// The port member `i` listens on for its peers.
    pub(crate) fn peer_port(&self, i: usize) -> u16 {
        self.nodes[i].peer
    }

    fn etcdctl(&self, args: &[&str]) -> Command {
        let endpoints: Vec<String> = self.nodes.iter().map(|n| format!("127.0.0.1:{}", n.client)).collect();
        let mut command = Command::new("etcdctl");
        command
            .env("ETCDCTL_API", "3")
            .arg(format!("--endpoints={}", endpoints.join(",")))
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        command
    }

    /// Waits until every running member is healthy.
    pub(crate) fn wait_healthy(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            let healthy = self.nodes.iter().filter(|n| n.child.is_some()).all(|n| {
                let mut command = Command::new("etcdctl");
                command
                    .env("ETCDCTL_API", "3")
                    .arg(format!("--endpoints=127.0.0.1:{}", n.client))
                    .args(["endpoint", "health"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null());
                command.status().is_ok_and(|s| s.success())
            });
            if healthy && self.etcdctl(&["put", "tenure-probe", "1"]).status().is_ok_and(|s| s.success()) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the etcd cluster did not become healthy (logs in {})", self.dir.display());
    }

    /// The index of the member that leads the cluster now, once one does (after a member's
    /// restart an election may still be under way; on a loaded machine it can take seconds).
    pub(crate) fn leader(&self) -> usize {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(leader) = self.leading() {
                return leader;
            }
            assert!(Instant::now() < deadline, "no member led within 20 s (logs in {})", self.dir.display());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The index of the member that says it leads, if one does.
    fn leading(&self) -> Option<usize> {
        for (i, node) in self.nodes.iter().enumerate().filter(|(_, n)| n.child.is_some()) {
            let output = Command::new("etcdctl")
                .env("ETCDCTL_API", "3")
                .arg(format!("--endpoints=127.0.0.1:{}", node.client))
                .args(["endpoint", "status", "--write-out", "fields"])
                .output()
                .expect("etcdctl");
            let text = String::from_utf8_lossy(&output.stdout);
            let id = text.lines().find_map(|l| l.strip_prefix("\"MemberID\" : ")).map(str::trim);
            let leader = text.lines().find_map(|l| l.strip_prefix("\"Leader\" : ")).map(str::trim);
            if id.is_some() && id == leader {
                return Some(i);
            }
        }
        None
    }

    /// Kills member `i` with SIGKILL.
    pub(crate) fn kill9(&mut self, i: usize) {
        self.signal(i, "-CONT"); // a frozen member dies too
        if let Some(mut child) = self.nodes[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Freezes member `i` (SIGSTOP): its sockets stay open, it answers nothing.
    pub(crate) fn freeze(&self, i: usize) {
        self.signal(i, "-STOP");
        if let Some(child) = &self.nodes[i].child {
            tenure_conformance::faults::wait_stopped(child.id());
        }
    }

    /// Lets a frozen member `i` go on (SIGCONT).
    pub(crate) fn thaw(&self, i: usize) {
        self.signal(i, "-CONT");
    }

    fn signal(&self, i: usize, signal: &str) {
        if let Some(child) = &self.nodes[i].child {
            let sent = Command::new("kill").args([signal, &child.id().to_string()]).status().expect("kill");
            assert!(sent.success(), "kill {signal} member {i}");
        }
    }

    /// Starts member `i` again on its data directory.
    pub(crate) fn restart(&mut self, i: usize) {
        self.kill9(i);
        self.spawn(i);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            self.kill9(i);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
