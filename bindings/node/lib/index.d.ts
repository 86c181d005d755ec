// Types of the npm package `tenure`. Durations are milliseconds.

/** An open store. `await using backend = await openBackend(url)` closes it at the block's end. */
export declare class Backend {
  private constructor();
  /** `memory`, `sqlite`, `redis`, `postgres`, `etcd`, or `user` (a backend written in JavaScript). */
  get kind(): string;
  /** How far its locks exclude: `process` (memory), `host` (SQLite) or `cluster`. */
  get scope(): 'process' | 'host' | 'cluster';
  /** Closes the store (SQLite vacates expired leases); later calls fail. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * What every call of a backend written in JavaScript is given: the name with its kind prefix
 * (`lock:cart`, `tasklock:job`, `leader:svc`), and a signal that aborts if Tenure gives the call
 * up altogether (a late answer is still read, to give a late grant back).
 */
export interface BackendCall {
  name: string;
  signal: AbortSignal;
}

/**
 * A lock store written in JavaScript (grelmicro's `LockBackend`): `acquire` answers the fencing
 * token — a positive integer that grows on every change of holder and stays the same when
 * `token` renews its own lease — or `null` when another token holds the lock. Methods may answer
 * directly or through a promise. Durations are milliseconds.
 */
export interface LockBackend {
  acquire(call: BackendCall & { token: string; duration: number }): Promise<number | bigint | null> | number | bigint | null;
  release(call: BackendCall & { token: string }): Promise<boolean> | boolean;
  locked(call: BackendCall): Promise<boolean> | boolean;
  owned(call: BackendCall & { token: string }): Promise<boolean> | boolean;
  /** The reach of its exclusion, judged by `Coordination` (not judged if absent). */
  readonly scope?: 'process' | 'host' | 'cluster';
}

/** A leader record as a backend written in JavaScript answers it. */
export interface LeaderRecordAnswer {
  holder: string;
  /** ms. */
  leaseDuration: number;
  /** A Date, or ms since the Unix epoch. */
  acquiredAt: Date | number;
  renewedAt: Date | number;
  transitions: number;
  metadata?: Record<string, string> | Map<string, string>;
}

/** A leader election store written in JavaScript (grelmicro's `LeaderElectionBackend`). */
export interface LeaderElectionBackend {
  acquireOrRenew(
    call: BackendCall & { token: string; duration: number; metadata: Record<string, string> },
  ): Promise<LeaderRecordAnswer> | LeaderRecordAnswer;
  release(call: BackendCall & { token: string }): Promise<boolean> | boolean;
  get(call: BackendCall): Promise<LeaderRecordAnswer | null> | LeaderRecordAnswer | null;
  readonly scope?: 'process' | 'host' | 'cluster';
}

/** A write grant as a read-write lock backend written in JavaScript answers it. */
export interface WriteGrantAnswer {
  /** Strictly increasing per name, across every write (number or bigint). */
  fencingToken: number | bigint;
  /** The writer before this one let its lease run out without releasing. */
  poisoned: boolean;
}

/** A read-write lock's state as a backend written in JavaScript answers it. */
export interface ReadWriteLockStateAnswer {
  generation: number | bigint;
  writing: boolean;
  readers: number;
  waitingWriters: number;
}

type Answered<T> = Promise<T> | T;

/**
 * A read-write lock store written in JavaScript (grelmicro 0.44's `ReadWriteLockBackend`, in
 * camel case): `acquireRead` answers the generation read (the fencing token of the last write, 0
 * before the first) or `null` while a writer holds or waits with a live intent; `acquireWrite` a
 * grant or `null`, keeping an intent for `duration` iff `intent`; `downgrade` turns the write
 * lease into a read lease and answers the generation. Names arrive as `rwlock:doc`; ms.
 */
export interface ReadWriteLockBackend {
  acquireRead(call: BackendCall & { token: string; duration: number }): Answered<number | bigint | null>;
  acquireWrite(call: BackendCall & { token: string; duration: number; intent: boolean }): Answered<WriteGrantAnswer | null>;
  releaseRead(call: BackendCall & { token: string }): Answered<boolean>;
  releaseWrite(call: BackendCall & { token: string }): Answered<boolean>;
  cancelIntent(call: BackendCall & { token: string }): Answered<boolean>;
  downgrade(call: BackendCall & { token: string; duration: number }): Answered<number | bigint | null>;
  state(call: BackendCall): Answered<ReadWriteLockStateAnswer>;
  ownedRead(call: BackendCall & { token: string }): Answered<boolean>;
  ownedWrite(call: BackendCall & { token: string }): Answered<boolean>;
  readonly scope?: 'process' | 'host' | 'cluster';
}

/** A semaphore's permit as a backend written in JavaScript answers it. */
export interface PermitAnswer {
  /** The permit's fencing token (strictly increasing per name), or `null` when refused. */
  fencingToken: number | bigint | null;
  /** The permit count stored for the name (the one asked, unless another is in use). */
  permits: number;
}

/** A semaphore's state as a backend written in JavaScript answers it. */
export interface SemaphoreStateAnswer {
  permits: number;
  holders: number;
  waiting: number;
  fence: number | bigint;
}

/**
 * A semaphore store written in JavaScript (Tenure's; grelmicro has none): `acquire` renews the
 * token's permit (same fencing token) or grants one with the next fencing token while fewer than
 * the stored count hold. `wait` (ms, or `null`) is how long a refused contender may keep a place
 * in line; a backend may keep none. Names arrive as `semaphore:pool`; ms.
 */
export interface SemaphoreBackend {
  acquire(
    call: BackendCall & { token: string; duration: number; permits: number; wait: number | null },
  ): Answered<PermitAnswer>;
  release(call: BackendCall & { token: string }): Answered<boolean>;
  owned(call: BackendCall & { token: string }): Answered<boolean>;
  state(call: BackendCall): Answered<SemaphoreStateAnswer>;
  readonly scope?: 'process' | 'host' | 'cluster';
}

/** The version of Tenure this package is (the Rust workspace's; its addon carries the same). */
export declare const version: string;

/** Opens the store at `url`: `memory:`, `sqlite:///path.db`, `redis://…`, `postgresql://…`, `etcd://…`. */
export declare function openBackend(url: string): Promise<Backend>;
/** A store in this process's memory, shared by every lock given it. */
export declare function memoryBackend(): Backend;

/** A lock's settings; what is not given comes from `GREL_*` variables or the defaults. */
export interface LockOptions {
  /** This process's worker id (default: from the host and process). */
  worker?: string;
  /** How long a lease lasts without renewal, ms (default 60000). */
  leaseDuration?: number;
  /** How long a waiter waits between attempts when no release is pushed, ms (default 100). */
  retryInterval?: number;
  /** Jitter of the retry interval, a fraction in [0, 1]. */
  retryJitter?: number;
  /** How long one store call may take, ms. */
  backendTimeout?: number;
  /** Read exactly `{envPrefix}{FIELD}` variables. */
  envPrefix?: string;
  /** Read (`true`) or ignore (`false`) the environment, whatever `GREL_ENV_LOAD` says. */
  envLoad?: boolean;
  /**
   * What the lock, the read-write lock or the semaphore is held for, shown with each holder's
   * host, pid and program by `tenure locks` (and a lock's by `lock.state()`); 1 to 256 bytes,
   * given when it is made.
   */
  purpose?: string;
}

/** What a holder told the store when it took the lock. */
export interface HolderInfo {
  host: string;
  pid: number;
  program: string;
  purpose: string | null;
  acquiredAt: Date;
}

/** Who holds a lock now (`lock.state()`); never its ownership token. */
export interface LockState {
  name: string;
  held: boolean;
  /** The last fencing token issued for the name (kept after release, except on etcd). */
  fencingToken: bigint | null;
  worker: string | null;
  expiresAt: Date | null;
  /** `null` when free, or when the holder told nothing (a grelmicro process). */
  holder: HolderInfo | null;
  /**
   * Who waits for it, first in line first; `null` where the store keeps no line (SQLite, etcd,
   * memory, a user-written backend).
   */
  waiting: Waiter[] | null;
}

/** One in a lock's waiting line (never its ownership token). */
export interface Waiter {
  worker: string;
  /** Since when it waits; `null` where the store does not keep it. */
  since: Date | null;
  /** What it told the store; `null` if nothing. */
  details: HolderInfo | null;
}

/** A lock's resolved settings. */
export interface LockSettings {
  worker: string;
  leaseDuration: number;
  retryInterval: number;
  retryJitter: number;
  backendTimeout: number;
}

export interface AcquireOptions {
  /** Give up after this many ms with a `LockTimeoutError` (default: wait forever). */
  timeout?: number;
  /** Stop waiting when it aborts: the call rejects with its reason and never takes the lock. */
  signal?: AbortSignal;
}

export interface UsingOptions extends AcquireOptions {
  /** Release after at most this many ms even if `fn` still runs (its signal then aborts). */
  maxHold?: number;
  /**
   * Warn below this many ms of validity left while renewals fail (default a third of the lease;
   * under half the lease).
   */
  warnBelow?: number;
  /**
   * Called when renewals keep failing and less than `warnBelow` ms of validity is left, with
   * the ms left: the work's chance to checkpoint before the loss. Once per run of failures;
   * what it throws becomes a process warning, never an unhandled rejection. One under way when
   * the work ends is awaited before `using` settles: follow `signal` (the work's, aborted when
   * the lease is lost).
   */
  onWarning?: (msLeft: number, handle: LockHandle, signal: AbortSignal) => void | Promise<void>;
}

/** One acquisition of a lock. */
export declare class LockHandle {
  protected constructor();
  /** The lock name. */
  readonly name: string;
  /** The fencing token: send it with every write the lock protects. A `bigint`: never rounded. */
  readonly fencingToken: bigint;
  /** Whether the lease may be counted on now. */
  isValid(): boolean;
  /** Renews the lease for another lease duration; resolves to the fencing token. */
  extend(): Promise<bigint>;
  /** Whether this acquisition still holds a live lease on the store. */
  owned(): Promise<boolean>;
  /** Releases (`LockNotOwnedError` if it was released or lost meanwhile). */
  release(): Promise<void>;
  /**
   * Keeps the lease alive in the background for at most `maxHold` ms (unbounded without),
   * warning (`warning()`) below `warnBelow` ms of validity left while renewals fail (a third of
   * the lease without); the process stays alive meanwhile, as with a running timer, unless
   * `unref()` is called.
   */
  keepAlive(maxHold?: number, warnBelow?: number): this;
  /** Lets the process exit while the lease is kept alive (as `timer.unref()`). */
  unref(): this;
  /** Undoes `unref()`. */
  ref(): this;
  /** Resolves `true` the moment the lease is lost, `false` once it is released. */
  lost(): Promise<boolean>;
  /**
   * Resolves at the keep-alive's next warning (renewals keep failing, validity running out) with
   * the ms of validity left; `null` once the lease is released or lost.
   */
  warning(): Promise<number | null>;
  /** Releases at the end of an `await using` block (a lost or released lease is not an error). */
  [Symbol.asyncDispose](): Promise<void>;
}

/** A distributed lock with fencing tokens. */
export declare class Lock {
  constructor(name: string, backend: Backend | LockBackend, options?: LockOptions);
  /** On the lock backend of the enclosing `coordination.run()` (else `OutOfContextError`). */
  constructor(name: string, options?: LockOptions);
  readonly name: string;
  settings(): LockSettings;
  /** Applies new settings from the next call on (the worker stays). */
  reconfigure(options: Omit<LockOptions, 'worker' | 'envPrefix' | 'envLoad' | 'purpose'>): void;
  /** Waits for the lock (see `AcquireOptions`). */
  acquire(options?: AcquireOptions): Promise<LockHandle>;
  /** One attempt: `WouldBlockError` if another holder has the lock. */
  tryAcquire(): Promise<LockHandle>;
  /** Whether anyone holds the lock. */
  locked(): Promise<boolean>;
  /** Who holds the lock: worker, fencing token, lease end and what the holder told the store. */
  state(): Promise<LockState>;
  /**
   * Runs `fn` holding the lock, its lease kept alive; `signal` aborts with a `LockLostError` the
   * moment the lease is lost. Releases when `fn` settles.
   */
  using<T>(fn: (signal: AbortSignal, handle: LockHandle) => Promise<T> | T, options?: UsingOptions): Promise<T>;
}

/** The waiting, trying and `using` of a lock, a semaphore, and each side of a read-write lock. */
export interface Leasing<H extends LockHandle> {
  /** Waits for the lease (see `AcquireOptions`). */
  acquire(options?: AcquireOptions): Promise<H>;
  /** One attempt: `WouldBlockError` if it is not free. */
  tryAcquire(): Promise<H>;
  /** Runs `fn` holding the lease, kept alive; `signal` aborts the moment it is lost. */
  using<T>(fn: (signal: AbortSignal, handle: H) => Promise<T> | T, options?: UsingOptions): Promise<T>;
}

/** A semaphore's state. */
export interface SemaphoreState {
  /** The stored permit count (0 while nobody holds or waits). */
  permits: number;
  holders: number;
  waiting: number;
  /** The last fencing token issued. */
  fence: bigint;
}

/**
 * A counting semaphore with leases and fencing tokens: at most `permits` holders at once, each
 * with a fencing token greater than every earlier permit's; waiters served in arrival order.
 * Another count while the name is in use rejects with a `SettingsValidationError`.
 */
export declare class Semaphore implements Leasing<LockHandle> {
  constructor(name: string, permits: number, backend: Backend | SemaphoreBackend, options?: LockOptions);
  /** On the store of the enclosing `coordination.run()` (else `OutOfContextError`). */
  constructor(name: string, permits: number, options?: LockOptions);
  readonly name: string;
  readonly permits: number;
  settings(): LockSettings;
  reconfigure(options: Omit<LockOptions, 'worker' | 'envPrefix' | 'envLoad' | 'purpose'>): void;
  acquire(options?: AcquireOptions): Promise<LockHandle>;
  tryAcquire(): Promise<LockHandle>;
  using<T>(fn: (signal: AbortSignal, handle: LockHandle) => Promise<T> | T, options?: UsingOptions): Promise<T>;
  /** Whether no permit is free now. */
  locked(): Promise<boolean>;
  state(): Promise<SemaphoreState>;
}

/** A read lease of a read-write lock. */
export declare class ReadHandle extends LockHandle {
  /** The generation read: the fencing token of the last write before it. */
  readonly generation: bigint;
}

/** The write lease of a read-write lock. */
export declare class WriteHandle extends LockHandle {
  /** Whether the writer before this one let its lease run out without releasing. */
  readonly poisoned: boolean;
  /** Turns the write lease into a read lease in one step (not while kept alive). */
  downgrade(): Promise<ReadHandle>;
}

/** A read-write lock's state. */
export interface ReadWriteLockState {
  generation: bigint;
  writing: boolean;
  readers: number;
  waitingWriters: number;
}

/**
 * A read-write lock, as grelmicro 0.44's: readers share, a writer writes alone. The work of a
 * side's `using` block is one caller: asking there for the write side while reading rejects with
 * `LockUpgradeError` (it would wait for itself), asking again for a side with `LockReentrantError`.
 */
export declare class ReadWriteLock {
  constructor(name: string, backend: Backend | ReadWriteLockBackend, options?: LockOptions);
  constructor(name: string, options?: LockOptions);
  readonly name: string;
  readonly read: Leasing<ReadHandle>;
  readonly write: Leasing<WriteHandle>;
  settings(): LockSettings;
  reconfigure(options: Omit<LockOptions, 'worker' | 'envPrefix' | 'envLoad' | 'purpose'>): void;
  state(): Promise<ReadWriteLockState>;
}

/** An election's settings; what is not given comes from `GREL_*` variables or the defaults. */
export interface ElectionOptions {
  worker?: string;
  /** How long leadership lasts without renewal, ms (default 15000). */
  leaseDuration?: number;
  /** How long a leader keeps trying to renew before it steps down, ms (default 10000). */
  renewDeadline?: number;
  /** How often the loop tries to acquire or renew, ms (default 2000). */
  retryInterval?: number;
  retryJitter?: number;
  backendTimeout?: number;
  /** How long the loop waits after a store error, ms. */
  errorInterval?: number;
  envPrefix?: string;
  envLoad?: boolean;
  /** Attached to the record while this worker leads. */
  metadata?: Record<string, string>;
  /**
   * What this worker leads for, shown with its host, pid and program by `tenure locks` while it
   * leads (1 to 256 bytes), given when it is made.
   */
  purpose?: string;
}

/** Who leads, as the store last said. Times are ms (since the Unix epoch for instants). */
export interface LeaderRecord {
  holder: string;
  leaseDuration: number;
  acquiredAt: number;
  renewedAt: number;
  transitions: number;
  metadata: Record<string, string>;
}

/**
 * Leader election: `start()` runs the loop in the background and emits `'leader'` and
 * `'follower'` on every change; the process stays alive while it runs, unless `unref()`.
 */
export declare class LeaderElection {
  constructor(name: string, backend: Backend | LeaderElectionBackend, options?: ElectionOptions);
  /** On the election backend of the enclosing `coordination.run()` (else `OutOfContextError`). */
  constructor(name: string, options?: ElectionOptions);
  readonly name: string;
  /** This worker's identity: the record's `holder` while it leads. */
  readonly worker: string;
  readonly isLeader: boolean;
  /**
   * While this worker leads: its term's fencing token (higher for every term, never reset; send
   * it with every write the leader makes); null when not leading, or on a store that keeps none.
   */
  readonly fencingToken: bigint | null;
  readonly isRunning: boolean;
  /**
   * The leader health check (client-go's): unhealthy when this worker believes it leads but the
   * store has not confirmed it within its renew deadline plus `toleranceMs` (default 10,000): its
   * loop is stuck. Answer 503 from a health route when `!healthy`.
   */
  health(toleranceMs?: number): { healthy: boolean; reason: string };
  /** The last record the store returned, or null. */
  readonly record: LeaderRecord | null;
  settings(): Record<string, number>;
  reconfigure(options: Omit<ElectionOptions, 'worker' | 'envPrefix' | 'envLoad' | 'metadata' | 'purpose'>): void;
  /** Starts the loop; false if it runs already. */
  start(): boolean;
  /** Stops the loop: leadership ends now; resolves once the lease is released. */
  stop(): Promise<void>;
  unref(): this;
  ref(): this;
  waitForLeader(options?: { signal?: AbortSignal }): Promise<void>;
  waitLoseLeader(options?: { signal?: AbortSignal }): Promise<void>;
  /**
   * Runs `fn` once leading; its signal aborts (a `WouldBlockError`) when leadership is lost.
   * Resolves to what `fn` returns, or `undefined` when it threw its signal's reason on a loss.
   * With `repeat`, runs it again after each completion and each re-election, until `signal`
   * aborts, the election stops or `fn` throws.
   */
  lead<T>(fn: (signal: AbortSignal) => Promise<T> | T, options?: { signal?: AbortSignal; repeat?: boolean }): Promise<T | undefined>;
  on(event: 'leader' | 'follower', listener: () => void): this;
  once(event: 'leader' | 'follower', listener: () => void): this;
  off(event: 'leader' | 'follower', listener: () => void): this;
  [Symbol.asyncDispose](): Promise<void>;
}

/** A task lock's settings; what is not given comes from `GREL_*` variables or the defaults. */
export interface TaskLockOptions {
  worker?: string;
  /** The shortest time between the starts of two runs, ms (default 1000; at most the lease). */
  minHoldDuration?: number;
  /** The lease taken at enter, ms (default 60000). */
  leaseDuration?: number;
  backendTimeout?: number;
  envPrefix?: string;
  envLoad?: boolean;
  /** What the task is, shown with each run's holder (1 to 256 bytes). */
  purpose?: string;
}

/** One run under a task lock. */
export declare class TaskRun {
  private constructor();
  readonly fencingToken: bigint;
  extend(): Promise<void>;
  /** Ends the run; the lock stays taken until the minimum hold has passed. */
  exit(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** At most one run of a job per `minHoldDuration` window across every worker. */
export declare class TaskLock {
  constructor(name: string, backend: Backend | LockBackend, options?: TaskLockOptions);
  /** On the lock backend of the enclosing `coordination.run()` (else `OutOfContextError`). */
  constructor(name: string, options?: TaskLockOptions);
  readonly name: string;
  settings(): Record<string, number>;
  reconfigure(options: Omit<TaskLockOptions, 'worker' | 'envPrefix' | 'envLoad'>): void;
  /** Starts a run, or rejects at once with a `WouldBlockError` (held, or within the window). */
  enter(): Promise<TaskRun>;
  locked(): Promise<boolean>;
  /** Who runs the task: as `Lock.state()`. */
  state(): Promise<LockState>;
}

export interface TenureErrorOptions {
  code?: string;
  lockName?: string;
  cause?: unknown;
}

/** Base of every error of `tenure`. */
export declare class TenureError extends Error {
  constructor(message: string, options?: TenureErrorOptions);
  /** A stable, machine-readable code (`LOCK_TIMEOUT`, `STORE_UNAVAILABLE`, …). */
  readonly code: string;
  /** The lock the error is about, if any. */
  readonly lockName?: string;
  /** The option at fault, for a `SettingsValidationError`. */
  readonly field?: string;
}
/** A store failed or could not be reached. */
export declare class StoreError extends TenureError {}
export declare class SettingsValidationError extends TenureError {}
export declare class OutOfContextError extends TenureError {}
/** A backend reaches less far than its `Coordination` requires, in `staging` or `production`. */
export declare class BackendScopeError extends TenureError {}
/** A store was used before it was opened or after it was closed. */
export declare class BackendNotOpenError extends OutOfContextError {}
/** `reconfigure` was given the options of another primitive. */
export declare class ConfigTypeError extends TenureError {}
/** A blocking call on the thread that must serve it. */
export declare class EventLoopDeadlockError extends TenureError {}
export declare class CoordinationError extends TenureError {}
export declare class CoordinationBackendError extends CoordinationError {}
export declare class LockReentrantError extends CoordinationError {}
/** Another operation of this holder is still in progress. */
export declare class LockBusyError extends LockReentrantError {}
export declare class LockUpgradeError extends CoordinationError {}
export declare class LockBackendError extends CoordinationError {}
export declare class LockAcquireError extends LockBackendError {}
export declare class LockExtendError extends LockBackendError {}
export declare class LockReleaseError extends LockBackendError {}
export declare class LockLockedCheckError extends LockBackendError {}
export declare class LockOwnedCheckError extends LockBackendError {}
export declare class LockNotOwnedError extends CoordinationError {}
/** The lease was lost while held (`using()`), and the work's signal aborted. */
export declare class LockLostError extends LockNotOwnedError {
  /**
   * Why: `expired` (it ran out before a renewal was tried: the process was paused),
   * `unreachable` (renewals failed or went unanswered until it ran out), `lost` (another holder
   * has it), `fence_regression` (the store answered a lower fence: it lost its grants),
   * `max_hold`, or `revoked` (an operator ran `tenure revoke`; the message gives the reason).
   */
  readonly reason: 'expired' | 'unreachable' | 'lost' | 'fence_regression' | 'max_hold' | 'revoked';
}
export declare class AdmissionError extends TenureError {}
export declare class WouldBlockError extends AdmissionError {}
export declare class LockTimeoutError extends WouldBlockError {
  /** The timeout that ran out, ms. */
  readonly timeoutMs: number;
}

/** One of the driver's events (see `logger`). */
export interface LogRecord {
  level: 'error' | 'warn' | 'info' | 'debug';
  /** What happened: `lock lost`, `acquired leadership`, … */
  message: string;
  /** The event's own fields (`lock`, `election`, `fence`, `error`, …), as text. */
  fields: Record<string, string>;
  /** The message and its fields on one line. */
  line: string;
}

/**
 * The driver's events: leadership gained, released and stopped at `info`, a lost lock or
 * leadership at `warn`, store failures at `error`; `debug` (every acquire and release) with
 * `TENURE_LOG_DEBUG=1` or `DEBUG=tenure`, which also prints every record to stderr. Nothing is
 * recorded while no listener is attached; no record carries an ownership token or a password.
 */
export declare const logger: {
  on(event: 'log', listener: (record: LogRecord) => void): typeof logger;
  once(event: 'log', listener: (record: LogRecord) => void): typeof logger;
  off(event: 'log', listener: (record: LogRecord) => void): typeof logger;
  listenerCount(event: 'log'): number;
};

/**
 * The driver's metrics and spans through `@opentelemetry/api`: on by itself when it can be
 * required (and `TENURE_TELEMETRY` is not `off`), on the global providers' `tenure` meter and
 * tracer. See docs/telemetry.md for the instruments.
 */
export declare const telemetry: {
  /** Turns it on; false if `@opentelemetry/api` is missing. */
  enable(): boolean;
  disable(): void;
  enabled(): boolean;
  /** Reports at most `limit` distinct lock names; later ones as `_other` (default 1000). */
  setNameLimit(limit: number): void;
};

/**
 * One component wiring the backends of every primitive (grelmicro's `Coordination`): a store for
 * all of them, or `{ lock, election, readWriteLock, semaphore }` each on its own (a store as
 * `lock` serves read-write locks and semaphores too). `run(fn)` makes it the backend of every
 * primitive built without one inside `fn` (and what `fn` starts), after judging the backends'
 * reach against `requires` under `GREL_ENVIRONMENT`.
 */
export declare class Coordination {
  constructor(
    source?: Backend | LockBackend | LeaderElectionBackend | ReadWriteLockBackend | SemaphoreBackend,
    options?: {
      lock?: Backend | LockBackend;
      election?: Backend | LeaderElectionBackend;
      readWriteLock?: Backend | ReadWriteLockBackend;
      semaphore?: Backend | SemaphoreBackend;
      name?: string;
      requires?: 'process' | 'host' | 'cluster';
    },
  );
  readonly kind: 'coordination';
  readonly name: string;
  readonly requires: 'process' | 'host' | 'cluster';
  /** The lock backend (`CoordinationBackendError` if none is wired). */
  readonly lockBackend: Backend | LockBackend;
  /** The leader election backend (`CoordinationBackendError` if none is wired). */
  readonly electionBackend: Backend | LeaderElectionBackend;
  /** The read-write lock backend (`CoordinationBackendError` if none is wired). */
  readonly readWriteLockBackend: Backend | ReadWriteLockBackend;
  /** The semaphore backend (`CoordinationBackendError` if none is wired). */
  readonly semaphoreBackend: Backend | SemaphoreBackend;
  lock(name: string, options?: LockOptions): Lock;
  semaphore(name: string, permits: number, options?: LockOptions): Semaphore;
  readWriteLock(name: string, options?: LockOptions): ReadWriteLock;
  taskLock(name: string, options?: TaskLockOptions): TaskLock;
  leaderElection(name: string, options?: ElectionOptions): LeaderElection;
  run<T>(fn: () => T): T;
}
