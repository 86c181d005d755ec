// Coordination: one component wiring the backends, and the scope in which primitives built
// without a backend use it — as a grelmicro user writes `async with Coordination(...)`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  BackendScopeError, Coordination, CoordinationBackendError, LeaderElection, Lock, OutOfContextError,
  SettingsValidationError, TaskLock, memoryBackend, openBackend,
} from 'tenure';
import { fresh, sleep, storeUrls } from './stores.mjs';

test('primitives built without a backend use the enclosing run, in what it starts too', async () => {
  const store = await openBackend(storeUrls().redis);
  const coordination = new Coordination(store);
  const name = fresh('cart');
  await coordination.run(async () => {
    const handle = await new Lock(name).acquire();
    // A timer started inside the run resolves there too.
    const later = await new Promise((resolve) => setTimeout(() => resolve(new Lock(name, { retryInterval: 5 })), 5));
    assert.equal(await later.locked(), true);
    await handle.release();
    const election = new LeaderElection(fresh('worker'), { worker: 'node-1' });
    election.start();
    await election.waitForLeader();
    await election.stop();
    const run = await new TaskLock(fresh('nightly'), { minHoldDuration: 1000 }).enter();
    await run.exit();
  });
  assert.throws(() => new Lock(name), OutOfContextError);
  assert.throws(() => new LeaderElection(name), OutOfContextError);
  await store.close();
});

test('the component builds its primitives anywhere, and says which backend it lacks', async () => {
  const store = memoryBackend();
  const locksOnly = new Coordination(undefined, { lock: store, requires: 'process' });
  assert.equal(locksOnly.lockBackend, store);
  assert.equal(locksOnly.kind, 'coordination');
  assert.equal(locksOnly.name, 'default');
  const handle = await locksOnly.lock(fresh('anywhere')).acquire();
  await handle.release();
  assert.throws(() => locksOnly.electionBackend, CoordinationBackendError);
  assert.throws(() => locksOnly.leaderElection('leader'), CoordinationBackendError);
  await locksOnly.run(async () => {
    assert.throws(() => new LeaderElection('leader'), CoordinationBackendError);
  });
});

test('the innermost run wins; a sole named component answers for the default', async () => {
  const [outer, inner] = [memoryBackend(), memoryBackend()];
  const name = fresh('nested');
  const env = { requires: 'process' };
  await new Coordination(outer, env).run(async () => {
    const held = await new Lock(name).acquire();
    await new Coordination(inner, env).run(async () => {
      assert.equal(await new Lock(name).locked(), false, 'the inner store is not the outer one');
    });
    assert.equal(await new Lock(name).locked(), true);
    await held.release();
  });
  await new Coordination(outer, { ...env, name: 'jobs' }).run(async () => {
    assert.equal(new Lock(name).name, name);
  });
});

test('bad arguments are refused by name', () => {
  assert.throws(() => new Coordination('redis://x'), TypeError);
  assert.throws(() => new Coordination(undefined, { lock: {} }), TypeError);
  assert.throws(() => new Coordination(memoryBackend(), { requires: 'region' }), SettingsValidationError);
  assert.throws(() => new Coordination(memoryBackend()).run(), TypeError);
});

function runWith(environment) {
  const source = `
    const { Coordination, memoryBackend } = require('tenure');
    process.on('warning', (w) => console.log('warning', w.name, w.message));
    try { new Coordination(memoryBackend()).run(() => console.log('ran')); } catch (e) { console.log('threw', e.name, e.message); }
  `;
  const env = { ...process.env };
  delete env.GREL_ENVIRONMENT;
  if (environment !== undefined) env.GREL_ENVIRONMENT = environment;
  const run = spawnSync(process.execPath, ['-e', source], { env, encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  return run.stdout;
}

test("a backend short of the required reach: refused in production, warned about when undeclared, quiet in test", async () => {
  const refused = runWith('production');
  assert.match(refused, /^threw BackendScopeError Coordination\("default"\) requires scope 'cluster', but the memory store reaches only scope 'process' in environment 'production'\. Use a Redis or PostgreSQL backend/m);
  assert.doesNotMatch(refused, /ran/);
  const warned = runWith(undefined);
  assert.match(warned, /^ran$/m);
  await sleep(0);
  assert.match(warned, /^warning BackendScopeWarning Coordination\("default"\) requires scope 'cluster', but the memory store reaches only scope 'process'\. Set GREL_ENVIRONMENT/m);
  const unknown = runWith('prod');
  assert.match(unknown, /^warning UnknownEnvironmentWarning GREL_ENVIRONMENT is set to 'prod'/m);
  assert.equal(runWith('test').trim(), 'ran');
  assert.ok(BackendScopeError.prototype instanceof Error);
});
