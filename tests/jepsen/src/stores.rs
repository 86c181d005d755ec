//! The stores a run starts on free ports, each with the faults it can suffer. The servers are the
//! ones the stores' own fault tests start (their files are compiled in here, not copied).

use std::path::PathBuf;
use std::time::Duration;

use tenure_conformance::faults::{self, Server as _};

use crate::partition::Cut;
use crate::servers::{etcd, postgres as postgres_server, sentinel, server as redis_server};

/// The loopback address a Sentinel group's replicas replicate from under the `lag` nemesis.
const REPLICATION_SOURCE: &str = "127.0.0.2";

/// The stores a run can use.
pub(crate) const KINDS: &[&str] = &["sqlite", "redis", "sentinel", "postgres", "etcd"];

/// A running store.
pub(crate) enum Store {
    /// One SQLite file every client opens (the clients' clocks are the store's clock).
    Sqlite(PathBuf),
    /// One Redis server, fsync on every write.
    Redis(redis_server::Server),
    /// A Redis master with two replicas and three sentinels; clients connect through the
    /// sentinels. Its replicas replicate from [`REPLICATION_SOURCE`] when replication is to be
    /// cut (the cut's table dropping what is sent there).
    Sentinel(sentinel::Group, Option<Cut>),
    /// One PostgreSQL server from `initdb`.
    Postgres(postgres_server::Server),
    /// Three etcd members; each in a cgroup of its own when members are to be cut from one
    /// another (the cut is dropped after the members, which leave their cgroups as they die).
    Etcd(etcd::cluster::Cluster, Option<Cut>),
}

impl Store {
    /// Starts the store `kind` (one of [`KINDS`]), its files under `dir`, ready for `nemesis`
    /// (etcd's members each in a cgroup for `isolate` and `bridge`; a Sentinel group's
    /// replication from an address of its own for `lag`).
    pub(crate) fn start(kind: &str, dir: &std::path::Path, nemesis: &str) -> Result<Self, String> {
        Ok(match kind {
            "etcd" if matches!(nemesis, "isolate" | "bridge") => {
                let cut = Cut::new(0, 3)?;
                let procs = (0..3).map(|i| Some(cut.member_procs(i))).collect();
                Self::Etcd(etcd::cluster::Cluster::start_in(procs), Some(cut))
            }
            "sqlite" => Self::Sqlite(dir.join("locks.sqlite3")),
            "redis" => Self::Redis(redis_server::Server::start()),
            "sentinel" if nemesis == "lag" => {
                let cut = Cut::new(0, 0)?;
                Self::Sentinel(sentinel::Group::replicating_from(2, 3, REPLICATION_SOURCE), Some(cut))
            }
            "sentinel" => Self::Sentinel(sentinel::Group::start(2, 3), None),
            "postgres" => Self::Postgres(postgres_server::Server::start()),
            "etcd" => Self::Etcd(etcd::cluster::Cluster::start(3), None),
            other => return Err(format!("no store {other:?} (the stores: {})", KINDS.join(", "))),
        })
    }

    /// The URL clients open.
    pub(crate) fn url(&self) -> String {
        match self {
            Self::Sqlite(path) => format!("sqlite://{}", path.display()),
            Self::Redis(server) => server.url(),
            Self::Sentinel(group, _) => group.url(),
            Self::Postgres(server) => server.url(),
            Self::Etcd(cluster, _) => cluster.url("jepsen/"),
        }
    }

    /// The ports clients reach the store on (a Sentinel group's: the sentinels' and the servers').
    pub(crate) fn ports(&self) -> Vec<u16> {
        let mut ports = crate::partition::ports_of(&self.url());
        if let Self::Sentinel(group, _) = self {
            ports.extend(group.servers.iter().map(|s| s.port()));
        }
        ports
    }

