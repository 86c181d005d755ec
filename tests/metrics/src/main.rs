//! The Prometheus test's Rust program (`scripts/metrics.sh`), written as a Rust user exposes
//! Tenure's metrics to Prometheus: the OpenTelemetry SDK with the Prometheus exporter, Tenure's
//! sink installed, and `/metrics` served. It then contends with the Python and Node programs:
//! it joins an election, waits for `go` on stdin, takes the shared lock OPS times, says `done OPS`, holds a lock of its
//! own under a keep-alive (`holding`; the test pauses it past the lease: `lost`), and serves its
//! metrics until SIGTERM.
//!
//! Usage: tenure-metrics-contender URL PORT OPS
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::Duration;

use opentelemetry_sdk::metrics::SdkMeterProvider;
use prometheus::{Encoder, TextEncoder};
use tenure_tokio::{Coordination, Tokio};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
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
    let listener = TcpListener::bind(("127.0.0.1", port.parse::<u16>()?)).await?;
    tokio::spawn(serve(listener, registry));

    let store = tenure_open::open(url, Tokio::current()).await?;
    let coordination = Coordination::new(Tokio::current()).source(&store);
    let election = coordination.leader_election("metrics-leader")?.build()?;
    election.start();
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
    tokio::signal::ctrl_c().await?;
    election.stop().await;
    Ok(())
}

/// Serves the registry's text format to every request (one scrape per connection).
async fn serve(listener: TcpListener, registry: prometheus::Registry) {
    loop {
        let Ok((mut stream, _)) = listener.accept().await else { continue };
        let registry = registry.clone();
        tokio::spawn(async move {
            let mut head = [0_u8; 4096];
            let _ = stream.read(&mut head).await;
            let mut body = Vec::new();
            let encoder = TextEncoder::new();
            if encoder.encode(&registry.gather(), &mut body).is_err() {
                body.clear();
            }
            let answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                encoder.format_type(),
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes()).await;
            let _ = stream.write_all(&body).await;
            let _ = stream.shutdown().await;
        });
    }
}
