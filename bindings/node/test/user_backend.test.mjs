// Backends written by users in JavaScript: plain classes with async methods, nothing imported
// from tenure, run by the driver like a built-in store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import {
  Coordination,
  LeaderElection,
  Lock,
  LockAcquireError,
  LockReleaseError,
  StoreError,
  TaskLock,
  WouldBlockError,
  logger,
} from 'tenure';
import { DictLocks } from './dict_locks.mjs';
import { sleep } from './stores.mjs';

/** Waits until `condition()` holds, for at most `ms`; whether it did. */
async function eventually(condition, ms = 3000) {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await sleep(10);
  }
  return true;
}

test('a lock cycle takes its fences from the backend, tasks exclude each other, names keep their prefix', async () => {
  const backend = new DictLocks();
  const lock = new Lock('cart', backend, { leaseDuration: 2000, retryInterval: 5 });
  let inside = 0;
  const fences = [];
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let i = 0; i < 3; i += 1) {
        await lock.using(async (signal, handle) => {
          inside += 1;
          assert.equal(inside, 1, 'two tasks held the lock at once');
          assert.equal(signal.aborted, false);
          fences.push(handle.fencingToken);
          await sleep(1);
          inside -= 1;
        });
      }
    }),
  );
  assert.deepEqual(fences, Array.from({ length: 12 }, (_, i) => BigInt(i + 1)));
  assert.equal(backend.fences.get('lock:cart'), 12);
  assert.equal(await lock.locked(), false);
  const handle = await lock.tryAcquire();
  const left = backend.locks.get('lock:cart').until - Date.now();
  assert.ok(left > 1000 && left <= 2000, `duration arrives in ms (${left} ms left of a 2000 ms lease)`);
  await assert.rejects(lock.tryAcquire(), WouldBlockError);
  assert.equal(await handle.owned(), true);
  await handle.release();
});

test('plain (not async) methods work, and a task lock holds its minimum on the backend', async () => {
  const backend = new DictLocks();
  const sync = {
    acquire: (call) => backend.fences.get(call.name) === 99 ? null : 7,
    release: () => true,
    locked: () => 1,
    owned: () => 0,
  };
  const handle = await new Lock('plain', sync).acquire();
  assert.equal(handle.fencingToken, 7n);
  assert.equal(await new Lock('plain', sync).locked(), true, '1 reads as true');
  await handle.release();

  const [a, b] = [new TaskLock('nightly', backend, { minHoldDuration: 5000 }), new TaskLock('nightly', backend, { minHoldDuration: 5000 })];
  const run = await a.enter();
  await run.exit();
  await assert.rejects(b.enter(), WouldBlockError);
  assert.ok(backend.locks.has('tasklock:nightly'));
});

test('one leader among three on the backend, and a clean hand-over', async () => {
  const backend = new DictLocks();
  const fast = { leaseDuration: 2000, renewDeadline: 1500, retryInterval: 20, backendTimeout: 1000, envLoad: false };
  const elections = [0, 1, 2].map((i) => new LeaderElection('svc', backend, { ...fast, metadata: { replica: String(i) } }));
  const elected = Promise.race(elections.map((e) => once(e, 'leader').then(() => e)));
  for (const e of elections) e.start();
  const leader = await elected;
  await sleep(100);
  assert.equal(elections.filter((e) => e.isLeader).length, 1);
  const record = await backend.get({ name: 'leader:svc' });
  assert.equal(record.holder, leader.worker);
  assert.equal(leader.record.metadata.replica, String(elections.indexOf(leader)));
  const rest = elections.filter((e) => e !== leader);
  const next = Promise.race(rest.map((e) => once(e, 'leader').then(() => e)));
  const stoppedAt = Date.now();
  await leader.stop();
  const successor = await next;
  assert.ok(Date.now() - stoppedAt < 1000, 'released, not left to expire');
  assert.equal((await backend.get({ name: 'leader:svc' })).holder, successor.worker);
  for (const e of rest) await e.stop();
});

