// The driver's metrics and spans through @opentelemetry/api, as a user turns them on: an SDK
// meter provider and tracer provider registered globally (after requiring tenure), then locks and
// elections used as usual.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { spawnSync } from 'node:child_process';
import { metrics, trace } from '@opentelemetry/api';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { LeaderElection, Lock, SettingsValidationError, memoryBackend, telemetry } from 'tenure';
import { fresh, sleep } from './stores.mjs';

class Reader extends MetricReader {
  async onForceFlush() {}
  async onShutdown() {}
}
const reader = new Reader();
metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
const spans = new InMemorySpanExporter();
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }));

/** The data points of `instrument` about the lock `name`. */
async function points(instrument, name) {
  const { resourceMetrics } = await reader.collect();
  const found = [];
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const metric of scope.metrics) {
      if (metric.descriptor.name !== instrument) continue;
      found.push(...metric.dataPoints.filter((point) => point.attributes.name === name));
    }
  }
  return found;
}

/** Measurements cross from the driver's thread at the loop's next turns: wait for them. */
async function eventually(what, fn, ms = 10_000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const value = await fn();
    if (value) return value;
    await sleep(20);
  }
  throw new Error(`timed out waiting for ${what}`);
}

test('telemetry is on when @opentelemetry/api can be required', () => {
  assert.equal(telemetry.enabled(), true);
});

test('a lock cycle reaches the SDK as metrics and spans, with no token in them', async () => {
  const name = fresh('telemetry');
  const handle = await new Lock(name, memoryBackend()).acquire();
  const fence = Number(handle.fencingToken);
  await handle.release();

  const acquired = await eventually('the acquire histogram', async () => {
    const found = (await points('tenure.lock.acquire.duration', name)).filter((p) => p.attributes.outcome === 'acquired');
    return found.length ? found : null;
  });
  assert.equal(acquired[0].value.count, 1);
  const [holders] = await points('tenure.lock.holders', name);
  assert.equal(holders.value, 0, 'read when collecting: the lease was released');
  const [fencePoint] = await points('tenure.lock.fence', name);
  assert.equal(fencePoint.value, fence);
  const ours = await eventually('the three spans', () => {
    const found = spans.getFinishedSpans().filter((span) => span.attributes.name === name);
    return found.length >= 3 ? found : null;
  });
  assert.deepEqual(ours.map((span) => span.name), ['tenure.acquire', 'tenure.hold', 'tenure.release']);
  for (const span of ours) {
    assert.equal(span.attributes.fence, fence);
    assert.equal(span.attributes.primitive, 'lock');
    // Only these attributes: nothing else (no ownership token) rides on a span.
    const allowed = ['name', 'primitive', 'fence', 'outcome', 'cause'];
    assert.deepEqual(Object.keys(span.attributes).filter((key) => !allowed.includes(key)), []);
  }
});

test('an election reports one leader, its changes, and its health', async () => {
  const name = fresh('telemetry-election');
  const election = new LeaderElection(name, memoryBackend(), {
    leaseDuration: 5000, renewDeadline: 4000, retryInterval: 100, backendTimeout: 1000, envLoad: false,
  });
  const led = once(election, 'leader');
  election.start();
  await led;
  assert.deepEqual(election.health(10_000), { healthy: true, reason: 'healthy' });
  await eventually('the leader gauge at 1', async () => (await points('tenure.election.leader', name))[0]?.value === 1);
  await election.stop();
  await eventually('the leader gauge at 0', async () => (await points('tenure.election.leader', name))[0]?.value === 0);
  const changes = await eventually('both changes', async () => {
    const found = await points('tenure.election.changes', name);
    return found.length === 2 ? found : null;
  });
  assert.deepEqual(changes.map((p) => p.attributes.outcome).sort(), ['elected', 'stopped']);
  for (const bad of [-1, 0, Number.NaN]) {
    assert.throws(() => election.health(bad), SettingsValidationError);
  }
});

test('without @opentelemetry/api, or turned off, nothing is measured', () => {
  const program = (setup) => `${setup}
const tenure = require('tenure');
if (tenure.telemetry.enabled()) throw new Error('measuring');
tenure.memoryBackend();
console.log('ok');`;
  const hide = `const Module = require('node:module');
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request === '@opentelemetry/api') throw Object.assign(new Error('hidden'), { code: 'MODULE_NOT_FOUND' });
  return resolve.call(this, request, ...rest);
};`;
  for (const [setup, env] of [[hide, {}], ['', { TENURE_TELEMETRY: 'off' }]]) {
    const done = spawnSync(process.execPath, ['-e', program(setup)], { env: { ...process.env, ...env }, encoding: 'utf8' });
    assert.equal(done.status, 0, done.stderr);
    assert.equal(done.stdout.trim(), 'ok');
  }
});
