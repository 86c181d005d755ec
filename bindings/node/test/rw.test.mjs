// Read-write locks on every store, as grelmicro 0.44's users write them, in Node's idioms.
import { AsyncLocalStorage } from 'node:async_hooks';
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { LockReentrantError, LockTimeoutError, LockUpgradeError, ReadWriteLock, WouldBlockError, memoryBackend } from 'tenure';
import { fresh, openStores, sleep } from './stores.mjs';

const stores = await openStores(after);

for (const [kind, backend] of Object.entries(stores)) {
  describe(`a read-write lock on ${kind}`, () => {
    test('readers share, a writer writes alone, and readers read its generation', async () => {
      const lock = new ReadWriteLock(fresh('doc'), backend, { retryInterval: 10 });
      const [a, b] = [await lock.read.acquire(), await lock.read.acquire()];
      assert.deepEqual([a.generation, b.generation], [0n, 0n]);
      await assert.rejects(lock.write.tryAcquire(), WouldBlockError);
      await assert.rejects(lock.write.acquire({ timeout: 200 }), LockTimeoutError);
      assert.equal((await lock.state()).waitingWriters, 0, 'the writer that gave up withdrew its intent');
      await a.release();
      await b.release();
      const writer = await lock.write.acquire();
      assert.equal(writer.fencingToken, 1n);
      assert.equal(writer.poisoned, false);
      await assert.rejects(lock.read.tryAcquire(), WouldBlockError);
      await writer.release();
      const reader = await lock.read.acquire();
      assert.equal(reader.generation, 1n);
      await reader.release();
    });

    test('a waiting writer holds new readers out, and a downgrade keeps writers out', async () => {
      const lock = new ReadWriteLock(fresh('intent'), backend, { retryInterval: 10 });
      const reader = await lock.read.acquire();
      const writing = lock.write.using(async (signal, handle) => handle.fencingToken);
      for (let i = 0; (await lock.state()).waitingWriters < 1; i += 1) {
        assert.ok(i < 500, 'the writer never waited');
        await sleep(10);
      }
      await assert.rejects(lock.read.tryAcquire(), WouldBlockError);
      await reader.release();
      assert.equal(await writing, 1n);
      const writer = await lock.write.acquire();
      const read = await writer.downgrade();
      assert.equal(read.generation, writer.fencingToken);
      await assert.rejects(lock.write.tryAcquire(), WouldBlockError);
      await (await lock.read.acquire()).release();
      await read.release();
    });

    test('inside a side\'s using block, asking to write while reading is an upgrade error', async () => {
      const lock = new ReadWriteLock(fresh('upgrade'), backend, { retryInterval: 10 });
      // Another caller: code bound to the context outside the block is another reader.
      const outside = AsyncLocalStorage.bind(() => lock.read.acquire());
      const generation = await lock.read.using(async () => {
        await assert.rejects(lock.write.acquire({ timeout: 2000 }), (e) => e instanceof LockUpgradeError && e.name === 'LockUpgradeError' && /upgrade/.test(e.message));
        await assert.rejects(lock.read.acquire(), LockReentrantError);
        assert.equal((await lock.state()).waitingWriters, 0, 'refused before asking the store');
        await (await outside()).release();
        return (await lock.state()).generation;
      });
      assert.equal(generation, 0n);
      const token = await lock.write.using(async (signal, handle) => {
        await assert.rejects(lock.write.tryAcquire(), LockReentrantError);
        await assert.rejects(lock.read.tryAcquire(), LockReentrantError, 'a writer does not also read');
        return handle.fencingToken;
      });
      assert.equal(token, 1n);
      const writer = await lock.write.acquire();
      await writer.release();
    });
  });
}

test('a lock backend is no read-write lock backend, and says what it lacks', () => {
  const user = { acquire: async () => 1n, release: async () => true, locked: async () => false, owned: async () => true };
  assert.throws(() => new ReadWriteLock('doc', user), /read-write lock backend: \w+ has no acquireRead, acquireWrite, releaseRead/);
  assert.equal(new ReadWriteLock('doc', memoryBackend()).name, 'doc');
});
