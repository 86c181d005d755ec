//! Network partitions between a client and the store, cut in the kernel: each client process runs
//! in a cgroup of its own (cgroup v2, made by the harness), and an nftables rule drops every packet
//! its sockets send to the store's ports, so its connections stall and its new ones never open,
//! as behind a cut cable. An etcd member runs in a cgroup of its own too, and is cut from another
//! by rules dropping what each sends to the other's peer port. (Network namespaces would need the stores to listen beyond loopback,
//! and a Sentinel or an etcd member hands out loopback addresses; a cgroup needs neither.)

use std::path::PathBuf;
use std::process::Command;

/// The cgroups of one run's clients (and store members) and its nftables table, removed when
/// dropped.
#[derive(Debug)]
pub(crate) struct Cut {
    /// The run's cgroup folder (`…/tenure-jepsen-PID`), at the root of the cgroup v2 hierarchy.
    dir: PathBuf,
    /// The folder's path as nft names it: relative to /sys/fs/cgroup.
    nft_path: String,
    table: String,
}

impl Cut {
    /// Makes the cgroups (one per client, `clients` of them, and one per store member, `members`
    /// of them) and the table.
    pub(crate) fn new(clients: usize, members: usize) -> Result<Self, String> {
        let root = cgroup2_root()?;
        let name = format!("tenure-jepsen-{}", std::process::id());
        let dir = root.join(&name);
        let relative = root.strip_prefix("/sys/fs/cgroup").map_err(|_| {
            format!("cgroup v2 is mounted at {}, outside /sys/fs/cgroup, where nft looks", root.display())
        })?;
        let nft_path = relative.join(&name).display().to_string();
        let groups = (0..clients).map(|i| format!("c{i}")).chain((0..members).map(|i| format!("m{i}")));
        for group in groups {
            let group = dir.join(group);
            std::fs::create_dir_all(&group).map_err(|e| format!("cgroup {}: {e} (run as root)", group.display()))?;
        }
        let table = format!("tenure_jepsen_{}", std::process::id());
        let cut = Self { dir, nft_path, table };
        cut.nft(&format!("add table inet {}", cut.table))?;
        cut.nft(&format!("add chain inet {} out {{ type filter hook output priority 0; }}", cut.table))?;
        Ok(cut)
    }

    /// The file a process writes its pid to, to join client `index`'s cgroup.
    pub(crate) fn procs(&self, index: usize) -> PathBuf {
        self.dir.join(format!("c{index}")).join("cgroup.procs")
    }

    /// The file a process writes its pid to, to join store member `index`'s cgroup.
    pub(crate) fn member_procs(&self, index: usize) -> PathBuf {
        self.dir.join(format!("m{index}")).join("cgroup.procs")
    }

    /// Cuts client `index` from the store listening on `ports`.
    pub(crate) fn cut(&self, index: usize, ports: &[u16]) -> Result<(), String> {
        self.drop_from(&format!("c{index}"), ports)
    }

    /// Cuts store members `a` and `b` from each other, `peers` being every member's peer port:
    /// neither reaches the other's (a connection either opened stalls, a new one never opens).
    pub(crate) fn cut_members(&self, a: usize, b: usize, peers: &[u16]) -> Result<(), String> {
        self.drop_from(&format!("m{a}"), &[peers[b]])?;
        self.drop_from(&format!("m{b}"), &[peers[a]])
    }

    /// Drops every packet sent to the loopback address `address` (a Sentinel group's replicas
    /// connect to their master from one of their own: this cuts replication alone).
    pub(crate) fn drop_to(&self, address: &str) -> Result<(), String> {
        self.nft(&format!("add rule inet {} out ip daddr {address} drop", self.table))
    }

    /// Drops what the sockets of cgroup `group` send to `ports`.
    fn drop_from(&self, group: &str, ports: &[u16]) -> Result<(), String> {
        let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
        let group = format!("\"{}/{group}\"", self.nft_path.trim_start_matches('/'));
        let rule = format!(
            "add rule inet {} out socket cgroupv2 level 2 {group} tcp dport {{ {} }} drop",
            self.table,
            ports.join(", ")
        );
        self.nft(&rule)
    }

