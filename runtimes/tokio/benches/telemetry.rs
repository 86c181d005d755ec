//! `cargo bench -p tenure-tokio --bench telemetry`: what the driver's telemetry costs a cycle.
//!
//! Acquire + release cycles on the memory backend and on Redis (`TENURE_BENCH_REDIS`, default
//! `redis://127.0.0.1:6379`; skipped, with a line saying so, when unreachable), each measured with
//! no sink installed, with the OpenTelemetry SDK's metrics (every instrument aggregated by a meter
//! provider with a reader; a no-op tracer), and with its metrics and spans (every span batched to
//! an exporter), in rounds taking the three in turn so that a machine's drift hits all alike; the
//! ratios are the figures.
//!
//! `telemetry cycles N none|otel` runs N memory cycles on a current-thread runtime and exits: run
//! it under `valgrind --tool=callgrind` at two values of N for instructions per cycle (what
//! `scripts/bench-telemetry.sh` does), a count that does not drift.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::cast_precision_loss)]

use std::time::{Duration, Instant};

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::{ManualReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use tenure::telemetry::{self, opentelemetry::OpenTelemetry};
use tenure::{Lock, LockBackend, MemoryBackend};
use tenure_tokio::Tokio;

/// An exporter that takes every batch and keeps nothing (the cost measured is the SDK's).
#[derive(Debug)]
struct Discard;

impl SpanExporter for Discard {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        drop(batch);
        Ok(())
    }
}

/// The SDK's providers: a meter provider with a reader, a tracer provider batching to [`Discard`].
fn providers() -> (SdkMeterProvider, SdkTracerProvider) {
    let meters = SdkMeterProvider::builder().with_reader(ManualReader::builder().build()).build();
    let tracers = SdkTracerProvider::builder().with_batch_exporter(Discard).build();
    (meters, tracers)
}

/// The sinks compared.
#[derive(Clone, Copy)]
enum Sink {
    None,
    /// The SDK's metrics, spans to a no-op tracer.
    Metrics,
    MetricsAndSpans,
}

fn install(sink: Sink, (meters, tracers): &(SdkMeterProvider, SdkTracerProvider)) {
    let meter = meters.meter("tenure");
    match sink {
        Sink::None => telemetry::uninstall(),
        Sink::Metrics => {
            let tracer = opentelemetry::trace::noop::NoopTracer::new();
            telemetry::install(std::sync::Arc::new(OpenTelemetry::new(&meter, tracer)));
        }
        Sink::MetricsAndSpans => {
            telemetry::install(std::sync::Arc::new(OpenTelemetry::new(&meter, tracers.tracer("tenure"))));
        }
    }
}

fn lock(rt: &Tokio, backend: impl LockBackend, name: &str) -> Lock<Tokio> {
    Lock::builder(name, rt.clone()).backend(backend).env_load(false).build().unwrap()
}

async fn cycles(lock: &Lock<Tokio>, n: u32) -> Duration {
    let started = Instant::now();
    for _ in 0..n {
        lock.acquire().await.unwrap().release().await.unwrap();
    }
    started.elapsed() / n
}

/// Median time per cycle with each sink, over `rounds` rounds taking the sinks in turn.
async fn compare(lock: &Lock<Tokio>, batch: u32, rounds: usize) -> [Duration; 3] {
    let sinks = [Sink::None, Sink::Metrics, Sink::MetricsAndSpans];
    let mut times: [Vec<Duration>; 3] = Default::default();
    let providers = providers();
    cycles(lock, batch).await;
    for _ in 0..rounds {
        for (sink, times) in sinks.iter().zip(&mut times) {
            install(*sink, &providers);
            times.push(cycles(lock, batch).await);
        }
    }
    telemetry::uninstall();
    times.map(|mut times| {
        times.sort();
        times[rounds / 2]
    })
}

fn report(what: &str, [none, metrics, both]: [Duration; 3]) {
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let ratio = |d: Duration| d.as_secs_f64() / none.as_secs_f64();
    println!("  {what}: {:.2} µs with no sink", us(none));
    println!("    the SDK's metrics:           {:>9.2} µs = {:.3}×", us(metrics), ratio(metrics));
    println!("    the SDK's metrics and spans: {:>9.2} µs = {:.3}×", us(both), ratio(both));
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|arg| arg != "--bench").collect();
    if let [cycles_arg, n, mode] = args.as_slice()
        && cycles_arg == "cycles"
    {
        // On one thread: the instruction count is the same every run.
        let n: u32 = n.parse().unwrap();
        let single = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let rt = Tokio::from_handle(single.handle().clone());
        let providers = providers();
        install(if mode == "otel" { Sink::MetricsAndSpans } else { Sink::None }, &providers);
        single.block_on(async {
            cycles(&lock(&rt, MemoryBackend::new(), "bench"), n).await;
        });
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let rt = Tokio::from_handle(runtime.handle().clone());
    println!("tenure telemetry benchmarks (tokio, 2 workers; median of rounds taking the sinks in turn)");
    runtime.block_on(async {
        let memory = lock(&rt, MemoryBackend::new(), "bench");
        report("memory backend, acquire + release", compare(&memory, 10_000, 21).await);
        let url = std::env::var("TENURE_BENCH_REDIS").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
        match tenure_open::open(&url, rt.clone()).await {
            Ok(store) => {
                let redis = Lock::builder("bench-telemetry", rt.clone())
                    .shared_backend(store.locks())
                    .env_load(false)
                    .build()
                    .unwrap();
                report("redis, acquire + release", compare(&redis, 100, 151).await);
            }
            Err(e) => println!("  redis: skipped ({e})"),
        }
    });
}
