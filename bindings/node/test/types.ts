// Type-checked, not run: `tsc --strict --noEmit` over the installed package's types, with the
// shapes users write (scripts/test-node.sh).
import type { LockBackend } from 'tenure';
import { Coordination, LeaderElection, Lock, ReadWriteLock, Semaphore, TaskLock, LockLostError, LockTimeoutError, TenureError, WouldBlockError, logger, memoryBackend, openBackend } from 'tenure';
import type { ReadHandle, ReadWriteLockBackend, SemaphoreBackend, SemaphoreState, WriteGrantAnswer } from 'tenure';
import type { LockHandle, LockSettings, LockState, LogRecord } from 'tenure';

export async function quickStart(url: string): Promise<bigint> {
  await using backend = await openBackend(url);
  const lock = new Lock('invoices', backend, { leaseDuration: 10_000, retryInterval: 100 });

  // node-redlock's shape: the work gets a signal that aborts when the lease is lost.
  const total: number = await lock.using(async (signal, handle) => {
    const response = await fetch('https://example.com', { signal });
    return (await response.text()).length + Number(handle.fencingToken);
  }, { maxHold: 60_000, timeout: 5_000 });

  // grelmicro's `async with lock:` as TypeScript 5.2's `await using`.
  {
    await using handle = await lock.acquire({ timeout: 1_000, signal: AbortSignal.timeout(2_000) });
    const fence: bigint = handle.fencingToken;
    const renewed: bigint = await handle.extend();
    if (fence !== renewed || total < 0) throw new Error('a fence changed');
  }

  try {
    const handle: LockHandle = await lock.tryAcquire();
    await handle.release();
  } catch (error) {
    if (error instanceof LockTimeoutError) console.log(error.timeoutMs, error.lockName);
    else if (error instanceof WouldBlockError || error instanceof LockLostError) console.log(error.code);
    else if (error instanceof TenureError) throw error.cause;
  }
  const settings: LockSettings = lock.settings();
  lock.reconfigure({ leaseDuration: settings.leaseDuration * 2 });
  const locked: boolean = await new Lock('x', memoryBackend()).locked();
  const state: LockState = await new Lock('x', memoryBackend(), { purpose: 'nightly export' }).state();
  if (state.holder !== null) console.log(state.worker, state.holder.pid, state.holder.acquiredAt.toISOString());
  for (const waiter of state.waiting ?? []) console.log(waiter.worker, waiter.since?.toISOString(), waiter.details?.purpose);
  await lock.using(async (_signal, handle) => handle.fencingToken, {
    maxHold: 60_000,
    warnBelow: 5_000,
    onWarning: async (msLeft: number) => console.log(msLeft),
  });
  const kept = (await lock.acquire()).keepAlive(60_000, 5_000);
  const left: number | null = await kept.warning();
  if (left !== null) await kept.release();
  await using election = new LeaderElection('svc', backend, { leaseDuration: 15_000, metadata: { zone: 'a' } });
  election.on('leader', () => console.log('leading')).on('follower', () => console.log('following'));
  election.start();
  const done: string | undefined = await election.lead(async (signal) => (signal.aborted ? 'lost' : 'done'));
  const holder: string | undefined = election.record?.holder;
  if (done === holder) election.unref();
  {
    await using run = await new TaskLock('nightly', backend, { minHoldDuration: 60_000 }).enter();
    const token: bigint = run.fencingToken;
    if (token < 0n) await run.extend();
  }
  return locked ? 1n : 0n;
}

// The driver's events, routed to an application's logger.
export function routeLogs(sink: Record<LogRecord['level'], (fields: object, message: string) => void>): () => void {
  const listen = (record: LogRecord): void => sink[record.level]({ ...record.fields }, record.message);
  logger.on('log', listen);
  return () => {
    logger.off('log', listen);
  };
}

// Coordination: primitives built without a backend inside run().
export async function coordinated(url: string): Promise<boolean> {
  const store = await openBackend(url);
  const coordination = new Coordination(store, { requires: 'cluster' });
  return coordination.run(async () => {
    const handle = await new Lock('cart', { leaseDuration: 1000 }).acquire();
    await handle.release();
    return coordination.lock('cart').locked();
  });
}

