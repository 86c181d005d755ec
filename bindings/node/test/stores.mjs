// The stores the tests run on: memory, a SQLite file, the machine's Redis and PostgreSQL
// (TENURE_REDIS_URL, TENURE_POSTGRES_URL), each under fresh keys or tables.
import { mkdtempSync, rmSync } from 'node:fs';
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
    postgres: `${postgresUrl}?lock_table=${table}_locks&leader_table=${table}_leaders&schedule_table=${table}_schedules`,
  };
}

/** Opens each store once for a test file; closes them at its end. */
export async function openStores(after) {
  const urls = storeUrls();
  const stores = {};
  for (const [kind, url] of Object.entries(urls)) stores[kind] = await openBackend(url);
  after(async () => {
    for (const store of Object.values(stores)) await store.close();
  });
  return stores;
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
