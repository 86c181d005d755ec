// worker_threads: every thread loads the addon; their locks exclude each other on a shared store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import { etcdUrl, fresh, storeUrls } from './stores.mjs';

const worker = `
const { workerData, parentPort } = require('node:worker_threads');
const { openBackend, Lock } = require('tenure');
(async () => {
  const { url, name, cycles, shared } = workerData;
  const state = new Int32Array(shared, 0, 2); // [inside, next slot]
  const fences = new BigInt64Array(shared, 8);
  const backend = await openBackend(url);
  const lock = new Lock(name, backend, { retryInterval: 5 });
  for (let i = 0; i < cycles; i += 1) {
    await lock.using(async (signal, handle) => {
      if (Atomics.add(state, 0, 1) !== 0) throw new Error('two threads held the lock at once');
      fences[Atomics.add(state, 1, 1)] = handle.fencingToken;
      Atomics.sub(state, 0, 1);
    });
  }
  await backend.close();
  parentPort.postMessage('done');
})().catch((e) => { parentPort.postMessage(String(e)); });
`;

for (const kind of ['sqlite', 'redis', 'etcd']) {
  test(`threads take turns on ${kind} with strictly increasing fences`, async () => {
    const url = kind === 'etcd' ? `${await etcdUrl()}/?prefix=${fresh('tenure-node')}/` : storeUrls()[kind];
    const [threads, cycles] = [4, 8];
    const shared = new SharedArrayBuffer(8 + 8 * threads * cycles);
    const name = fresh('threads');
    const runs = Array.from({ length: threads }, () => new Promise((resolve, reject) => {
      const w = new Worker(worker, { eval: true, workerData: { url, name, cycles, shared } });
      w.on('message', resolve);
      w.on('error', reject);
    }));
    assert.deepEqual(await Promise.all(runs), Array(threads).fill('done'));
    const fences = [...new BigInt64Array(shared, 8)];
    assert.equal(fences.length, threads * cycles);
    for (let i = 1; i < fences.length; i += 1) assert.ok(fences[i] > fences[i - 1], `${fences[i]} after ${fences[i - 1]}`);
  });
}

// A worker torn down with its connections open: Node closes the environment while the addon
// watches sockets on the worker's loop and waits on the store; nothing crashes or hangs.
const abandon = `
const { workerData, parentPort } = require('node:worker_threads');
const { openBackend, Lock } = require('tenure');
(async () => {
  const { urls, name, wait } = workerData;
  const backends = await Promise.all(urls.map((url) => openBackend(url)));
  for (const backend of backends) await new Lock(name, backend).acquire();
  parentPort.postMessage('held');
  // Another lock of the same names: pending (the worker's own holds it) until the teardown.
  if (wait) for (const backend of backends) void new Lock(name, backend, { retryInterval: 5 }).acquire().catch(() => {});
})().catch((e) => { parentPort.postMessage(String(e)); });
`;

for (const wait of [false, true]) {
  test(`a worker with open connections ${wait ? 'terminated while it waits' : 'that returns'} exits cleanly`, async () => {
    const urls = storeUrls();
    const name = fresh('abandon');
    const w = new Worker(abandon, { eval: true, workerData: { urls: [urls.redis, urls.postgres], name, wait } });
    const exited = new Promise((resolve) => w.on('exit', resolve));
    const said = await new Promise((resolve, reject) => { w.once('message', resolve); w.on('error', reject); });
    assert.equal(said, 'held');
    if (wait) await w.terminate();
    // A worker that returns holds nothing that keeps its loop alive: it exits on its own.
    assert.equal(await exited, wait ? 1 : 0);
  });
}