    /// The store faults this store can suffer (see [`Store::inject`]).
    pub(crate) fn faults(&self) -> &'static [&'static str] {
        match self {
            Self::Sqlite(_) => &[],
            Self::Redis(_) | Self::Postgres(_) => &["kill", "freeze"],
            Self::Sentinel(..) => &["failover", "lag"],
            Self::Etcd(..) => &["kill", "freeze", "leader", "quorum", "isolate", "bridge"],
        }
    }

    /// The one server of a single-server store.
    fn single(&mut self) -> Option<&mut dyn faults::Server> {
        match self {
            Self::Redis(server) => Some(server),
            Self::Postgres(server) => Some(server),
            _ => None,
        }
    }

    /// Injects `fault` for about `length`, then heals it; returns what was done, in words.
    /// - `kill`: SIGKILL (one member of etcd), restarted after `length`;
    /// - `freeze`: SIGSTOP (one member of etcd) for `length`, then SIGCONT;
    /// - `failover`: the Redis master killed, the sentinels promote a replica, the old master
    ///   comes back as a replica of it;
    /// - `lag`: a Sentinel group's replication cut for `length` (the master goes on granting,
    ///   its replicas see none of it), then the master killed and a replica promoted: what an
    ///   asynchronous replica that lags when its master dies is;
    /// - `leader`: etcd's leader killed, restarted after `length`;
    /// - `quorum`: two of etcd's three members killed (no quorum), restarted after `length`;
    /// - `isolate`: one etcd member cut from the other two for `length` (it has no quorum; they
    ///   have one);
    /// - `bridge`: two etcd members cut from each other for `length`, the third seeing both (what
    ///   Jepsen's majorities ring is with three members: each sees a majority, none the same).
    pub(crate) fn inject(&mut self, fault: &str, length: Duration, turn: usize) -> Result<String, String> {
        let nap = || std::thread::sleep(length);
        if let Some(server) = self.single() {
            match fault {
                "kill" => {
                    server.kill9();
                    nap();
                    server.restart();
                    return Ok("SIGKILL, restart".into());
                }
                "freeze" => {
                    server.freeze();
                    nap();
                    server.thaw();
                    return Ok("SIGSTOP, SIGCONT".into());
                }
                _ => {}
            }
        }
        Ok(match (self, fault) {
            (Self::Sentinel(group, _), "failover") => {
                let old = group.master_port();
                group.server(old).kill9();
                let new = group.wait_for_new_master(old, Duration::from_secs(60));
                group.server(old).restart_as_replica_of(new);
                group.wait_for_synced_master(2, Duration::from_secs(60));
                format!("master :{old} SIGKILL, :{new} promoted")
            }
            (Self::Sentinel(group, Some(cut)), "lag") => {
                let old = group.master_port();
                cut.drop_to(REPLICATION_SOURCE)?;
                nap();
                group.server(old).kill9();
                let new = group.wait_for_new_master(old, Duration::from_secs(60));
                // (healed once a replica is promoted: the dead master's unsent writes, which its
                // kernel still retransmits, must not reach it before)
                cut.heal()?;
                group.server(old).restart_as_replica_of(new);
                group.wait_for_synced_master(2, Duration::from_secs(60));
                format!("replication from :{old} cut, :{old} SIGKILL, :{new} promoted")
            }
            (Self::Etcd(cluster, _), "kill") => {
                let member = turn % 3;
                cluster.kill9(member);
                nap();
                cluster.restart(member);
                cluster.wait_healthy();
                format!("member {member} SIGKILL, restart")
            }
            (Self::Etcd(cluster, _), "freeze") => {
                let member = turn % 3;
                cluster.freeze(member);
                nap();
                cluster.thaw(member);
                format!("member {member} SIGSTOP, SIGCONT")
            }
            (Self::Etcd(cluster, _), "leader") => {
                let leader = cluster.leader();
                cluster.kill9(leader);
                nap();
                cluster.restart(leader);
                cluster.wait_healthy();
                format!("leader {leader} SIGKILL, restart")
            }
            (Self::Etcd(cluster, _), "quorum") => {
                let (a, b) = (turn % 3, (turn + 1) % 3);
                cluster.kill9(a);
                cluster.kill9(b);
                nap();
                cluster.restart(a);
                cluster.restart(b);
                cluster.wait_healthy();
                format!("members {a} and {b} SIGKILL (no quorum), restart")
            }
            (Self::Etcd(cluster, Some(cut)), "isolate") => {
                let member = turn % 3;
                let peers: Vec<u16> = (0..3).map(|i| cluster.peer_port(i)).collect();
                cut.cut_members(member, (member + 1) % 3, &peers)?;
                cut.cut_members(member, (member + 2) % 3, &peers)?;
                nap();
                cut.heal()?;
                format!("member {member} cut from the others")
            }
            (Self::Etcd(cluster, Some(cut)), "bridge") => {
                let (a, b) = (turn % 3, (turn + 2) % 3);
                let peers: Vec<u16> = (0..3).map(|i| cluster.peer_port(i)).collect();
                cut.cut_members(a, b, &peers)?;
                nap();
                cut.heal()?;
                format!("members {a} and {b} cut from each other, {} sees both", (turn + 1) % 3)
            }
            (store, fault) => {
                return Err(format!("the store cannot suffer {fault:?} (it can: {})", store.faults().join(", ")));
            }
        })
    }
}
