//! A master, its replicas and its sentinels, all of the test's own on free loopback ports:
//! Redis as a fleet that outgrew one server runs it. The sentinels judge a master down after
//! 1 s of silence and fail it over; the test kills, freezes and restarts servers to make them.
//! (With 500 ms the sentinels judge each newly promoted master down before their first ping
//! returns and fail over again and again, leaving two masters that both take writes.)

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use redis::FromRedisValue;

use super::server::Server;

/// The name the sentinels watch the master under.
pub const MASTER: &str = "mymaster";

/// One group: the servers (the first started as master) and the sentinels watching them.
pub struct Group {
    pub servers: Vec<Server>,
    sentinels: Vec<Sentinel>,
    /// The folder of the certificates every server and sentinel speaks TLS with, if they do.
    tls: Option<PathBuf>,
}

struct Sentinel {
    port: u16,
    dir: PathBuf,
    child: Child,
    password: Option<String>,
    tls: bool,
}

impl Group {
    /// A master with `replicas` replicas and `sentinels` sentinels (a majority of which must
    /// agree that the master is down), once every replica is in sync and every sentinel knows
    /// the replicas and the other sentinels — so a failover can happen from then on.
    pub fn start(replicas: usize, sentinels: usize) -> Self {
        Self::started(replicas, sentinels, None, None, None)
    }

    /// One whose replication links leave from the loopback address `source` (127.0.0.2, say):
    /// a rule dropping what is sent to `source` cuts every replica from its master, and nothing
    /// else (the sentinels and the clients connect from 127.0.0.1).
    pub fn replicating_from(replicas: usize, sentinels: usize, source: &str) -> Self {
        Self::started(replicas, sentinels, None, None, Some(source))
    }

    /// One whose sentinels run with `requirepass password`.
    pub fn with_sentinel_password(replicas: usize, sentinels: usize, password: &str) -> Self {
        Self::started(replicas, sentinels, Some(password), None, None)
    }

    /// One where every server and sentinel speaks only TLS, with certificates (for localhost and
    /// 127.0.0.1) signed by the authority in `certs` (`ca.pem`).
    pub fn with_tls(replicas: usize, sentinels: usize, certs: &std::path::Path) -> Self {
        tenure_conformance::tls::certificates(certs);
        Self::started(replicas, sentinels, None, Some(certs.to_owned()), None)
    }

    fn started(
        replicas: usize,
        sentinels: usize,
        password: Option<&str>,
        tls: Option<PathBuf>,
        source: Option<&str>,
    ) -> Self {
        let master = Server::in_group(None, tls.as_deref(), source);
        let mut servers = vec![master];
        for _ in 0..replicas {
            let replica = Server::in_group(Some(servers[0].port()), tls.as_deref(), source);
            servers.push(replica);
        }
        let quorum = sentinels / 2 + 1;
        let sentinels =
            (0..sentinels).map(|_| Sentinel::start(servers[0].port(), quorum, password, tls.as_deref())).collect();
        let group = Self { servers, sentinels, tls };
        group.wait_until_ready(replicas);
        group
    }

