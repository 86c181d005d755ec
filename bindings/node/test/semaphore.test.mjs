// Semaphores on every store, written the way a user of `Lock` writes them.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Coordination,
  LockTimeoutError,
  Semaphore,
  SettingsValidationError,
  WouldBlockError,
  memoryBackend,
} from 'tenure';
import { fresh, openStores, sleep } from './stores.mjs';

const stores = await openStores(after);

for (const [kind, backend] of Object.entries(stores)) {
  describe(`a semaphore on ${kind}`, () => {
    test('at most `permits` tasks hold at once, each with a greater fencing token', async () => {
      const pool = new Semaphore(fresh('exports'), 3, backend, { leaseDuration: 5000, retryInterval: 10 });
      let inside = 0;
      let most = 0;
      const fences = [];
      const exportOne = () =>
        pool.using(async (signal, permit) => {
          inside += 1;
          most = Math.max(most, inside);
          fences.push(permit.fencingToken);
          await sleep(20);
          assert.equal(signal.aborted, false);
          inside -= 1;
        });
      await Promise.all(Array.from({ length: 9 }, exportOne));
      assert.ok(most >= 1 && most <= 3, `${most} holders at once`);
      // Three permits are three: held together, a fourth is refused.
      const held = [await pool.acquire(), await pool.acquire(), await pool.acquire()];
      await assert.rejects(pool.tryAcquire(), WouldBlockError);
      await Promise.all(held.map((permit) => permit.release()));
      fences.push(...held.map((permit) => permit.fencingToken));
      assert.equal(new Set(fences).size, 12, 'every permit has a token of its own');
      const state = await pool.state();
      assert.deepEqual([state.holders, state.waiting, state.permits], [0, 0, 0]);
      assert.equal(state.fence, fences.reduce((a, b) => (a > b ? a : b)));
    });

    test('a full semaphore refuses tryAcquire, times out, and leaves no place behind', async () => {
      const pool = new Semaphore(fresh('full'), 1, backend);
      const held = await pool.acquire();
      assert.equal(await pool.locked(), true);
      await assert.rejects(pool.tryAcquire(), WouldBlockError);
      await assert.rejects(pool.acquire({ timeout: 200 }), LockTimeoutError);
      assert.equal((await pool.state()).waiting, 0);
      assert.equal(await held.extend(), held.fencingToken);
      await held.release();
      assert.equal(await pool.locked(), false);
    });

    test('waiters are served in arrival order', async () => {
      const pool = new Semaphore(fresh('line'), 1, backend, { retryInterval: 10 });
      const first = await pool.acquire();
      const order = [];
      const waiters = [];
      for (const [ahead, label] of ['a', 'b', 'c'].entries()) {
        waiters.push(pool.using(() => order.push(label)));
        for (let i = 0; (await pool.state()).waiting < ahead + 1; i += 1) {
          assert.ok(i < 500, `${label} never took its place`);
          await sleep(10);
        }
      }
      await first.release();
      await Promise.all(waiters);
      assert.deepEqual(order, ['a', 'b', 'c']);
    });

    test('another count is refused while the name is in use', async () => {
      const name = fresh('count');
      const held = await new Semaphore(name, 2, backend).acquire();
      await assert.rejects(new Semaphore(name, 5, backend).acquire({ timeout: 500 }), (error) => {
        assert.ok(error instanceof SettingsValidationError);
        assert.match(error.message, /in use with 2 permits/);
        return true;
      });
      await held.release();
      const other = await new Semaphore(name, 5, backend).acquire();
      await other.release();
    });
  });
}

test('counts are checked, and a coordination hands semaphores out', async () => {
  const backend = memoryBackend();
  for (const bad of [0, -1, 1.5, Number.NaN]) {
    assert.throws(() => new Semaphore('p', bad, backend), SettingsValidationError);
  }
  assert.equal(new Semaphore('p', 4, backend).permits, 4);
  const coordination = new Coordination(backend, { requires: 'process' });
  const pool = coordination.semaphore('jobs', 2);
  const permit = await pool.acquire();
  assert.equal(permit.fencingToken, 1n);
  await permit.release();
  await coordination.run(async () => {
    const inside = new Semaphore('jobs', 2);
    await (await inside.acquire()).release();
  });
  const user = { acquire: async () => 1n, release: async () => true, locked: async () => false, owned: async () => true };
  assert.throws(() => new Semaphore('p', 2, user), /semaphore backend: \w+ has no state method/);
});
