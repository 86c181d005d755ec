'use strict';
// tenure: distributed locks with fencing tokens on a Rust core (grelmicro's coordination API).
// This file gives the native addon (`native/`) Node's idioms: promises that reject with the
// classes of `./errors`, an `AbortSignal` on every wait, `lock.using(fn)` with a signal that
// aborts when the lease is lost, and `await using` on handles. Durations are milliseconds.

const { AsyncLocalStorage } = require('node:async_hooks');
const { inspect } = require('node:util');
const { Alive, endQuietly, native, errors, asyncDispose, settle, now, waitUnless, version } = require('./call');
const { LeaderElection } = require('./election');
const { TaskLock, TaskRun } = require('./task_lock');
const { lockState } = require('./state');
const { logger } = require('./logging');
const { telemetry } = require('./telemetry');
const { Coordination, resolve } = require('./coordination');

/** Opens the store at `url`: `memory:`, `sqlite:///path.db`, `redis://…`, `postgresql://…`, `etcd://…`. */
function openBackend(url) {
  return settle(() => native.openBackend(url));
}

/** A store in this process's memory (shared by every lock given it). */
function memoryBackend() {
  return native.memoryBackend();
}

native.Backend.prototype[asyncDispose] = function dispose() {
  return settle(() => this.close());
};
const close = native.Backend.prototype.close;
native.Backend.prototype.close = function closeBackend() {
  return settle(() => close.call(this));
};

/** The native guard behind a handle (for the handles of a read-write lock's sides). */
const guardOf = Symbol('guard');
/** A handle's lost error, for `using()`. */
const lostError = Symbol('lostError');

/** One acquisition of a lock: its name, its fencing token, and what can be done with it. */
class LockHandle {
  #guard;
  /** Keeps the process alive while a keep-alive runs (made by the first `keepAlive`/`unref`). */
  #alive;

  constructor(guard) {
    this.#guard = guard;
  }

  /** The native guard. */
  [guardOf]() {
    return this.#guard;
  }

  /** The lock name. */
  get name() {
    return this.#guard.name;
  }

  /** The fencing token (a `bigint`): send it with every write the lock protects. */
  get fencingToken() {
    return this.#guard.fencingToken;
  }

  /** Whether the lease may be counted on now. */
  isValid() {
    return this.#guard.isValid();
  }

