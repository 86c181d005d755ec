//! The Prometheus test's Rust program (`scripts/metrics.sh`), written as a Rust user exposes
//! Tenure to operators: the OpenTelemetry SDK with the Prometheus exporter and Tenure's sink
//! installed, and an axum server with `/metrics` and a `/healthz` route that fails when the
//! election's loop stopped renewing. It joins an election, waits for `go` on stdin, takes the
//! shared lock OPS times, says `done OPS`, holds a lock of its own under a keep-alive
//! (`holding`; the test pauses it past the lease: `lost`), and serves until SIGTERM.
//!
//! Usage: tenure-metrics-contender URL PORT OPS
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::Duration;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::routing::get;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use prometheus::{Encoder, TextEncoder};
use tenure_tokio::{Coordination, Tokio};
use tokio::io::AsyncBufReadExt;
use tokio::net::TcpListener;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, url, port, ops] = &args[..] else {
        return Err("usage: tenure-metrics-contender URL PORT OPS".into());
    };
    let ops: u32 = ops.parse()?;

    // What a Rust user writes: the SDK with the Prometheus exporter, then Tenure's sink.
    let registry = prometheus::Registry::new();
    let exporter = opentelemetry_prometheus::exporter().with_registry(registry.clone()).build()?;
    opentelemetry::global::set_meter_provider(SdkMeterProvider::builder().with_reader(exporter).build());
    tenure::telemetry::opentelemetry::install();

    let store = tenure_open::open(url, Tokio::current()).await?;
    let coordination = Coordination::new(Tokio::current()).source(&store);
    let election = coordination.leader_election("metrics-leader")?.build()?;
    election.start();

    // The routes an operator scrapes and probes.
    let leader = election.clone();
    let app = Router::new()
        .route(
            "/metrics",
            get(move || async move {
                let mut body = Vec::new();
                let _ = TextEncoder::new().encode(&registry.gather(), &mut body);
                ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], body)
            }),
        )
        .route(
            "/healthz",
            get(move || async move {
                let health = leader.health(Duration::from_secs(10));
                if health.is_healthy() {
                    (StatusCode::OK, "ok".to_owned())
                } else {
                    (StatusCode::SERVICE_UNAVAILABLE, health.to_string())
                }
            }),
        );
    let listener = TcpListener::bind(("127.0.0.1", port.parse::<u16>()?)).await?;
    tokio::spawn(async move { axum::serve(listener, app).await });

    let lock = coordination.lock("metrics-shared")?.lease_duration(Duration::from_secs(10)).build()?;
    // The test says `go` once Prometheus has scraped this program.
    tokio::io::BufReader::new(tokio::io::stdin()).read_line(&mut String::new()).await?;
    for _ in 0..ops {
        let guard = lock.acquire_timeout(Duration::from_secs(60)).await?;
        tokio::time::sleep(Duration::from_millis(50)).await;
        guard.release().await?;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!("done {ops}");

    let own = coordination.lock("metrics-held-rust")?.lease_duration(Duration::from_secs(2)).build()?;
    let kept = own.acquire().await?.keep_alive(Duration::from_secs(3600));
    println!("holding");
    kept.lost().await;
    println!("lost");
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    term.recv().await;
    election.stop().await;
    Ok(())
}
