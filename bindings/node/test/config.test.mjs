// Settings as grelmicro's users give them: options, else GREL_* variables (seconds, as in
// Python), else the defaults; live reconfigure from the next call on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LeaderElection, Lock, SettingsValidationError, TaskLock, memoryBackend } from 'tenure';

/** Runs `fn` with `vars` set in the environment, then puts it back. */
function withEnv(vars, fn) {
  const before = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  try {
    return fn();
  } finally {
    for (const [k, v] of Object.entries(before)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

test('GREL_* variables set what the options leave out, in seconds; options and envLoad: false win', () => {
  const backend = memoryBackend();
  withEnv({ GREL_LOCK_LEASE_DURATION: '99', GREL_LOCK_RETRY_INTERVAL: '0.5' }, () => {
    const settings = new Lock('cart', backend).settings();
    assert.equal(settings.leaseDuration, 99_000);
    assert.equal(settings.retryInterval, 500);
    assert.equal(new Lock('cart', backend, { leaseDuration: 1000 }).settings().leaseDuration, 1000);
    assert.notEqual(new Lock('cart', backend, { envLoad: false }).settings().leaseDuration, 99_000);
  });
  withEnv({ GREL_LOCK_LEASE_DURATION: 'soon' }, () => {
    assert.throws(() => new Lock('cart', backend), (e) => e instanceof SettingsValidationError && /GREL_LOCK_LEASE_DURATION/.test(e.message));
  });
});

test('reconfigure applies from the next call on, and the worker stays', async () => {
  const durations = [];
  const held = new Map();
  let fence = 0;
  const backend = {
    async acquire({ name, token, duration }) {
      durations.push(duration);
      const mine = held.get(name);
      if (mine && mine !== token) return null;
      held.set(name, token);
      fence += mine ? 0 : 1;
      return fence;
    },
    async release({ name, token }) {
      return held.get(name) === token && held.delete(name);
    },
    async locked({ name }) {
      return held.has(name);
    },
    async owned({ name, token }) {
      return held.get(name) === token;
    },
  };
  const lock = new Lock('cart', backend, { worker: 'w1', leaseDuration: 2000, envLoad: false });
  const handle = await lock.acquire();
  lock.reconfigure({ leaseDuration: 30_000 });
  assert.equal(lock.settings().leaseDuration, 30_000);
  await handle.extend();
  await handle.release();
  await (await lock.acquire()).release();
  assert.deepEqual(durations, [2000, 30_000, 30_000]);
  assert.equal(lock.settings().worker, 'w1');
  assert.throws(() => lock.reconfigure({ leaseDuration: Number.NaN }), (e) => e.field === 'leaseDuration');
  assert.equal(lock.settings().leaseDuration, 30_000, 'a refused reconfigure changes nothing');
});

test('task locks and elections read their own variables', () => {
  const backend = memoryBackend();
  withEnv({ GREL_TASKLOCK_MIN_HOLD_DURATION: '7', GREL_LEADERELECTION_LEASE_DURATION: '20' }, () => {
    assert.equal(new TaskLock('nightly', backend).settings().minHoldDuration, 7000);
    assert.equal(new LeaderElection('svc', backend).settings().leaseDuration, 20_000);
  });
});