    /// Heals every cut.
    pub(crate) fn heal(&self) -> Result<(), String> {
        self.nft(&format!("flush chain inet {} out", self.table))
    }

    fn nft(&self, command: &str) -> Result<(), String> {
        let output = Command::new("nft").args(command.split_whitespace()).output();
        let output = output.map_err(|e| format!("nft (apt-get install nftables): {e}"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!("nft {command}: {}", String::from_utf8_lossy(&output.stderr).trim()))
        }
    }
}

impl Drop for Cut {
    fn drop(&mut self) {
        let _ = self.nft(&format!("delete table inet {}", self.table));
        if let Ok(groups) = std::fs::read_dir(&self.dir) {
            for group in groups.flatten().filter(|g| g.path().is_dir()) {
                let _ = std::fs::remove_dir(group.path());
            }
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// `command`, run by a shell that first moves itself into the cgroup whose `cgroup.procs` is
/// `procs` (so that every socket of the process and its children is of that cgroup).
pub(crate) fn in_cgroup(command: &Command, procs: &std::path::Path) -> Command {
    let mut wrapped = Command::new("sh");
    wrapped.arg("-c").arg(format!("echo $$ > '{}' && exec \"$0\" \"$@\"", procs.display()));
    wrapped.arg(command.get_program()).args(command.get_args());
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => wrapped.env(key, value),
            None => wrapped.env_remove(key),
        };
    }
    wrapped
}

/// Where the cgroup v2 hierarchy is mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` beside
/// v1 controllers).
fn cgroup2_root() -> Result<PathBuf, String> {
    let mounts = std::fs::read_to_string("/proc/mounts").map_err(|e| format!("/proc/mounts: {e}"))?;
    mounts
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.get(2) == Some(&"cgroup2"))
        .and_then(|f| f.get(1).map(PathBuf::from))
        .ok_or_else(|| "no cgroup v2 hierarchy is mounted: partitions need one".into())
}

/// The ports of every `host:port` in `url`.
pub(crate) fn ports_of(url: &str) -> Vec<u16> {
    let mut ports = Vec::new();
    for part in url.split(['/', ',', '@', '?']) {
        if let Some((_, port)) = part.rsplit_once(':')
            && let Ok(port) = port.parse::<u16>()
        {
            ports.push(port);
        }
    }
    ports
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;
    use std::process::Command;

    use super::{Cut, in_cgroup, ports_of};

    #[test]
    fn the_ports_of_a_store_url() {
        assert_eq!(ports_of("redis+sentinel://127.0.0.1:1,127.0.0.1:2/mymaster/0"), [1, 2]);
        assert_eq!(ports_of("postgresql://postgres@127.0.0.1:5432/postgres"), [5432]);
        assert_eq!(ports_of("etcd://127.0.0.1:7,127.0.0.1:8/?prefix=j/&connect_timeout=1"), [7, 8]);
        assert!(ports_of("sqlite:///tmp/x.sqlite3").is_empty());
    }

    /// Whether a process of client 0's cgroup connects to `port` within a second.
    fn connects(cut: &Cut, port: u16) -> bool {
        let probe = format!("import socket; socket.create_connection(('127.0.0.1', {port}), timeout=1)");
        let mut python = Command::new("python3");
        python.args(["-c", &probe]);
        in_cgroup(&python, &cut.procs(0)).status().expect("python3").success()
    }

    #[test]
    fn a_cut_client_cannot_reach_the_store_and_a_healed_one_can() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
        let port = listener.local_addr().expect("an address").port();
        let cut = Cut::new(1, 0).expect("cgroups and nftables (run as root)");
        assert!(connects(&cut, port), "before the cut");
        cut.cut(0, &[port]).expect("cut");
        assert!(!connects(&cut, port), "cut");
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(), "only the client is cut");
        cut.heal().expect("healed");
        assert!(connects(&cut, port), "healed");
    }
}