test('Coordination takes a user backend as its source, and primitives built in run() use it', async () => {
  const backend = new DictLocks();
  const coordination = new Coordination(backend, { requires: 'process' });
  assert.equal(coordination.lockBackend, backend);
  await coordination.run(async () => {
    const handle = await new Lock('inside').acquire();
    assert.equal(handle.fencingToken, 1n);
    await handle.release();
  });
  assert.deepEqual(backend.calls.slice(0, 2), ['acquire lock:inside', 'release lock:inside']);
  // A backend that declares a reach below what the component requires is judged.
  const previous = process.env.GREL_ENVIRONMENT;
  process.env.GREL_ENVIRONMENT = 'production';
  try {
    assert.throws(() => new Coordination(backend).run(() => {}), { code: 'BACKEND_SCOPE' });
  } finally {
    if (previous === undefined) delete process.env.GREL_ENVIRONMENT;
    else process.env.GREL_ENVIRONMENT = previous;
  }
});

test("a backend that throws or rejects fails the call, with what it threw as the store error's cause", async () => {
  const boom = new Error('connection refused (token abc-secret)');
  const failing = Object.assign(new DictLocks(), {
    acquire: () => {
      throw boom;
    },
    release: async () => {
      throw new RangeError('nope');
    },
  });
  const error = await new Lock('cart', failing).acquire().catch((e) => e);
  assert.ok(error instanceof LockAcquireError, String(error));
  assert.equal(error.lockName, 'cart');
  assert.ok(error.cause instanceof StoreError);
  assert.equal(error.cause.message.includes('DictLocks.acquire threw an Error'), true, error.cause.message);
  assert.equal(error.cause.cause, boom, 'the thrown value itself');
  assert.ok(!error.message.includes('abc-secret') && !error.cause.message.includes('abc-secret'));

  const lock = new Lock('cart', Object.assign(new DictLocks(), { release: failing.release }));
  const handle = await lock.acquire();
  const released = await handle.release().catch((e) => e);
  assert.ok(released instanceof LockReleaseError, String(released));
  assert.ok(released.cause.cause instanceof RangeError);
  assert.match(released.cause.message, /DictLocks\.release rejected with a RangeError/);
});

test('a backend that hangs fails at backendTimeout, or at once when the caller aborts; the late grants are given back', async () => {
  const backend = new DictLocks();
  const signals = [];
  const slow = Object.assign(backend, {
    acquire: async (call) => {
      signals.push(call.signal);
      await sleep(600);
      return DictLocks.prototype.acquire.call(backend, call);
    },
  });
  const lock = new Lock('cart', slow, { backendTimeout: 150 });
  const started = Date.now();
  const error = await lock.acquire().catch((e) => e);
  assert.ok(error instanceof LockAcquireError, String(error));
  assert.equal(error.cause.code, 'STORE_TIMEOUT');
  assert.ok(Date.now() - started < 550, 'failed before the grant landed');
  assert.ok(await eventually(() => backend.calls.includes('release lock:cart')), 'the late grant was released');
  assert.equal(backend.locks.has('lock:cart'), false);

  // Each call gets a signal, which aborts only if the driver gives the call up altogether (a
  // minute after nobody waits for it: a late answer is still read, to give a grant back).
  assert.ok(signals[0] instanceof AbortSignal && !signals[0].aborted);

  // A caller that gives up (its AbortSignal) is answered at once; the grant that lands later is
  // given back too.
  const controller = new AbortController();
  const waiting = new Lock('cart2', slow).acquire({ signal: controller.signal });
  await sleep(50);
  const abortedAt = Date.now();
  controller.abort(new Error('gave up'));
  await assert.rejects(waiting, { message: 'gave up' });
  assert.ok(Date.now() - abortedAt < 300);
  assert.ok(await eventually(() => backend.calls.includes('release lock:cart2')), 'the grant that landed after the abort was released');
  assert.equal(backend.locks.has('lock:cart2'), false);
});

