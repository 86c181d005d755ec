// using() on a store that freezes: the work's signal aborts before the lease could pass to anyone
// else. The test starts its own Redis server on a free port and SIGSTOPs it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { Lock, LockLostError, openBackend } from 'tenure';
import { freePort, sleep } from './stores.mjs';

async function startRedis() {
  const port = await freePort();
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i += 1) {
    try {
      return { proc, backend: await openBackend(url) };
    } catch {
      await sleep(50);
    }
  }
  proc.kill('SIGKILL');
  throw new Error(`redis-server on port ${port} did not start`);
}

test('a frozen store aborts the signal of the work holding its lock, within the lease', async () => {
  const { proc, backend } = await startRedis();
  try {
    const lock = new Lock('frozen', backend, { leaseDuration: 1000, backendTimeout: 200 });
    let abortedAfter;
    let frozenAt;
    const work = lock.using(async (signal) => {
      frozenAt = Date.now();
      proc.kill('SIGSTOP');
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      abortedAfter = Date.now() - frozenAt;
      assert.ok(signal.reason instanceof LockLostError, String(signal.reason));
      return 'finished';
    });
    await assert.rejects(work, (e) => e instanceof LockLostError && e.lockName === 'frozen');
    // The lease was taken at or before `frozenAt`: its validity ends within one lease of it.
    assert.ok(abortedAfter <= 1000, `aborted ${abortedAfter} ms after the freeze`);
  } finally {
    proc.kill('SIGCONT');
    proc.kill('SIGKILL');
    await backend.close().catch(() => {});
  }
});
