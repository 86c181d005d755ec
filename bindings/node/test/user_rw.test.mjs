// Read-write lock and semaphore backends written by users in JavaScript: plain classes with
// async methods (grelmicro 0.44's `ReadWriteLockBackend` calls in camelCase; Tenure's semaphore
// calls), nothing imported from tenure, run by the driver like a built-in store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Coordination,
  LockAcquireError,
  LockNotOwnedError,
  LockOwnedCheckError,
  LockTimeoutError,
  ReadWriteLock,
  Semaphore,
  SettingsValidationError,
  WouldBlockError,
} from 'tenure';
import { sleep } from './stores.mjs';

/** grelmicro 0.44's memory read-write lock, as a user would port it: reaped before every call. */
class DictReadWrite {
  entries = new Map();
  calls = [];

  #reap(name) {
    let entry = this.entries.get(name);
    if (!entry) this.entries.set(name, (entry = { generation: 0, writer: null, until: 0, expired: false, readers: new Map(), intents: new Map() }));
    const now = Date.now();
    for (const map of [entry.readers, entry.intents]) for (const [t, at] of map) if (at < now) map.delete(t);
    if (entry.writer !== null && entry.until < now) Object.assign(entry, { writer: null, expired: true });
    return entry;
  }

  async acquireRead({ name, token, duration }) {
    const entry = this.#reap(name);
    if (!entry.readers.has(token) && (entry.writer !== null || entry.intents.size > 0)) return null;
    entry.readers.set(token, Date.now() + duration);
    return entry.generation;
  }

  async acquireWrite({ name, token, duration, intent }) {
    this.calls.push(`acquireWrite ${name} intent=${intent}`);
    const entry = this.#reap(name);
    const until = Date.now() + duration;
    if (entry.writer === token) {
      entry.until = until;
      return { fencingToken: entry.generation, poisoned: false };
    }
    if (entry.writer !== null || entry.readers.size > 0) {
      if (intent) entry.intents.set(token, until);
      return null;
    }
    entry.intents.delete(token);
    const poisoned = entry.expired;
    Object.assign(entry, { expired: false, generation: entry.generation + 1, writer: token, until });
    return { fencingToken: entry.generation, poisoned };
  }

  async releaseRead({ name, token }) {
    return this.#reap(name).readers.delete(token);
  }

  async releaseWrite({ name, token }) {
    const entry = this.#reap(name);
    if (entry.writer !== token) return false;
    Object.assign(entry, { writer: null, expired: false });
    return true;
  }

  async cancelIntent({ name, token }) {
    this.calls.push(`cancelIntent ${name}`);
    return this.#reap(name).intents.delete(token);
  }

  async downgrade({ name, token, duration }) {
    const entry = this.#reap(name);
    if (entry.writer !== token) return null;
    entry.writer = null;
    entry.readers.set(token, Date.now() + duration);
    return entry.generation;
  }

  async state({ name }) {
    const entry = this.#reap(name);
    return { generation: entry.generation, writing: entry.writer !== null, readers: entry.readers.size, waitingWriters: entry.intents.size };
  }

  async ownedRead({ name, token }) {
    return this.#reap(name).readers.has(token);
  }

  async ownedWrite({ name, token }) {
    return this.#reap(name).writer === token;
  }
}

/** Permits with leases and fencing tokens in Maps; no line (`wait` is ignored). */
class DictSemaphore {
  holders = new Map(); // name -> Map(token -> { until, fence })
  counts = new Map();
  fences = new Map();
  waits = [];
  mostAtOnce = 0;

  #live(name) {
    const now = Date.now();
    const live = this.holders.get(name) ?? new Map();
    for (const [t, h] of live) if (h.until < now) live.delete(t);
    this.holders.set(name, live);
    if (live.size === 0) this.counts.delete(name);
    return live;
  }

  async acquire({ name, token, duration, permits, wait }) {
    this.waits.push(wait);
    const live = this.#live(name);
    if (!this.counts.has(name)) this.counts.set(name, permits);
    const count = this.counts.get(name);
    if (count !== permits) return { fencingToken: null, permits: count };
    const held = live.get(token);
    if (held) {
      held.until = Date.now() + duration;
      return { fencingToken: held.fence, permits: count };
    }
    if (live.size >= count) return { fencingToken: null, permits: count };
    const fence = (this.fences.get(name) ?? 0) + 1;
    this.fences.set(name, fence);
    live.set(token, { until: Date.now() + duration, fence });
    this.mostAtOnce = Math.max(this.mostAtOnce, live.size);
    return { fencingToken: fence, permits: count };
  }

  async release({ name, token }) {
    return this.#live(name).delete(token);
  }

  async owned({ name, token }) {
    return this.#live(name).has(token);
  }

  async state({ name }) {
    const live = this.#live(name);
    return { permits: this.counts.get(name) ?? 0, holders: live.size, waiting: 0, fence: this.fences.get(name) ?? 0 };
  }
}

