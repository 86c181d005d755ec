// Task locks on every store: at most one run per minimum-hold window, across workers.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { LockNotOwnedError, SettingsValidationError, TaskLock, WouldBlockError } from 'tenure';
import { fresh, openStores, outlast, sleep } from './stores.mjs';

const stores = await openStores(after);

for (const [kind, backend] of Object.entries(stores)) {
  describe(`a task lock on ${kind}`, () => {
    test('one run per window: refused while held and within the minimum hold, then again', async () => {
      const name = fresh('nightly');
      const [a, b] = [new TaskLock(name, backend, { minHoldDuration: 400 }), new TaskLock(name, backend, { minHoldDuration: 400 })];
      const started = Date.now();
      const run = await a.enter();
      const entered = Date.now();
      await assert.rejects(b.enter(), (e) => e instanceof WouldBlockError && e.lockName === name);
      await run.extend();
      await run.exit();
      // The job was quick: the window still holds until 400 ms after the start.
      if (Date.now() - started < 300) {
        await assert.rejects(b.enter(), WouldBlockError);
        assert.equal(await b.locked(), true);
      }
      await assert.rejects(run.exit(), LockNotOwnedError);
      // The window runs 400 ms from the run's start, which the store saw by the time the enter
      // answered (a SQLite commit can take a while on a busy disk).
      await sleep(Math.max(0, entered + outlast(kind, 500) - Date.now()));
      const next = await b.enter();
      assert.ok(next.fencingToken > run.fencingToken);
      await next[Symbol.asyncDispose]();
      await next[Symbol.asyncDispose](); // exited already: not an error
    });
  });
}

test('bad task lock settings name the option', () => {
  const backend = Object.values(stores)[0];
  assert.throws(() => new TaskLock('t', backend, { minHoldDuration: -1 }), (e) => e instanceof SettingsValidationError && e.field === 'minHoldDuration');
  assert.throws(() => new TaskLock('t', backend, { minHoldDuration: 5000, leaseDuration: 1000 }), SettingsValidationError);
});
