// The stores the tests run on: memory, a SQLite file, the machine's Redis and PostgreSQL
// (TENURE_REDIS_URL, TENURE_POSTGRES_URL), and an etcd member this process starts (Debian's
// `etcd`), each under fresh keys or tables.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openBackend } from 'tenure';

export const redisUrl = process.env.TENURE_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const postgresUrl = process.env.TENURE_POSTGRES_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';

let count = 0;
/** A fresh name, unique to this process and call. */
export function fresh(stem) {
  count += 1;
  return `${stem}_${process.pid}_${Date.now()}_${count}`;
}

/** A URL of each store, fresh. */
export function storeUrls() {
  const dir = mkdtempSync(join(tmpdir(), 'tenure-node-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const table = fresh('node');
  return {
    memory: 'memory:',
    sqlite: `sqlite://${join(dir, 'locks.db')}`,
    redis: `${redisUrl}/?prefix=${fresh('tenure-node')}:`,
    postgres: `${postgresUrl}?lock_table=${table}_locks&leader_table=${table}_leaders&schedule_table=${table}_schedules` +
      `&rwlock_table=${table}_rwlocks&semaphore_table=${table}_semaphores`,
  };
}

/** A port nobody listens on now. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

let etcd;
/** The client URL of a one-member etcd cluster started for this process (killed at its exit). */
export async function etcdUrl() {
  if (etcd === undefined) {
    const [client, peer] = [await freePort(), await freePort()];
    const dir = mkdtempSync(join(tmpdir(), 'tenure-node-etcd-'));
    const [c, p] = [`http://127.0.0.1:${client}`, `http://127.0.0.1:${peer}`];
    const child = spawn('etcd', ['--name', 't', '--data-dir', join(dir, 'data'), '--listen-client-urls', c,
      '--advertise-client-urls', c, '--listen-peer-urls', p, '--initial-advertise-peer-urls', p,
      '--initial-cluster', `t=${p}`], { stdio: 'ignore' });
    child.unref();
    process.on('exit', () => {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    });
    const deadline = Date.now() + 20_000;
    for (;;) {
      const up = await new Promise((resolve) => {
        const socket = createConnection({ host: '127.0.0.1', port: client }, () => { socket.end(); resolve(true); });
        socket.on('error', () => resolve(false));
      });
      if (up) break;
      if (Date.now() > deadline) throw new Error('etcd did not start');
      await sleep(50);
    }
    etcd = `etcd://127.0.0.1:${client}`;
  }
  return etcd;
}

/** Opens each store once for a test file; closes them at its end. */
export async function openStores(after) {
  const urls = { ...storeUrls(), etcd: `${await etcdUrl()}/?prefix=${fresh('tenure-node')}/` };
  const stores = {};
  for (const [kind, url] of Object.entries(urls)) stores[kind] = await openBackend(url);
  after(async () => {
    for (const store of Object.values(stores)) await store.close();
  });
  return stores;
}

/**
 * Ms to wait for a lease of `ms` to have ended in the store: etcd keeps leases in whole seconds
 * and never below its minimum TTL (2 s for Debian's defaults), so it holds longer than asked.
 */
export function outlast(kind, ms) {
  return kind === 'etcd' ? Math.max(ms, 2000) + 1000 : ms;
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
