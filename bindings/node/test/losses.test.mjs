// A kept lease's losses told by cause, the warning before one, and a loss that never becomes an
// unhandled rejection: `lock.using(fn, { warnBelow, onWarning })`, `handle.warning()`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Lock, LockLostError, SettingsValidationError } from 'tenure';
import { DictLocks } from './dict_locks.mjs';
import { sleep } from './stores.mjs';

/** A user's store whose renewals throw while `failing`, and answer a lower fence while `regress`. */
class Flaky extends DictLocks {
  failing = false;
  regress = false;

  async acquire(call) {
    if (this.failing) throw new Error('the store is unreachable');
    const fence = await super.acquire(call);
    return this.regress && fence !== null ? fence - 1 : fence;
  }
}

/** Runs `body` and fails if anything became an unhandled rejection or an uncaught exception. */
async function nothingEscapes(body) {
  const escaped = [];
  const record = (error) => escaped.push(error);
  process.on('unhandledRejection', record);
  process.on('uncaughtException', record);
  try {
    await body();
    await sleep(300); // (a rejection is reported a turn after it is left unhandled)
  } finally {
    process.off('unhandledRejection', record);
    process.off('uncaughtException', record);
  }
  assert.deepEqual(escaped, []);
}

test('the warning comes before the loss, which says the store was unreachable', () =>
  nothingEscapes(async () => {
    const store = new Flaky();
    const lock = new Lock('job', store, { leaseDuration: 1500, envLoad: false });
    const warnings = [];
    const work = lock.using(
      async (signal) => {
        store.failing = true;
        await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
      },
      { onWarning: (msLeft, handle) => warnings.push([msLeft, handle.isValid()]) },
    );
    const lost = await work.then(() => assert.fail('the work resolved after a loss'), (error) => error);
    assert.ok(lost instanceof LockLostError, String(lost));
    assert.equal(lost.reason, 'unreachable');
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    const [left, valid] = warnings[0];
    assert.ok(left > 0 && left <= 500, `a third of the lease by default, ${left} ms left`);
    assert.ok(valid, 'warned while the lease could still be counted on');
  }));

test('a warning threshold of the user, and an onWarning that throws, is a process warning', () =>
  nothingEscapes(async () => {
    const store = new Flaky();
    const lock = new Lock('job', store, { leaseDuration: 1500, envLoad: false });
    const warned = [];
    const told = [];
    const onProcessWarning = (warning) => told.push(warning);
    process.on('warning', onProcessWarning);
    try {
      await lock.using(
        async (_signal, handle) => {
          store.failing = true;
          while (warned.length === 0) await sleep(10);
          store.failing = false; // renewals get through again: kept
          await sleep(1600);
          assert.ok(await handle.owned());
        },
        {
          warnBelow: 700,
          onWarning: async (msLeft) => {
            warned.push(msLeft);
            throw new Error('the checkpoint failed');
          },
        },
      );
    } finally {
      process.off('warning', onProcessWarning);
    }
    assert.ok(warned[0] > 300 && warned[0] <= 700, String(warned));
    assert.ok(told.some((w) => w.name === 'TenureWarning' && /onWarning of the lock "job" threw/.test(w.message)), told);
    assert.equal(await lock.locked(), false);
  }));

test('a regressed fence on renewal is a loss by fence regression', () =>
  nothingEscapes(async () => {
    const store = new Flaky();
    store.fences.set('lock:job', 7);
    const lock = new Lock('job', store, { leaseDuration: 600, envLoad: false });
    const lost = await lock
      .using(async (signal) => {
        store.regress = true;
        await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
      })
      .catch((error) => error);
    assert.ok(lost instanceof LockLostError, String(lost));
    assert.equal(lost.reason, 'fence_regression');
  }));

test('warnBelow is checked: not a duration before the acquire, not under half the lease after it', () =>
  nothingEscapes(async () => {
    const lock = new Lock('job', new Flaky(), { leaseDuration: 2000, envLoad: false });
    for (const bad of [-1, 0, Number.NaN]) {
      await assert.rejects(lock.using(() => {}, { warnBelow: bad }), (e) => e instanceof SettingsValidationError && e.field === 'warnBelow');
    }
    await assert.rejects(lock.using(() => {}, { warnBelow: 1500 }), /warn_below must be less than half the lease_duration/);
    assert.equal(await lock.locked(), false, 'given back');
    await assert.rejects(lock.using(() => {}, { onWarning: 'checkpoint' }), TypeError);
  }));

test('a kept lease lost with nobody listening rejects nothing unhandled', () =>
  nothingEscapes(async () => {
    const store = new Flaky();
    const lock = new Lock('job', store, { leaseDuration: 600, envLoad: false });
    const handle = await lock.acquire();
    handle.keepAlive(undefined, 250);
    const warning = handle.warning();
    store.failing = true;
    const left = await warning;
    assert.ok(left !== null && left > 0 && left <= 250, String(left));
    assert.equal(await handle.lost(), true);
    assert.equal(await handle.warning(), null, 'no warning after the loss');
    store.failing = false;
    // (the store's lease outlives the holder's belief by 1 %: a release may still find it)
    const released = await handle.release().then(() => 'released', (e) => e.code);
    assert.ok(['released', 'LOCK_NOT_OWNED'].includes(released), released);
  }));
