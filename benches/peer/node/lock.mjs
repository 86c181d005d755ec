// Node peers, measured in one run in interleaved slices (scripts/bench-peer.sh node):
// one task's acquire + release on Redis through Tenure, redis-semaphore's Mutex and redlock
// (both on ioredis), and the raw ioredis floor (SET NX PX + DEL); Tenure's memory cycle; 8
// async tasks on one name through Tenure and redis-semaphore, with Jain's index over the tasks'
// counts; a backend written in JavaScript (a Map) beside the memory store. Prints one `key value` line per figure; asserts nothing.
// Usage: node lock.mjs TENURE_PACKAGE_DIR REDIS_URL
import { createRequire } from 'node:module';
import { Redis } from 'ioredis';
import { Mutex } from 'redis-semaphore';
import Redlock from 'redlock';

const [packageDir, url] = process.argv.slice(2);
const tenure = createRequire(import.meta.url)(packageDir);
const BATCH = 200;
const SLICES = 11;
const RUN_MS = 2000;
const TASKS = 8;
const prefix = `tenure-bench-node-${process.pid}`;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const jain = (counts) => {
  const total = counts.reduce((a, b) => a + b, 0);
  const squares = counts.reduce((a, b) => a + b * b, 0);
  return squares === 0 ? 0 : (total * total) / (counts.length * squares);
};

/** Median µs per call of each step, their batches taking turns (one warm-up slice first). */
async function interleaved(steps) {
  const samples = Object.fromEntries(Object.keys(steps).map((k) => [k, []]));
  for (let slice = 0; slice <= SLICES; slice += 1) {
    for (const [name, step] of Object.entries(steps)) {
      const start = process.hrtime.bigint();
      for (let i = 0; i < BATCH; i += 1) await step();
      const us = Number(process.hrtime.bigint() - start) / 1000 / BATCH;
      if (slice > 0) samples[name].push(us);
    }
  }
  return Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]));
}

/** `TASKS` tasks each running `cycle(task)` in a loop for `RUN_MS`: cycles/s and Jain's index. */
async function contended(cycle) {
  const counts = Array(TASKS).fill(0);
  const end = Date.now() + RUN_MS;
  const started = process.hrtime.bigint();
  await Promise.all(counts.map(async (_, task) => {
    while (Date.now() < end) {
      await cycle(task);
      counts[task] += 1;
    }
  }));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { rate: counts.reduce((a, b) => a + b, 0) / seconds, fairness: jain(counts) };
}

/** The least a lock backend written in JavaScript does: a Map of token, expiry and fence. */
class MapLocks {
  held = new Map();
  fences = new Map();
  async acquire({ name, token, duration }) {
    const now = Date.now();
    const held = this.held.get(name);
    if (held && held.token !== token && held.until > now) return null;
    const fence = held && held.token === token ? held.fence : (this.fences.get(name) ?? 0) + 1;
    this.fences.set(name, fence);
    this.held.set(name, { token, until: now + duration, fence });
    return fence;
  }
  async release({ name, token }) {
    return this.held.get(name)?.token === token && this.held.delete(name);
  }
  async locked({ name }) {
    return this.held.has(name);
  }
  async owned({ name, token }) {
    return this.held.get(name)?.token === token;
  }
}

const redis = new Redis(url);
const store = await tenure.openBackend(`${url}/?prefix=${prefix}:`);
const memory = tenure.memoryBackend();
const tenureLock = new tenure.Lock('one', store, { envLoad: false });
const memoryLock = new tenure.Lock('one', memory, { envLoad: false });
const mutex = new Mutex(redis, `${prefix}:mutex`, { lockTimeout: 10000, refreshInterval: 0, retryInterval: 10 });
const redlock = new Redlock([redis], { retryCount: 0 });

const one = await interleaved({
  floor: async () => {
    await redis.set(`${prefix}:raw`, 'token', 'PX', 10000, 'NX');
    await redis.del(`${prefix}:raw`);
  },
  tenure: async () => {
    await (await tenureLock.acquire()).release();
  },
  semaphore: async () => {
    await mutex.acquire();
    await mutex.release();
  },
  redlock: async () => {
    await (await redlock.acquire([`${prefix}:redlock`], 10000)).release();
  },
});
const userLock = new tenure.Lock('one', new MapLocks(), { envLoad: false });
const mem = await interleaved({
  memory: async () => { await (await memoryLock.acquire()).release(); },
  user: async () => { await (await userLock.acquire()).release(); },
});

const locks = Array.from({ length: TASKS }, () => new tenure.Lock('many', store, { retryInterval: 10, envLoad: false }));
const mutexes = Array.from({ length: TASKS }, () => new Mutex(redis, `${prefix}:many`, { lockTimeout: 10000, refreshInterval: 0, retryInterval: 10 }));
const ours = await contended(async (task) => { await (await locks[task].acquire()).release(); });
const theirs = await contended(async (task) => { await mutexes[task].acquire(); await mutexes[task].release(); });

console.log(`floor ${one.floor.toFixed(1)}`);
console.log(`tenure ${one.tenure.toFixed(1)}`);
console.log(`semaphore ${one.semaphore.toFixed(1)}`);
console.log(`redlock ${one.redlock.toFixed(1)}`);
console.log(`memory ${mem.memory.toFixed(2)}`);
console.log(`user ${mem.user.toFixed(2)}`);
console.log(`contended ${ours.rate.toFixed(0)} ${ours.fairness.toFixed(3)}`);
console.log(`contended_semaphore ${theirs.rate.toFixed(0)} ${theirs.fairness.toFixed(3)}`);

const keys = await redis.keys(`${prefix}*`);
if (keys.length > 0) await redis.del(...keys);
await redis.quit();
await store.close();