test('an answer of the wrong shape is an error naming the call and the type, never the value', async () => {
  const cases = [
    [(call) => call.token, /a string/],
    [() => true, /a boolean/],
    [() => 0, /not a positive safe integer/],
    [() => -3, /not a positive safe integer/],
    [() => 1.5, /not a positive safe integer/],
    [() => 2n ** 70n, /out of range/],
    [() => undefined, /an undefined/],
    [() => ({}), /an Object/],
  ];
  for (const [answer, words] of cases) {
    const backend = Object.assign(new DictLocks(), { acquire: async (call) => answer(call) });
    const error = await new Lock('cart', backend, { backendTimeout: 500 }).acquire({ timeout: 1000 }).catch((e) => e);
    assert.ok(error instanceof LockAcquireError, String(error));
    assert.match(error.cause.message, /DictLocks\.acquire answered /);
    assert.match(error.cause.message, words);
    assert.ok(error.cause.cause instanceof TypeError || error.cause.cause instanceof RangeError);
  }
  const sneaky = Object.assign(new DictLocks(), {
    acquireOrRenew: async () => ({
      holder: 'w',
      leaseDuration: 1000,
      acquiredAt: new Date(),
      renewedAt: new Date(),
      get transitions() {
        throw new TypeError('transitions of token tok-secret');
      },
    }),
  });
  const quiet = new LeaderElection('svc', sneaky, { leaseDuration: 1000, renewDeadline: 700, retryInterval: 20, backendTimeout: 300, envLoad: false });
  const lines = [];
  const listen = (record) => lines.push(record.line);
  logger.on('log', listen);
  try {
    quiet.start();
    assert.ok(await eventually(() => lines.some((l) => l.includes('DictLocks.acquireOrRenew answered a value that could not be read'))), lines.join('\n'));
    assert.equal(quiet.isLeader, false);
    await quiet.stop();
  } finally {
    logger.off('log', listen);
  }
  assert.ok(!lines.some((l) => l.includes('tok-secret')));
  const flags = Object.assign(new DictLocks(), { locked: async () => 'yes' });
  await assert.rejects(new Lock('cart', flags).locked(), (e) => /DictLocks\.locked answered a string: the answer is a boolean/.test(e.cause.message));
});

test('an election on a backend that answers garbage never leads', async () => {
  let calls = 0;
  const backend = Object.assign(new DictLocks(), {
    acquireOrRenew: async () => {
      calls += 1;
      return { holder: 5 };
    },
  });
  const election = new LeaderElection('svc', backend, { leaseDuration: 1000, renewDeadline: 700, retryInterval: 20, errorInterval: 20, backendTimeout: 300, envLoad: false });
  election.start();
  assert.ok(await eventually(() => calls >= 3), 'the election kept trying');
  assert.equal(election.isLeader, false);
  assert.equal(election.record, null);
  await election.stop();
});

test('a fencing token lower than one the backend answered before is refused', async () => {
  let next = 5;
  const backend = Object.assign(new DictLocks(), { acquire: async () => next });
  const handle = await new Lock('cart', backend).acquire();
  assert.equal(handle.fencingToken, 5n);
  next = 3;
  // Another lock on the same object: the fences are the object's, not the primitive's.
  const error = await new Lock('cart', backend).acquire().catch((e) => e);
  assert.ok(error instanceof LockAcquireError, String(error));
  assert.equal(error.cause.code, 'STORE_FENCE_REGRESSION');
  assert.match(error.cause.message, /DictLocks\.acquire answered fencing token 3 after 5 for lock:cart/);
});

test('an object that is no backend is refused with what it lacks', () => {
  assert.throws(() => new Lock('cart', { acquire() {}, release() {} }), (e) => e instanceof TypeError && /has no locked, owned methods/.test(e.message));
  assert.throws(() => new LeaderElection('svc', new (class Half { get() {} })()), (e) => e instanceof TypeError && /Half has no acquireOrRenew, release methods/.test(e.message));
  assert.throws(() => new Coordination({ nothing: true }), TypeError);
  // A slot takes only what serves it; a bare source serves the slots it has the methods of.
  const electionsOnly = { acquireOrRenew() {}, release() {}, get() {} };
  assert.throws(() => new Coordination(undefined, { lock: electionsOnly }), /lock backend \(acquire, release, locked, owned\)/);
  const coordination = new Coordination(electionsOnly);
  assert.equal(coordination.electionBackend, electionsOnly);
  assert.throws(() => coordination.lockBackend, { code: 'COORDINATION_BACKEND_MISSING' });
});
