// `await lock.state()`: who holds a lock — worker, fencing token, lease end, and what the holder
// told the store (host, pid, program, `purpose`, since when) — on every store; never the token.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { execFileSync } from 'node:child_process';
import { LeaderElection, Lock, ReadWriteLock, Semaphore, SettingsValidationError, TaskLock, openBackend } from 'tenure';
import { fresh, redisUrl, storeUrls } from './stores.mjs';

const backends = {};
for (const [kind, url] of Object.entries(storeUrls())) backends[kind] = await openBackend(url);
after(() => Promise.all(Object.values(backends).map((b) => b.close())));

for (const [kind, backend] of Object.entries(backends)) {
  test(`${kind}: state() names the holder, its process and its purpose`, async () => {
    const lock = new Lock('export', backend, { worker: 'batch-1', purpose: 'nightly export' });
    const watcher = new Lock('export', backend);
    assert.deepEqual(await watcher.state(), {
      name: 'export', held: false, fencingToken: null, worker: null, expiresAt: null, holder: null, waiting: null,
    });
    await lock.using(async (signal, handle) => {
      const state = await watcher.state();
      assert.equal(state.held, true);
      assert.equal(state.worker, 'batch-1');
      assert.equal(state.fencingToken, handle.fencingToken);
      assert.equal(state.holder.pid, process.pid);
      assert.equal(state.holder.host, hostname());
      assert.match(state.holder.program, /^node/);
      assert.equal(state.holder.purpose, 'nightly export');
      assert.ok(Math.abs(Date.now() - state.holder.acquiredAt.getTime()) < 60_000, String(state.holder.acquiredAt));
      assert.ok(state.expiresAt > state.holder.acquiredAt);
      assert.ok(!JSON.stringify(state, (k, v) => (typeof v === 'bigint' ? String(v) : v)).includes(':task:'));
    });
    const free = await watcher.state();
    assert.equal(free.held, false);
    assert.equal(free.holder, null);
  });

  test(`${kind}: state() lists who waits, first in line first (null where the store keeps no line)`, async () => {
    const holder = new Lock('queued-export', backend, { worker: 'batch-1' });
    const first = new Lock('queued-export', backend, { worker: 'batch-2', purpose: 'retry export' });
    const second = new Lock('queued-export', backend, { worker: 'batch-3' });
    const handle = await holder.acquire();
    const waiters = [first.acquire()];
    const line = async (n) => {
      for (const deadline = Date.now() + 10_000; Date.now() < deadline; ) {
        const state = await holder.state();
        if (state.waiting === null || state.waiting.length >= n) return state;
        await new Promise((r) => setTimeout(r, 20));
      }
      throw new Error(`fewer than ${n} waiters in line after 10 s`);
    };
    if (kind === 'sqlite' || kind === 'etcd' || kind === 'memory') {
      await new Promise((r) => setTimeout(r, 300));
      assert.equal((await holder.state()).waiting, null);
    } else {
      await line(1);
      waiters.push(second.acquire());
      const state = await line(2);
      assert.deepEqual(state.waiting.map((w) => w.worker), ['batch-2', 'batch-3']);
      const [head, next] = state.waiting;
      assert.equal(head.details.purpose, 'retry export');
      assert.equal(head.details.pid, process.pid);
      assert.ok(head.since instanceof Date && head.since <= next.since, String(head.since));
    }
    await handle.release();
    for (const waiter of waiters) await (await waiter).release();
  });

  test(`${kind}: a task lock's run is named too`, async () => {
    const task = new TaskLock('report', backend, { minHoldDuration: 10, purpose: 'weekly report' });
    const run = await task.enter();
    const state = await task.state();
    assert.equal(state.holder.purpose, 'weekly report');
    assert.equal(state.fencingToken, run.fencingToken);
    await run.exit();
  });
}

test('a bad purpose, or one given to reconfigure, is a SettingsValidationError naming it', () => {
  const backend = backends.memory;
  const named = (e) => e instanceof SettingsValidationError && /purpose/.test(e.message);
  assert.throws(() => new Lock('x', backend, { purpose: 'a\nb' }), named);
  assert.throws(() => new Lock('x', backend, { purpose: 'p'.repeat(10_000) }), /256/);
  assert.throws(() => new Semaphore('x', 2, backend, { purpose: 'a\nb' }), named);
  assert.throws(() => new ReadWriteLock('x', backend, { purpose: 'p'.repeat(10_000) }), /256/);
  assert.throws(() => new Semaphore('x', 2, backend, { purpose: 'pool' }).reconfigure({ purpose: 'other' }), named);
});

test("a read-write lock's writer, a semaphore's permit holder and a leader name their purpose to tenure locks", async () => {
  const cli = process.env.TENURE_CLI;
  assert.ok(cli, 'set TENURE_CLI to the tenure command (scripts/test.sh node does)');
  const url = `${redisUrl}/?prefix=${fresh('tenure-node-shared-details')}:`;
  const backend = await openBackend(url);
  try {
    const catalog = new ReadWriteLock('catalog', backend, { purpose: 'rebuild' });
    const exports = new Semaphore('exports', 2, backend, { purpose: 'export' });
    const election = new LeaderElection('scheduler', backend, { worker: 's1', purpose: 'schedule' });
    election.start();
    await election.waitForLeader();
    const listed = await catalog.write.using(() =>
      exports.using(() => execFileSync(cli, ['--backend', url, 'locks', '--json'], { encoding: 'utf8' })),
    );
    await election.stop();
    const document = JSON.parse(listed);
    const [leader] = document.elections;
    assert.deepEqual([leader.leader, leader.leader_details.purpose, leader.leader_details.pid], ['s1', 'schedule', process.pid]);
    const locks = Object.fromEntries(document.locks.map((l) => [l.name, l]));
    for (const [name, side, purpose] of [['catalog', 'write', 'rebuild'], ['exports', 'permit', 'export']]) {
      const [holder] = locks[name].holders;
      assert.deepEqual([holder.side, holder.purpose, holder.pid, holder.host], [side, purpose, process.pid, hostname()]);
    }
  } finally {
    await backend.close();
  }
});
