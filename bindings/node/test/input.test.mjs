// Bad input of every kind: a clear error naming the problem, never a crash, a hang or a secret.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Lock, LockAcquireError, OutOfContextError, SettingsValidationError, StoreError, TenureError, memoryBackend, openBackend } from 'tenure';

const backend = memoryBackend();

describe('bad input', () => {
  test('durations that are not a whole millisecond or more are refused, naming the option', async () => {
    for (const field of ['leaseDuration', 'retryInterval', 'backendTimeout']) {
      for (const value of [Number.NaN, -1, 0, 0.5, Number.POSITIVE_INFINITY, 1e300]) {
        assert.throws(
          () => new Lock('cart', backend, { [field]: value }),
          (e) => e instanceof SettingsValidationError && e.code === 'SETTINGS_INVALID' && e.field === field
            && e.message.includes(field),
          `${field}: ${value}`,
        );
      }
    }
    const lock = new Lock('cart', backend);
    for (const value of [Number.NaN, -5, 0.25, Number.NEGATIVE_INFINITY]) {
      await assert.rejects(lock.acquire({ timeout: value }), (e) => e instanceof SettingsValidationError && e.field === 'timeout');
    }
    assert.throws(() => lock.reconfigure({ leaseDuration: -1 }), (e) => e.field === 'leaseDuration');
    const handle = await lock.acquire();
    assert.throws(() => handle.keepAlive(Number.NaN), (e) => e.field === 'maxHold');
    await assert.rejects(lock.using(async () => 1, { maxHold: 0 }), (e) => e.field === 'maxHold');
    await handle.release();
    assert.equal(await lock.locked(), false, 'a refused using() left the lock held');
  });

  test('wrong types are TypeErrors', async () => {
    assert.throws(() => new Lock('cart', backend, { leaseDuration: '10' }), TypeError);
    assert.throws(() => new Lock('cart', 'redis://x'), TypeError);
    assert.throws(() => new Lock('cart', new Map()), TypeError);
    // `(name, options)` takes the backend of the enclosing coordination.run(): there is none.
    assert.throws(() => new Lock('cart', {}), OutOfContextError);
    assert.throws(() => new Lock(42, backend), TypeError);
    await assert.rejects(new Lock('cart', backend).acquire({ signal: {} }), TypeError);
    await assert.rejects(new Lock('cart', backend).using('not a function'), TypeError);
  });

  test('invalid names and settings are refused', () => {
    for (const name of ['', 'a'.repeat(10_000), 'bad\nname']) {
      assert.throws(() => new Lock(name, backend), (e) => e instanceof SettingsValidationError, JSON.stringify(name.slice(0, 20)));
    }
    assert.throws(() => new Lock('cart', backend, { retryJitter: 2 }), SettingsValidationError);
    assert.throws(() => new Lock('cart', backend, { worker: '' }), SettingsValidationError);
  });

  test('bad URLs name what is wrong; an unreachable store fails fast without showing a password', async () => {
    for (const url of ['', 'nosuch://x', 'redis://', 'postgresql://h:notaport/db']) {
      await assert.rejects(openBackend(url), (e) => e instanceof SettingsValidationError && e.message.length > 0, url);
    }
    const started = Date.now();
    await assert.rejects(openBackend('redis://:hunter2secret@127.0.0.1:1/0'), (e) => {
      assert.ok(e instanceof StoreError && e instanceof TenureError, String(e));
      assert.equal(e.code, 'STORE_UNAVAILABLE');
      assert.ok(!e.message.includes('hunter2secret'), e.message);
      return true;
    });
    await assert.rejects(openBackend('postgresql://u:hunter2secret@127.0.0.1:1/db'), (e) => !e.message.includes('hunter2secret'));
    assert.ok(Date.now() - started < 10_000);
  });

  test('a closed store gives clear errors', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'tenure-node-')), 'closed.db');
    const closed = await openBackend(`sqlite://${file}`);
    const lock = new Lock('cart', closed);
    await closed.close();
    const error = await lock.acquire({ timeout: 200 }).then(() => null, (e) => e);
    assert.ok(error instanceof LockAcquireError, String(error));
    assert.ok(error.cause instanceof StoreError && error.cause.code === 'STORE_CLOSED', String(error.cause));
    rmSync(dirname(file), { recursive: true, force: true });
  });
});
