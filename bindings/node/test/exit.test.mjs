// Exit behaviour: a script that is done exits at once, whatever it holds; a killed one leaves a
// lease that expires normally; a SIGTERM handler the user installs releases before exiting.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { Lock, openBackend } from 'tenure';
import { fresh, redisUrl, sleep } from './stores.mjs';

const url = `${redisUrl}/?prefix=${fresh('tenure-node-exit')}:`;
const backend = await openBackend(url);

function child(source, name) {
  const proc = spawn(process.execPath, ['-e', source], { env: { ...process.env, URL: url, NAME: name } });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { out += d; });
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal, out })));
  const line = (text) => new Promise((resolve) => {
    const look = () => (out.includes(text) ? resolve() : setTimeout(look, 10));
    look();
  });
  return { proc, exited, line };
}

const take = `
const { openBackend, Lock } = require('tenure');
(async () => {
  const backend = await openBackend(process.env.URL);
  const handle = await new Lock(process.env.NAME, backend, { leaseDuration: 800 }).acquire();
  HOLD
  console.log('held', handle.fencingToken);
})();
`;

test('a script that takes a lock and returns exits promptly', async () => {
  const name = fresh('returns');
  const started = Date.now();
  const { exited } = child(take.replace('HOLD', ''), name);
  const { code, out } = await exited;
  const took = Date.now() - started;
  assert.equal(code, 0, out);
  assert.match(out, /held \d+/);
  // No hang at exit: the runtime's threads and connections do not keep Node alive.
  assert.ok(took < 5000, `exited after ${took} ms`);
  // (Node finalizes the handle at teardown, which hands its release to the runtime: whether that
  // reaches the store before the process is gone is not promised; the lease expires otherwise.)
  const handle = await new Lock(name, backend, { retryInterval: 20 }).acquire({ timeout: 5000 });
  await handle.release();
});

test('a holder killed with SIGKILL leaves a lease that expires normally', async () => {
  const name = fresh('killed');
  // The keep-alive alone keeps the process alive, as a running timer would.
  const { proc, exited, line } = child(take.replace('HOLD', 'handle.keepAlive();'), name);
  await line('held');
  await sleep(1200); // past one lease: the keep-alive renews it
  const lock = new Lock(name, backend, { retryInterval: 20 });
  assert.equal(await lock.locked(), true, 'the keep-alive did not keep the lease');
  proc.kill('SIGKILL');
  assert.equal((await exited).signal, 'SIGKILL');
  const handle = await lock.acquire({ timeout: 5000 });
  await handle.release();
});

test('a keep-alive unref()ed lets the process exit', async () => {
  const { exited } = child(take.replace('HOLD', 'handle.keepAlive().unref();'), fresh('unref'));
  const { code, out } = await exited;
  assert.equal(code, 0, out);
  assert.match(out, /held \d+/);
});

const elect = `
const { openBackend, LeaderElection } = require('tenure');
(async () => {
  const backend = await openBackend(process.env.URL);
  const election = new LeaderElection(process.env.NAME, backend, { retryInterval: 50 });
  election.start();
  UNREF
  console.log('started');
})();
`;

test('a running election keeps the process alive, and unref() lets it exit', async () => {
  const running = child(elect.replace('UNREF', ''), fresh('elect'));
  await running.line('started');
  await sleep(1200);
  assert.equal(running.proc.exitCode, null, 'exited while the election ran');
  running.proc.kill('SIGKILL');
  await running.exited;
  const { code, out } = await child(elect.replace('UNREF', 'election.unref();'), fresh('elect')).exited;
  assert.equal(code, 0, out);
});

test('a SIGTERM handler the user installs releases before the process exits', async () => {
  const name = fresh('sigterm');
  const hold = `
    handle.keepAlive();
    process.on('SIGTERM', async () => { await handle.release(); await backend.close(); process.exit(0); });
  `;
  const { proc, exited, line } = child(take.replace('HOLD', hold), name);
  await line('held');
  proc.kill('SIGTERM');
  const { code, signal, out } = await exited;
  assert.deepEqual({ code, signal }, { code: 0, signal: null }, out);
  assert.equal(await new Lock(name, backend).locked(), false);
});

test.after(() => backend.close());