test("readers share, a writer's intent holds new readers out, and reads see its generation", async () => {
  const backend = new DictReadWrite();
  const lock = new ReadWriteLock('doc', backend, { retryInterval: 10 });
  const [a, b] = [await lock.read.acquire(), await lock.read.acquire()];
  assert.deepEqual([a.generation, b.generation], [0n, 0n]);
  assert.deepEqual(await lock.state(), { generation: 0n, writing: false, readers: 2, waitingWriters: 0 });
  await assert.rejects(lock.write.tryAcquire(), WouldBlockError);
  assert.ok(backend.calls.includes('acquireWrite rwlock:doc intent=false'), 'a tryAcquire leaves no intent');
  const writing = lock.write.using(async (signal, handle) => [handle.fencingToken, handle.poisoned, (await lock.state()).writing]);
  for (let i = 0; (await lock.state()).waitingWriters < 1; i += 1) {
    assert.ok(i < 500, 'the writer never waited');
    await sleep(10);
  }
  await assert.rejects(lock.read.tryAcquire(), WouldBlockError);
  await a.release();
  await b.release();
  assert.deepEqual(await writing, [1n, false, true]);
  const reader = await lock.read.acquire();
  assert.equal(reader.generation, 1n);
  await reader.release();
});

test('poisoning, downgrade, and a writer that times out withdraws its intent', async () => {
  const backend = new DictReadWrite();
  const lock = new ReadWriteLock('doc', backend, { leaseDuration: 200 });
  // Kept referenced: a handle the garbage collector drops while held is released in the background.
  const first = await lock.write.acquire();
  await sleep(350); // the lease ends without a release
  const other = new ReadWriteLock('doc', backend);
  const second = await other.write.acquire();
  assert.deepEqual([second.fencingToken, second.poisoned], [2n, true]);
  const read = await second.downgrade();
  assert.equal(read.generation, 2n);
  assert.deepEqual(await other.state(), { generation: 2n, writing: false, readers: 1, waitingWriters: 0 });
  await assert.rejects(new ReadWriteLock('doc', backend, { retryInterval: 20 }).write.acquire({ timeout: 200 }), LockTimeoutError);
  assert.ok(backend.calls.includes('cancelIntent rwlock:doc'));
  assert.equal((await other.state()).waitingWriters, 0);
  await read.release();
  await assert.rejects(first.release(), LockNotOwnedError, 'the lapsed lease was not released meanwhile');
});

test("a user's semaphore admits up to its permits, each with a token of its own; another count is refused", async () => {
  const backend = new DictSemaphore();
  const pool = new Semaphore('exports', 2, backend, { retryInterval: 10 });
  let inside = 0;
  let most = 0;
  const fences = [];
  await Promise.all(
    Array.from({ length: 6 }, () =>
      pool.using(async (signal, permit) => {
        inside += 1;
        most = Math.max(most, inside);
        fences.push(permit.fencingToken);
        await sleep(200);
        inside -= 1;
      }),
    ),
  );
  assert.equal(most, 2);
  assert.equal(backend.mostAtOnce, 2);
  assert.deepEqual(fences.sort(), [1n, 2n, 3n, 4n, 5n, 6n]);
  assert.ok(backend.waits.some((w) => typeof w === 'number' && w > 0), 'a waiter asks to keep its place, in ms');
  const held = await pool.acquire();
  assert.deepEqual(await pool.state(), { permits: 2, holders: 1, waiting: 0, fence: 7n });
  await assert.rejects(new Semaphore('exports', 3, backend).tryAcquire(), (e) => e instanceof SettingsValidationError && /in use with 2 permits/.test(e.message));
  await held.release();
});

