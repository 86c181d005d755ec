// The Prometheus test's Node program (scripts/metrics.sh), written as a Node user exposes
// metrics: the OpenTelemetry SDK with its Prometheus exporter as the global meter provider, and
// require('tenure') (which reports to it by itself). It joins an election, waits for `go` on
// stdin, takes the shared lock OPS times, says `done OPS`, holds a lock of its own under
// keepAlive (`holding`; the test pauses it past the lease: `lost`), and serves its metrics until
// SIGTERM.
//
// Usage: node contender.cjs URL PORT OPS
'use strict';

const { metrics } = require('@opentelemetry/api');
const { MeterProvider } = require('@opentelemetry/sdk-metrics');
const { PrometheusExporter } = require('@opentelemetry/exporter-prometheus');
const { openBackend, LeaderElection, Lock } = require('tenure');

const [url, port, ops] = process.argv.slice(2);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

(async () => {
  const exporter = new PrometheusExporter({ host: '127.0.0.1', port: Number(port) });
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [exporter] }));
  const backend = await openBackend(url);
  const election = new LeaderElection('metrics-leader', backend);
  election.start();
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
    await exporter.shutdown();
    process.exit(0);
  });
})();