    fn wait_until_ready(&self, replicas: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let master = self.servers[0].port();
        while !self.ready(master, replicas) {
            assert!(Instant::now() < deadline, "the sentinel group did not become ready");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn ready(&self, master: u16, replicas: usize) -> bool {
        self.online_replicas(master) == replicas
            && self.sentinels.iter().all(|s| {
                let known: Vec<redis::Value> =
                    s.query(redis::cmd("SENTINEL").arg("replicas").arg(MASTER)).unwrap_or_default();
                let peers: Vec<redis::Value> =
                    s.query(redis::cmd("SENTINEL").arg("sentinels").arg(MASTER)).unwrap_or_default();
                known.len() == replicas && peers.len() == self.sentinels.len() - 1
            })
    }

    /// `redis+sentinel://` (`rediss+sentinel://` with TLS) naming every sentinel, the master
    /// and database 0.
    pub fn url(&self) -> String {
        let nodes: Vec<String> = self.sentinels.iter().map(|s| format!("127.0.0.1:{}", s.port)).collect();
        let scheme = if self.tls.is_some() { "rediss+sentinel" } else { "redis+sentinel" };
        format!("{scheme}://{}/{MASTER}/0", nodes.join(","))
    }

    /// One command to the server on `port` of this group.
    fn query<T: FromRedisValue>(&self, port: u16, cmd: &redis::Cmd) -> redis::RedisResult<T> {
        query_as(port, None, self.tls.is_some(), cmd)
    }

    /// The master's port as the first sentinel that answers names it.
    pub fn master_port(&self) -> u16 {
        for sentinel in &self.sentinels {
            let cmd = redis::cmd("SENTINEL").arg("get-master-addr-by-name").arg(MASTER).clone();
            if let Ok((_, port)) = sentinel.query::<(String, u16)>(&cmd) {
                return port;
            }
        }
        panic!("no sentinel names the master");
    }

    /// The server on `port`.
    pub fn server(&mut self, port: u16) -> &mut Server {
        self.servers.iter_mut().find(|s| s.port() == port).expect("a server of the group")
    }

    /// Waits until the master the sentinels name has `replicas` replicas attached and in sync,
    /// whichever server that is by then (a loaded machine may see the sentinels fail over
    /// again); its port.
    pub fn wait_for_synced_master(&self, replicas: usize, within: Duration) -> u16 {
        let deadline = Instant::now() + within;
        loop {
            let port = self.master_port();
            if self.is_master(port) && self.online_replicas(port) >= replicas {
                return port;
            }
            assert!(
                Instant::now() < deadline,
                "no master with {replicas} replicas in sync within {within:?}\n{}",
                self.describe()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// How many replicas of the server on `port` are attached and in sync (`state=online`).
    fn online_replicas(&self, port: u16) -> usize {
        let info: String = self.query(port, redis::cmd("INFO").arg("replication")).unwrap_or_default();
        info.lines().filter(|l| l.starts_with("slave") && l.contains("state=online")).count()
    }

    /// Waits until the sentinels name a master other than `old` and it answers as one; its port.
    pub fn wait_for_new_master(&self, old: u16, within: Duration) -> u16 {
        let deadline = Instant::now() + within;
        loop {
            let port = self.master_port();
            if port != old && self.is_master(port) {
                return port;
            }
            assert!(Instant::now() < deadline, "no failover away from {old} within {within:?}\n{}", self.describe());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether the server on `port` answers `ROLE` as a master.
    fn is_master(&self, port: u16) -> bool {
        let role: Vec<redis::Value> = self.query(port, &redis::cmd("ROLE")).unwrap_or_default();
        role.first().and_then(|v| String::from_redis_value(v.clone()).ok()).as_deref() == Some("master")
    }

    /// What each server says of its replication, what each sentinel names as the master, and
    /// the end of each sentinel's log: for the message of a failed wait.
    fn describe(&self) -> String {
        let mut text = String::new();
        for server in &self.servers {
            let info = self
                .query::<String>(server.port(), redis::cmd("INFO").arg("replication"))
                .unwrap_or_else(|e| format!("({e})"));
            let kept = ["role", "master_port", "master_link_status", "slave"];
            let lines: Vec<&str> = info.lines().filter(|l| kept.iter().any(|k| l.starts_with(k))).collect();
            text += &format!("server {}: {}\n", server.port(), lines.join(" "));
        }
        for sentinel in &self.sentinels {
            let cmd = redis::cmd("SENTINEL").arg("get-master-addr-by-name").arg(MASTER).clone();
            let named = sentinel.query::<(String, u16)>(&cmd).map_or_else(|e| format!("({e})"), |(_, p)| p.to_string());
            let log = std::fs::read_to_string(sentinel.dir.join("sentinel.log")).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            let tail = lines[lines.len().saturating_sub(40)..].join("\n");
            text += &format!("sentinel {} names {named}; its log ends:\n{tail}\n", sentinel.port);
        }
        text
    }
}

impl Sentinel {
    fn start(master: u16, quorum: usize, password: Option<&str>, tls: Option<&std::path::Path>) -> Self {
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let dir = std::env::temp_dir().join(format!("tenure-sentinel-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("sentinel dir");
        let config = dir.join("sentinel.conf");
        let text = format!(
            "port {port}\nbind 127.0.0.1\ndaemonize no\ndir {}\nlogfile sentinel.log\n\
             sentinel monitor {MASTER} 127.0.0.1 {master} {quorum}\n\
             sentinel down-after-milliseconds {MASTER} 1000\n\
             sentinel failover-timeout {MASTER} 5000\n\
             sentinel parallel-syncs {MASTER} 2\n",
            dir.display()
        ) + &password.map(|p| format!("requirepass {p}\nsentinel sentinel-pass {p}\n")).unwrap_or_default()
            + &tls.map(|certs| tls_settings(port, certs)).unwrap_or_default();
        std::fs::write(&config, text).expect("sentinel config");
        let child = Command::new("redis-server")
            .arg(&config)
            .arg("--sentinel")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server --sentinel");
        let sentinel = Self { port, dir, child, password: password.map(str::to_owned), tls: tls.is_some() };
        let deadline = Instant::now() + Duration::from_secs(10);
        while sentinel.query::<String>(&redis::cmd("PING")).is_err() {
            assert!(Instant::now() < deadline, "the sentinel on {port} did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        sentinel
    }

    fn query<T: FromRedisValue>(&self, cmd: &redis::Cmd) -> redis::RedisResult<T> {
        query_as(self.port, self.password.as_deref(), self.tls, cmd)
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One command to the server or sentinel on `port`, on a connection of its own.
pub fn query<T: FromRedisValue>(port: u16, cmd: &redis::Cmd) -> redis::RedisResult<T> {
    query_as(port, None, false, cmd)
}

/// The TLS lines of a configuration listening on `port` with the certificates in `certs`: TLS
/// only, replication and sentinel links over TLS too.
pub fn tls_settings(port: u16, certs: &std::path::Path) -> String {
    let file = |name: &str| certs.join(name).display().to_string();
    format!(
        "port 0\ntls-port {port}\ntls-cert-file {}\ntls-key-file {}\ntls-ca-cert-file {}\ntls-auth-clients no\n\
         tls-replication yes\n",
        file("server.pem"),
        file("server.key"),
        file("ca.pem")
    )
}

fn query_as<T: FromRedisValue>(
    port: u16,
    password: Option<&str>,
    tls: bool,
    cmd: &redis::Cmd,
) -> redis::RedisResult<T> {
    let auth = password.map(|p| format!(":{p}@")).unwrap_or_default();
    let url = if tls {
        format!("rediss://{auth}127.0.0.1:{port}#insecure")
    } else {
        format!("redis://{auth}127.0.0.1:{port}")
    };
    let client = redis::Client::open(url)?;
    let mut connection = client.get_connection_with_timeout(Duration::from_millis(300))?;
    connection.set_read_timeout(Some(Duration::from_millis(500)))?;
    cmd.query(&mut connection)
}