test('Coordination takes user read-write lock and semaphore backends in their slots and as a bare source', async () => {
  const coordination = new Coordination(undefined, { readWriteLock: new DictReadWrite(), semaphore: new DictSemaphore(), requires: 'process' });
  const writer = await coordination.readWriteLock('doc').write.acquire();
  assert.equal(writer.fencingToken, 1n);
  await writer.release();
  const permit = await coordination.semaphore('pool', 2).acquire();
  assert.equal(permit.fencingToken, 1n);
  await permit.release();
  assert.throws(() => coordination.lockBackend, { code: 'COORDINATION_BACKEND_MISSING' });
  const bare = new Coordination(new DictReadWrite());
  await bare.run(async () => {
    const reader = await new ReadWriteLock('doc').read.acquire();
    assert.equal(reader.generation, 0n);
    await reader.release();
  });
  assert.throws(() => bare.semaphoreBackend, { code: 'COORDINATION_BACKEND_MISSING' });
  // An object serving locks and read-write locks has a semaphore's four methods too: as a bare
  // source it fills no semaphore slot (a lock's acquire would get a semaphore's calls).
  const both = Object.assign(new DictReadWrite(), { acquire() {}, release() {}, locked() {}, owned() {} });
  const wired = new Coordination(both);
  assert.equal(wired.lockBackend, both);
  assert.equal(wired.readWriteLockBackend, both);
  assert.throws(() => wired.semaphoreBackend, { code: 'COORDINATION_BACKEND_MISSING' });
  assert.throws(() => new Coordination(undefined, { semaphore: new DictReadWrite() }), /semaphore backend \(acquire, release, owned, state\)/);
});

test('garbage answers are errors naming the call and the type, never the value', async () => {
  const rw = [
    ['acquireWrite', () => 3, LockAcquireError, /DictReadWrite\.acquireWrite answered a number, not a write grant/],
    ['acquireWrite', () => ({ fencingToken: 0, poisoned: false }), LockAcquireError, /not a positive safe integer/],
    ['acquireWrite', () => ({ fencingToken: 2, poisoned: 'no' }), LockAcquireError, /poisoned is a string, not a boolean/],
    ['acquireRead', (call) => call.token, LockAcquireError, /acquireRead answered a string: a generation is a whole number/],
    ['acquireRead', () => -1, LockAcquireError, /a number: a generation is a whole number >= 0/],
    ['state', () => ({ generation: 1, writing: true, readers: 2, waitingWriters: 0 }), LockOwnedCheckError, /a writer and readers at once/],
    ['state', () => ({ generation: 1 }), LockOwnedCheckError, /not a read-write lock state \(no writing, readers, waitingWriters\)/],
  ];
  for (const [method, answer, Error, words] of rw) {
    const tokens = [];
    const backend = Object.assign(new DictReadWrite(), {
      [method]: async (call) => {
        tokens.push(call.token);
        return answer(call);
      },
    });
    const lock = new ReadWriteLock('doc', backend);
    const call = method === 'state' ? lock.state() : method === 'acquireWrite' ? lock.write.tryAcquire() : lock.read.tryAcquire();
    const error = await call.catch((e) => e);
    assert.ok(error instanceof Error, `${method}: ${error}`);
    assert.match(error.cause.message, words);
    assert.ok(!tokens.some((t) => t && error.cause.message.includes(t)), error.cause.message);
  }
  const sem = [
    [() => 5, /DictSemaphore\.acquire answered a number: a permit is \{ fencingToken \(or null\), permits \}/],
    [() => ({ fencingToken: 1, permits: 0 }), /a permit count of 0/],
    [() => ({ fencingToken: 1, permits: -2 }), /a permit's permits is a whole number/],
  ];
  for (const [answer, words] of sem) {
    const backend = Object.assign(new DictSemaphore(), { acquire: async () => answer() });
    const error = await new Semaphore('pool', 2, backend).tryAcquire().catch((e) => e);
    assert.ok(error instanceof LockAcquireError, String(error));
    assert.match(error.cause.message, words);
  }
});

test("a writer's fencing token lower than one answered before is refused; a hanging semaphore fails at backendTimeout", async () => {
  const backend = new DictReadWrite();
  const lock = new ReadWriteLock('doc', backend);
  await (await lock.write.acquire()).release();
  await (await lock.write.acquire()).release();
  backend.entries.get('rwlock:doc').generation = 0; // the backend lost its counter
  const error = await lock.write.acquire().catch((e) => e);
  assert.ok(error instanceof LockAcquireError, String(error));
  assert.equal(error.cause.code, 'STORE_FENCE_REGRESSION');
  assert.match(error.cause.message, /DictReadWrite\.acquireWrite answered fencing token 1 after 2 for rwlock:doc/);

  const hangs = Object.assign(new DictSemaphore(), { acquire: () => new Promise(() => {}) });
  const started = Date.now();
  const hung = await new Semaphore('pool', 2, hangs, { backendTimeout: 150 }).tryAcquire().catch((e) => e);
  assert.ok(hung instanceof LockAcquireError, String(hung));
  assert.equal(hung.cause.code, 'STORE_TIMEOUT');
  assert.ok(Date.now() - started < 2000);
});
