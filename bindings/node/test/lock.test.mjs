// Locks on every store, written the way Node users write them.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Lock,
  LockNotOwnedError,
  LockTimeoutError,
  TenureError,
  WouldBlockError,
} from 'tenure';
import { fresh, openStores, sleep } from './stores.mjs';

const stores = await openStores(after);

for (const [kind, backend] of Object.entries(stores)) {
  describe(`a lock on ${kind}`, () => {
    test('async tasks take turns, with strictly increasing fencing tokens', async () => {
      const lock = new Lock(fresh('turns'), backend, { leaseDuration: 5000, retryInterval: 10 });
      let inside = 0;
      const fences = [];
      const task = async () => {
        for (let i = 0; i < 4; i += 1) {
          const handle = await lock.acquire();
          inside += 1;
          assert.equal(inside, 1, 'two tasks held the lock at once');
          fences.push(handle.fencingToken);
          await sleep(1);
          inside -= 1;
          await handle.release();
        }
      };
      await Promise.all(Array.from({ length: 6 }, task));
      assert.equal(fences.length, 24);
      for (let i = 1; i < fences.length; i += 1) {
        assert.equal(typeof fences[i], 'bigint');
        assert.ok(fences[i] > fences[i - 1], `fence ${fences[i]} after ${fences[i - 1]}`);
      }
      assert.equal(await lock.locked(), false);
    });

    test('a timeout gives up with a LockTimeoutError, which is a WouldBlockError', async () => {
      const name = fresh('timeout');
      const holder = await new Lock(name, backend).acquire();
      const lock = new Lock(name, backend, { retryInterval: 10 });
      const started = Date.now();
      const error = await lock.acquire({ timeout: 100 }).then(() => null, (e) => e);
      assert.ok(error instanceof LockTimeoutError && error instanceof WouldBlockError && error instanceof TenureError);
      assert.equal(error.code, 'LOCK_TIMEOUT');
      assert.equal(error.lockName, name);
      assert.equal(error.timeoutMs, 100);
      assert.ok(Date.now() - started >= 90);
      await assert.rejects(lock.tryAcquire(), (e) => e instanceof WouldBlockError && e.code === 'WOULD_BLOCK');
      await holder.release();
      await (await lock.tryAcquire()).release();
    });

    test('an aborted acquire rejects with the reason and never takes the lock later', async () => {
      const name = fresh('abort');
      const holder = await new Lock(name, backend).acquire();
      const waiter = new Lock(name, backend, { retryInterval: 10 });
      const controller = new AbortController();
      const waiting = waiter.acquire({ signal: controller.signal });
      await sleep(30);
      controller.abort(new Error('shutting down'));
      await assert.rejects(waiting, { message: 'shutting down' });
      await assert.rejects(waiter.acquire({ signal: controller.signal }), { message: 'shutting down' });
      await holder.release();
      await sleep(50);
      // Nobody took it behind our back: a third party gets it at once.
      const third = await new Lock(name, backend).acquire({ timeout: 2000 });
      await third.release();
      assert.equal(await waiter.locked(), false);
    });

    test('an expired lease is taken over with a higher fence, and its holder can no longer release', async () => {
      const name = fresh('expiry');
      const first = await new Lock(name, backend, { leaseDuration: 200 }).acquire();
      const second = await new Lock(name, backend, { retryInterval: 20 }).acquire({ timeout: 3000 });
      assert.ok(second.fencingToken > first.fencingToken);
      assert.equal(await first.owned(), false);
      await assert.rejects(first.release(), (e) => e instanceof LockNotOwnedError && e.lockName === name);
      assert.equal(await second.owned(), true);
      assert.equal(await second.extend(), second.fencingToken);
      await second.release();
    });

    test('using() keeps the lease alive while the work runs, then releases', async () => {
      const name = fresh('using');
      const lock = new Lock(name, backend, { leaseDuration: 300 });
      const result = await lock.using(async (signal, handle) => {
        await sleep(700);
        assert.equal(await handle.owned(), true);
        return { aborted: signal.aborted, fence: handle.fencingToken };
      });
      assert.equal(result.aborted, false);
      assert.equal(typeof result.fence, 'bigint');
      assert.equal(await lock.locked(), false);
    });

    test('a handle is released by Symbol.asyncDispose (await using)', async () => {
      const lock = new Lock(fresh('dispose'), backend);
      const handle = await lock.acquire();
      assert.equal(await lock.locked(), true);
      await handle[Symbol.asyncDispose]();
      assert.equal(await lock.locked(), false);
      await handle[Symbol.asyncDispose](); // released already: not an error
    });
  });
}
