//! `cargo bench -p tenure-redis --bench replicas`: what `min_replicas=1` costs one task's
//! acquire + release, beside the plain cycle on the same master in the same run. The bench starts
//! its own master and replica (`redis-server` on free loopback ports, no persistence) and
//! times, in interleaved batches: the plain cycle, the cycle with `min_replicas=1`, and the floor
//! of a confirmed write (`SET` + `WAIT 1` in one pipeline of the `redis` crate). Prints medians
//! and ratios; asserts nothing.
#![allow(clippy::print_stdout)]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tenure_conformance::Store;
use tenure_conformance::bench::{self, BATCH, BATCHES, Step, us};
use tenure_redis::RedisOptions;

/// A `redis-server` of the bench's own, killed on drop.
struct Server {
    port: u16,
    child: Child,
    dir: std::path::PathBuf,
}

impl Server {
    fn start(replica_of: Option<u16>) -> Self {
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        // A replica's full sync still writes an RDB file: in a folder of the bench's own.
        let dir = std::env::temp_dir().join(format!("tenure-bench-replicas-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a folder");
        let mut args = vec!["--port".to_owned(), port.to_string(), "--bind".into(), "127.0.0.1".into()];
        args.extend(["--save", "", "--appendonly", "no", "--dir"].map(str::to_owned));
        args.push(dir.display().to_string());
        if let Some(master) = replica_of {
            args.extend(["--replicaof".to_owned(), "127.0.0.1".into(), master.to_string()]);
        }
        let child = Command::new("redis-server")
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server");
        let server = Self { port, child, dir };
        server.wait_until(|info| !info.is_empty());
        server
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Waits until `INFO replication` satisfies `ready`.
    fn wait_until(&self, ready: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let info = redis::Client::open(self.url())
                .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(200)))
                .and_then(|mut c| redis::cmd("INFO").arg("replication").query::<String>(&mut c))
                .unwrap_or_default();
            if ready(&info) {
                return;
            }
            assert!(Instant::now() < deadline, "the server on {} is not ready", self.port);
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn store(url: &str) -> Store {
    let prefix = format!("tenure-bench-replicas-{}:", std::process::id());
    let backend = RedisOptions::from_url(url).expect("url").prefix(prefix).open(tenure_tokio::Tokio::current());
    Store::of(backend.await.expect("open Redis"))
}

/// `SET` + `WAIT 1 1000` in one pipeline of the client library: a confirmed write's floor.
async fn confirmed_write<'a>(url: &str) -> Step<'a> {
    let client = redis::Client::open(url).expect("client");
    let con = client.get_multiplexed_async_connection().await.expect("connection");
    Box::new(move || {
        let mut con = con.clone();
        Box::pin(async move {
            let (_, acked): (String, i64) = redis::pipe()
                .cmd("SET")
                .arg("tenure-bench-replicas-floor")
                .arg("1")
                .cmd("WAIT")
                .arg(1)
                .arg(1000)
                .query_async(&mut con)
                .await
                .expect("set + wait");
            assert_eq!(acked, 1, "the replica acknowledged");
        })
    })
}

fn main() {
    let master = Server::start(None);
    let replica = Server::start(Some(master.port));
    master.wait_until(|info| info.lines().any(|l| l.starts_with("slave0") && l.contains("state=online")));
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("tokio");
    runtime.block_on(async {
        let plain = store(&master.url()).await;
        let waiting = store(&format!("{}?min_replicas=1", master.url())).await;
        let mut steps: [Step<'_>; 3] =
            [bench::one_task_step(&plain), bench::one_task_step(&waiting), confirmed_write(&master.url()).await];
        let medians = bench::per_call_each(&mut steps).await;
        let (plain, waiting, floor) = (us(medians[0]), us(medians[1]), us(medians[2]));
        println!(
            "Redis master + 1 replica on loopback, one task's acquire + release on tokio (2 worker threads; medians \
             of {BATCHES} interleaved batches of {BATCH}):"
        );
        println!("  plain:                       {plain:>8.1} us");
        println!("  min_replicas=1:              {waiting:>8.1} us = {:.2} x plain", waiting / plain);
        println!("  floor, SET + WAIT 1 (redis crate): {floor:>8.1} us");
    });
    drop(replica);
}
