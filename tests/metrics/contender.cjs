// The Prometheus test's Node program (scripts/metrics.sh), written as an Express service exposes
// Tenure to operators: the OpenTelemetry SDK with its Prometheus exporter as the global meter
// provider, require('tenure') (which reports to it by itself), and Express routes for /metrics
// and a /healthz that fails when the election's loop stopped renewing. It joins an election,
// waits for `go` on stdin, takes the shared lock OPS times, says `done OPS`, holds a lock of its
// own under keepAlive (`holding`; the test pauses it past the lease: `lost`), and serves until
// SIGTERM.
//
// Usage: node contender.cjs URL PORT OPS
'use strict';

const express = require('express');
const { metrics } = require('@opentelemetry/api');
const { MeterProvider } = require('@opentelemetry/sdk-metrics');
const { PrometheusExporter } = require('@opentelemetry/exporter-prometheus');
const { openBackend, LeaderElection, Lock } = require('tenure');

const [url, port, ops] = process.argv.slice(2);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

(async () => {
  const exporter = new PrometheusExporter({ preventServerStart: true });
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [exporter] }));
  const backend = await openBackend(url);
  const election = new LeaderElection('metrics-leader', backend);
  election.start();

  const app = express();
  app.get('/metrics', (req, res) => exporter.getMetricsRequestHandler(req, res));
  app.get('/healthz', (req, res) => {
    const { healthy, reason } = election.health(10_000);
    res.status(healthy ? 200 : 503).json({ healthy, reason });
  });
  const server = app.listen(Number(port), '127.0.0.1');

  const lock = new Lock('metrics-shared', backend, { leaseDuration: 10_000 });
  // The test says `go` once Prometheus has scraped this program.
  await new Promise((resolve) => process.stdin.once('data', resolve));
  process.stdin.pause();
  for (let i = 0; i < Number(ops); i++) {
    await lock.using(() => sleep(50), { timeout: 60_000 });
    await sleep(50);
  }
  console.log(`done ${ops}`);
  const own = new Lock('metrics-held-node', backend, { leaseDuration: 2000 });
  const handle = await own.acquire();
  handle.keepAlive(3_600_000);
  console.log('holding');
  await handle.lost();
  console.log('lost');
  process.on('SIGTERM', async () => {
    await election.stop();
    server.close();
    process.exit(0);
  });
})();