// A backend written by the user: a class with the lock calls, nothing imported but its type.
class MapLocks implements LockBackend {
  readonly scope = 'process' as const;
  #held = new Map<string, { token: string; until: number; fence: bigint }>();
  #fences = new Map<string, bigint>();
  async acquire({ name, token, duration }: { name: string; token: string; duration: number }): Promise<bigint | null> {
    const held = this.#held.get(name);
    if (held && held.token !== token && held.until > Date.now()) return null;
    const fence = held?.token === token ? held.fence : (this.#fences.get(name) ?? 0n) + 1n;
    this.#fences.set(name, fence);
    this.#held.set(name, { token, until: Date.now() + duration, fence });
    return fence;
  }
  async release({ name, token }: { name: string; token: string }): Promise<boolean> {
    return this.#held.get(name)?.token === token && this.#held.delete(name);
  }
  async locked({ name }: { name: string }): Promise<boolean> {
    return this.#held.has(name);
  }
  async owned({ name, token }: { name: string; token: string }): Promise<boolean> {
    return this.#held.get(name)?.token === token;
  }
}

export async function userBackend(): Promise<bigint> {
  const lock = new Lock('cart', new MapLocks());
  return lock.using(async (_signal, handle) => handle.fencingToken);
}

// A semaphore and a read-write lock, as their users write them.
export async function permitsAndSides(): Promise<bigint> {
  const backend = memoryBackend();
  const pool = new Semaphore('exports', 4, backend, { leaseDuration: 30_000 });
  const fence: bigint = await pool.using(async (_signal, permit) => permit.fencingToken);
  const state: SemaphoreState = await pool.state();
  const lock = new ReadWriteLock('catalog', backend);
  const writer = await lock.write.acquire({ timeout: 1_000 });
  const poisoned: boolean = writer.poisoned;
  const reader: ReadHandle = await writer.downgrade();
  const generation: bigint = reader.generation;
  await reader.release();
  return fence + generation + BigInt(state.permits) + (poisoned ? 1n : 0n);
}

// Read-write lock and semaphore backends written by the user, wired through a Coordination.
class OneWriter implements ReadWriteLockBackend {
  #generation = 0;
  #writer: string | null = null;
  #readers = new Set<string>();
  acquireRead({ token }: { token: string }): number | null {
    if (this.#writer !== null) return null;
    this.#readers.add(token);
    return this.#generation;
  }
  async acquireWrite({ token }: { token: string; duration: number; intent: boolean }): Promise<WriteGrantAnswer | null> {
    if (this.#writer === token) return { fencingToken: this.#generation, poisoned: false };
    if (this.#writer !== null || this.#readers.size > 0) return null;
    this.#writer = token;
    this.#generation += 1;
    return { fencingToken: this.#generation, poisoned: false };
  }
  releaseRead({ token }: { token: string }): boolean {
    return this.#readers.delete(token);
  }
  releaseWrite({ token }: { token: string }): boolean {
    const mine = this.#writer === token;
    if (mine) this.#writer = null;
    return mine;
  }
  cancelIntent(): boolean {
    return false;
  }
  downgrade({ token }: { token: string; duration: number }): number | null {
    if (this.#writer !== token) return null;
    this.#writer = null;
    this.#readers.add(token);
    return this.#generation;
  }
  state() {
    return { generation: this.#generation, writing: this.#writer !== null, readers: this.#readers.size, waitingWriters: 0 };
  }
  ownedRead({ token }: { token: string }): boolean {
    return this.#readers.has(token);
  }
  ownedWrite({ token }: { token: string }): boolean {
    return this.#writer === token;
  }
}

const onePermit: SemaphoreBackend = {
  acquire: async ({ permits }) => ({ fencingToken: 1, permits }),
  release: async () => true,
  owned: async () => true,
  state: () => ({ permits: 1, holders: 1, waiting: 0, fence: 1n }),
};

export async function userSides(): Promise<bigint> {
  const coordination = new Coordination(undefined, { readWriteLock: new OneWriter(), semaphore: onePermit });
  const writer = await coordination.readWriteLock('doc').write.acquire();
  await writer.release();
  const permit = await new Semaphore('pool', 1, coordination.semaphoreBackend).acquire();
  return writer.fencingToken + permit.fencingToken;
}
