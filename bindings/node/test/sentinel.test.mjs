// A Redis master behind Sentinel, from Node: the store opened from a redis+sentinel:// URL, a
// node-redlock user's using() on it, and a failover (the master killed): the next grants come
// from the replica the sentinel promotes, with fences above those before. The test starts its
// own master, replica and sentinel on free ports.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Lock, openBackend } from 'tenure';
import { freePort, sleep } from './stores.mjs';

function server(args) {
  return spawn('redis-server', args, { stdio: 'ignore' });
}

async function until(what, check, ms = 30000) {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

test('locks through a redis+sentinel:// URL, across a failover', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tenure-node-sentinel-'));
  const [master, replica, sentinel] = [await freePort(), await freePort(), await freePort()];
  const base = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
  const procs = [server(['--port', String(master), ...base])];
  procs.push(server(['--port', String(replica), ...base, '--replicaof', '127.0.0.1', String(master)]));
  const config = join(dir, 'sentinel.conf');
  writeFileSync(
    config,
    `port ${sentinel}\nbind 127.0.0.1\ndir ${dir}\nsentinel monitor mymaster 127.0.0.1 ${master} 1\n` +
      'sentinel down-after-milliseconds mymaster 1000\nsentinel failover-timeout mymaster 5000\n',
  );
  procs.push(server([config, '--sentinel']));
  let backend;
  try {
    const url = `redis+sentinel://127.0.0.1:${sentinel}/mymaster/0?prefix=tenure-node-sentinel:&command_timeout=1`;
    backend = await until('the master through the sentinel', () => openBackend(url));
    // The sentinel learns of the replica from the master; it can promote it only once it has.
    const cli = (port, ...args) => execFileSync('redis-cli', ['-p', String(port), ...args]).toString();
    await until('the sentinel to know the replica', () => cli(sentinel, 'SENTINEL', 'replicas', 'mymaster').includes(String(replica)));
    const lock = new Lock('report', backend, { leaseDuration: 5000 });
    const fences = [];
    for (let i = 0; i < 3; i += 1) {
      // As a node-redlock user writes it: the work gets a signal, the lock is released after.
      await lock.using(async (signal) => {
        assert.equal(signal.aborted, false);
        const handle = await new Lock('report', backend).tryAcquire().then(
          () => 'taken',
          () => 'busy',
        );
        assert.equal(handle, 'busy', 'held while the work runs');
      });
      const handle = await lock.acquire();
      fences.push(handle.fencingToken);
      await handle.release();
    }
    assert.deepEqual(
      fences,
      [...fences].sort((a, b) => (a < b ? -1 : 1)),
      `fences increase: ${fences}`,
    );
    // Once the replica has the last fence, the master is killed.
    const last = String(fences[fences.length - 1]);
    const replicated = () => cli(replica, 'GET', 'tenure-node-sentinel:fence:lock:report').trim();
    await until('the replica in sync', () => replicated() === last);
    procs[0].kill('SIGKILL');
    const after = await until('a grant from the promoted replica', async () => {
      const handle = await lock.acquire({ timeout: 1000 });
      const fence = handle.fencingToken;
      await handle.release();
      return fence;
    });
    assert.ok(after > fences[fences.length - 1], `fence ${after} after ${fences}`);
  } finally {
    await backend?.close().catch(() => {});
    for (const proc of procs) proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