  /** Renews the lease for another lease duration; the fencing token. */
  extend() {
    return settle(() => this.#guard.extend());
  }

  /** Whether this acquisition still holds a live lease on the store. */
  owned() {
    return settle(() => this.#guard.owned());
  }

  /** Releases the lock (`LockNotOwnedError` if it was released or lost meanwhile). */
  release() {
    this.#alive?.stop();
    return settle(() => this.#guard.release());
  }

  /**
   * Keeps the lease alive in the background for at most `maxHold` ms (unbounded without),
   * warning (see `warning()`) when renewals keep failing and less than `warnBelow` ms of validity
   * is left (a third of the lease without; under half the lease). Meanwhile the
   * process stays alive, as with a running timer, unless `unref()` was called.
   */
  keepAlive(maxHold, warnBelow) {
    now(() => this.#guard.keepAlive(maxHold, warnBelow));
    // Until the keep-alive ends: released, lost, or at its maxHold.
    (this.#alive ??= new Alive()).start(() => this.#guard.keeping());
    return this;
  }

  /** Lets the process exit while the lease is kept alive (as `timer.unref()`). */
  unref() {
    (this.#alive ??= new Alive()).unref();
    return this;
  }

  /** Undoes `unref()`. */
  ref() {
    this.#alive?.ref();
    return this;
  }


  /** Settles with `true` the moment the lease is lost, with `false` once it is released. */
  lost() {
    return settle(() => this.#guard.lost());
  }

  /**
   * Settles at the keep-alive's next warning — renewals keep failing and its validity is running
   * out — with the ms of validity left, or with `null` once the lease is released or lost.
   */
  warning() {
    return settle(() => this.#guard.warning());
  }

  /** The core's `LockLostError` for this lease (its `reason`: why the keep-alive ended). */
  [lostError]() {
    try {
      this.#guard.lostError();
    } catch (error) {
      return errors.fromNative(error);
    }
    throw new Error('tenure: the addon did not report a lost lease as an error (a bug, please report it)');
  }

  /** `await using handle = await lock.acquire()` releases at the end of the block. */
  [asyncDispose]() {
    this.#alive?.stop();
    return endQuietly(() => this.#guard.release());
  }
}

/** A read lease of a read-write lock: `generation` is the last write's fencing token. */
class ReadHandle extends LockHandle {
  /** The generation read (a `bigint`): the fencing token of the last write before this read. */
  get generation() {
    return this.fencingToken;
  }
}

/** The write lease of a read-write lock. */
class WriteHandle extends LockHandle {
  /** Whether the writer before this one let its lease run out without releasing. */
  get poisoned() {
    return this[guardOf]().poisoned;
  }

  /**
   * Turns the write lease into a read lease in one step (no writer gets in between); the read
   * handle (this handle is then spent). Not while a keep-alive renews it.
   */
  async downgrade() {
    const guard = this[guardOf]();
    await settle(() => guard.downgrade());
    return new ReadHandle(guard);
  }
}

/** What a user's code threw, for a message: whatever it is (a Symbol, a null-prototype object). */
function shown(thrown) {
  try {
    return inspect(thrown);
  } catch {
    return 'a value that cannot be shown';
  }
}

/**
 * Calls `onWarning(msLeft, handle, signal)` at each of the handle's warnings until it is released
 * or lost (none missed while one runs); what it throws or rejects with is a process warning,
 * never an unhandled rejection.
 */
async function tellWarnings(handle, onWarning, signal) {
  const guard = handle[guardOf]();
  for (;;) {
    let left;
    try {
      left = await settle(() => guard.nextWarning());
    } catch {
      return;
    }
    if (left === null) return;
    try {
      await onWarning(left, handle, signal);
    } catch (error) {
      process.emitWarning(`onWarning of the lock ${JSON.stringify(handle.name)} threw: ${shown(error)}`, {
        type: 'TenureWarning',
        detail: 'The lease is still kept; the warning is given once per run of failed renewals.',
      });
    }
  }
}

/** The native primitive behind a JavaScript one. */
const nativeOf = Symbol('native');

/** What every primitive with a lock's configuration shares: its name and settings. */
class Configured {
  #native;

  constructor(primitive) {
    this.#native = primitive;
  }

  /** The native primitive. */
  [nativeOf]() {
    return this.#native;
  }

  /** The name. */
  get name() {
    return this.#native.name;
  }

  /** The resolved settings: worker, leaseDuration, retryInterval, retryJitter, backendTimeout. */
  settings() {
    return this.#native.settings();
  }

  /** Applies new settings from the next call on (the worker stays). */
  reconfigure(options) {
    now(() => this.#native.reconfigure(options));
  }
}

/**
 * What a lock, a semaphore and each side of a read-write lock share: waiting for a lease, one
 * attempt, and `using`. `take(timeout, cancel)` and `tryTake()` are the native calls; `Handle`
 * wraps their guards.
 */
class Leasing extends Configured {
  #take;
  #tryTake;
  #Handle;

  constructor(primitive, take, tryTake, Handle = LockHandle) {
    super(primitive);
    [this.#take, this.#tryTake, this.#Handle] = [take, tryTake, Handle];
  }

  /**
   * Waits for the lease, up to `timeout` ms (`LockTimeoutError`; forever without one), or until
   * `signal` aborts (rejects with its reason; the lease is then never taken by this call).
   */
  async acquire({ timeout, signal } = {}) {
    return new this.#Handle(await waitUnless(signal, (cancel) => this.#take(timeout, cancel)));
  }

  /** One attempt: `WouldBlockError` if it is not free. */
  async tryAcquire() {
    return new this.#Handle(await settle(() => this.#tryTake()));
  }

  /**
   * Runs `fn(signal, handle)` holding the lock, its lease kept alive meanwhile (for at most
   * `maxHold` ms), then releases. `signal` aborts with a `LockLostError` the moment the lease is
   * lost — pass it to `fetch`, database drivers and timers — or with the reason of the
   * `signal` given here. If the lease was lost and `fn` did not throw, `using` rejects with the
   * `LockLostError` (its `reason` says why). `onWarning(msLeft, handle, signal)` is called when
   * renewals keep failing and less than `warnBelow` ms of validity is left (a third of the lease
   * without; under half the lease): the work's chance to checkpoint. What it throws or rejects
   * with becomes a process warning (`process.emitWarning`), never an unhandled rejection; one
   * under way when the work ends is awaited before `using` settles, so it should follow `signal`
   * (the work's), which aborts when the lease is lost.
   */
  async using(fn, { timeout, signal, maxHold, warnBelow, onWarning } = {}) {
    if (typeof fn !== 'function') throw new TypeError('using(fn): fn must be a function');
    if (maxHold !== undefined) now(() => native.checkDuration('maxHold', maxHold));
    if (warnBelow !== undefined) now(() => native.checkDuration('warnBelow', warnBelow));
    if (onWarning !== undefined && typeof onWarning !== 'function') {
      throw new TypeError('using(fn, { onWarning }): onWarning must be a function');
    }
    const handle = await this.acquire({ timeout, signal });
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal.reason);
    try {
      handle.keepAlive(maxHold, warnBelow);
    } catch (error) {
      await handle[asyncDispose]();
      throw error;
    }
    // (settles once the lease is released or lost; never rejects)
    const warned =
      onWarning === undefined ? undefined : tellWarnings(handle, onWarning, controller.signal).catch(() => {});
    handle.lost().then(
      (lost) => {
        if (lost) controller.abort(handle[lostError]());
      },
      () => {},
    );
    if (signal) signal.addEventListener('abort', onAbort, { once: true });
    let result;
    let failure;
    let failed = false;
    try {
      result = await fn(controller.signal, handle);
    } catch (error) {
      [failed, failure] = [true, error];
    } finally {
      if (signal) signal.removeEventListener('abort', onAbort);
    }
    const reason = controller.signal.reason;
    const lost = controller.signal.aborted && reason instanceof errors.LockLostError ? reason : undefined;
    try {
      await handle[asyncDispose]();
    } catch (error) {
      // The work's own failure, or the loss, says more than a release that could not be made.
      if (!failed && lost === undefined) throw error;
    } finally {
      // A checkpoint under way ends before `using` does.
      await warned;
    }
    if (failed) throw failure;
    if (lost !== undefined) throw lost;
    return result;
  }
}

/** A lock on a store, configured as grelmicro's `Lock(...)` (durations in ms). */
class Lock extends Leasing {
  constructor(name, backend, options) {
    const lock = now(() => new native.Lock(name, ...resolve('lock', backend, options)));
    super(lock, (timeout, cancel) => lock.acquire(timeout, cancel), () => lock.tryAcquire());
  }

  /** Whether anyone holds the lock. */
  locked() {
    return settle(() => this[nativeOf]().locked());
  }

  /** Who holds the lock: worker, fencing token, lease end and what the holder told the store. */
  async state() {
    return lockState(await settle(() => this[nativeOf]().state()));
  }
}

/**
 * A counting semaphore with leases and fencing tokens: at most `permits` holders of `name` at
 * once, each with a fencing token greater than every earlier permit's, waiters served in arrival
 * order. Every process using the name must ask for the same `permits` (another count while it is
 * in use rejects with a `SettingsValidationError`). A Tenure primitive; durations in ms.
 */
class Semaphore extends Leasing {
  constructor(name, permits, backend, options) {
    const semaphore = now(() => new native.Semaphore(name, permits, ...resolve('semaphore', backend, options)));
    super(semaphore, (timeout, cancel) => semaphore.acquire(timeout, cancel), () => semaphore.tryAcquire());
  }

  /** How many holders it admits at once. */
  get permits() {
    return this[nativeOf]().permits;
  }

  /** Whether no permit is free now (every one held, or taken by the waiters in line). */
  locked() {
    return settle(() => this[nativeOf]().locked());
  }

  /** `{ permits, holders, waiting, fence }`: the stored count (0 while unused), the holders, the waiters, the last fencing token. */
  state() {
    return settle(() => this[nativeOf]().state());
  }
}

/**
 * The read-write locks held by the work of each `using` block of a side, and each one's caller (a
 * native pair of holders): inside the block, that caller asks. The driver's rule then refuses a
 * reader asking to write (`LockUpgradeError`: it would wait for itself) and a second lease
 * (`LockReentrantError`). Outside any block each acquire is a caller of its own.
 */
const callers = new AsyncLocalStorage();

/** A side of a read-write lock: a `Leasing` whose acquires go through the current caller. */
class Side extends Leasing {
  #lock;

  constructor(lock, write, Handle) {
    const caller = () => callers.getStore()?.get(lock) ?? lock.holders();
    super(lock, (t, c) => caller().acquire(write, t, c), () => caller().tryAcquire(write), Handle);
    this.#lock = lock;
  }

  /** `Leasing.using`, its work one caller of the lock: it may not take the other side meanwhile. */
  using(fn, options) {
    const held = callers.getStore();
    if (held?.has(this.#lock)) return super.using(fn, options);
    return callers.run(new Map(held).set(this.#lock, this.#lock.holders()), () => super.using(fn, options));
  }
}

/**
 * A read-write lock, as grelmicro 0.44's: any number of readers (`lock.read`) or one writer
 * (`lock.write`), writer-preferring. Each side waits, tries, and runs `using(fn)` as a lock does;
 * a read handle carries the `generation` read, a write handle its `fencingToken`, `poisoned` and
 * `downgrade()`. Inside a side's `using` block, asking for the write side while reading rejects
 * with `LockUpgradeError`, and asking again for a side with `LockReentrantError`.
 */
class ReadWriteLock extends Configured {
  constructor(name, backend, options) {
    const lock = now(() => new native.ReadWriteLock(name, ...resolve('readWriteLock', backend, options)));
    super(lock);
    /** The read side. */
    this.read = new Side(lock, false, ReadHandle);
    /** The write side. */
    this.write = new Side(lock, true, WriteHandle);
    Object.freeze(this);
  }

  /** `{ generation, writing, readers, waitingWriters }`. */
  state() {
    return settle(() => this[nativeOf]().state());
  }
}

module.exports = {
  version,
  openBackend,
  memoryBackend,
  Lock,
  LockHandle,
  Semaphore,
  ReadWriteLock,
  ReadHandle,
  WriteHandle,
  LeaderElection,
  TaskLock,
  TaskRun,
  Coordination,
  logger,
  telemetry,
  Backend: native.Backend,
  ...errors,
  // The cross-binding error test's hooks (tests/interop/errors.py).
  _errorTable: () => JSON.parse(native.errorTable()),
  _raiseErrorExample: (code) => now(() => native.raiseErrorExample(code)),
};
delete module.exports.fromNative;
delete module.exports.keepThrown;
