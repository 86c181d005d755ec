'use strict';
// `Coordination`: one component wiring the backends of every primitive (grelmicro's
// `Coordination`). `new Coordination(store)` serves locks, task locks, read-write locks,
// semaphores and elections from one store; `{ lock, election, readWriteLock, semaphore }` set
// each on its own (a built-in lock store serves read-write locks and semaphores too). `coordination.run(fn)` makes it the backend of
// every primitive built without one inside `fn` and whatever `fn` starts (an AsyncLocalStorage
// context, as Python's contextvars); outside any such run those primitives throw
// `OutOfContextError`. `requires` ('process', 'host', 'cluster'; default 'cluster') is the reach
// the backends must have: the driver judges it under `GREL_ENVIRONMENT` when a run starts.

const { AsyncLocalStorage } = require('node:async_hooks');
const { native, now } = require('./call');
const user = require('./user_backend');
const { BackendScopeError, CoordinationBackendError, OutOfContextError, SettingsValidationError } = require('./errors');

/** The components of the enclosing runs, by name (innermost wins). */
const scopes = new AsyncLocalStorage();
const REACHES = ['process', 'host', 'cluster'];

const MISSING = {
  lock: 'Coordination has no lock backend. Pass a store as new Coordination(store) or new Coordination(undefined, { lock }).',
  election:
    'Coordination has no leader election backend. Pass a store as new Coordination(store) or new Coordination(undefined, { election }).',
  readWriteLock:
    'Coordination has no read-write lock backend. Pass a store as new Coordination(store) or new Coordination(undefined, { readWriteLock }).',
  semaphore:
    'Coordination has no semaphore backend. Pass a store as new Coordination(store) or new Coordination(undefined, { semaphore }).',
};
const SLOTS = Object.keys(MISSING);

function isBackend(value) {
  return value instanceof native.Backend;
}

/** A store, or a user's object serving the calls of `slot` (any slot if none is given). */
function checked(value, what, slot) {
  if (value === undefined || value === null) return null;
  const wanted = slot ? [slot] : SLOTS;
  if (!isBackend(value) && !wanted.some((s) => user.serves(value, s))) {
    const protocols = wanted.map((s) => `${user.PROTOCOLS[s]} (${user.METHODS[s].join(', ')})`);
    throw new TypeError(`${what} must be a store from openBackend() or memoryBackend(), or an object with the methods of ${protocols.join(' or ')}`);
  }
  return value;
}

/**
 * `source` for `slot`, if it serves it. A user's object that serves locks fills no semaphore
 * slot: the two share `acquire`, `release` and `owned`, so a lock's `acquire` would get a
 * semaphore's calls (pass it as `{ semaphore }` to mean it).
 */
function servesSlot(source, slot) {
  if (source === null) return null;
  if (isBackend(source)) return source;
  const ambiguous = slot === 'semaphore' && user.serves(source, 'lock');
  return user.serves(source, slot) && !ambiguous ? source : null;
}

class Coordination {
  #name;
  #requires;
  #slots;

  constructor(source, { lock, election, readWriteLock, semaphore, name = 'default', requires } = {}) {
    if (typeof name !== 'string' || name === '') throw new TypeError('name must be a non-empty string');
    const reach = requires === undefined ? 'cluster' : typeof requires === 'string' ? requires.trim().toLowerCase() : '';
    if (!REACHES.includes(reach)) {
      throw new SettingsValidationError(`requires must be one of process, host, cluster, got ${JSON.stringify(requires)}`, {
        code: 'SETTINGS_INVALID',
      });
    }
    const store = checked(source, 'Coordination(source)');
    this.#name = name;
    this.#requires = reach;
    this.#slots = {
      lock: checked(lock, 'lock', 'lock') ?? servesSlot(store, 'lock'),
      election: checked(election, 'election', 'election') ?? servesSlot(store, 'election'),
      readWriteLock: checked(readWriteLock, 'readWriteLock', 'readWriteLock') ?? servesSlot(store, 'readWriteLock'),
      semaphore: checked(semaphore, 'semaphore', 'semaphore') ?? servesSlot(store, 'semaphore'),
    };
  }

  get kind() {
    return 'coordination';
  }

  /** The registration name. */
  get name() {
    return this.#name;
  }

  /** The reach the backends must have: 'process', 'host' or 'cluster'. */
  get requires() {
    return this.#requires;
  }

  #slot(slot) {
    // A built-in lock store serves read-write locks and semaphores too.
    const lock = this.#slots.lock;
    const backend = this.#slots[slot] ?? (slot !== 'election' && isBackend(lock) ? lock : null);
    if (backend === null) throw new CoordinationBackendError(MISSING[slot], { code: 'COORDINATION_BACKEND_MISSING' });
    return backend;
  }

  /** The lock backend (`CoordinationBackendError` if none is wired). */
  get lockBackend() {
    return this.#slot('lock');
  }

  /** The leader election backend (`CoordinationBackendError` if none is wired). */
  get electionBackend() {
    return this.#slot('election');
  }

  /** The read-write lock backend (`CoordinationBackendError` if none is wired). */
  get readWriteLockBackend() {
    return this.#slot('readWriteLock');
  }

  /** The semaphore backend (`CoordinationBackendError` if none is wired). */
  get semaphoreBackend() {
    return this.#slot('semaphore');
  }

  /** A `Lock` on this component's lock backend. */
  lock(name, options) {
    const { Lock } = require('./index');
    return new Lock(name, this.lockBackend, options);
  }

  /** A `Semaphore` of `permits` permits on this component's semaphore backend. */
  semaphore(name, permits, options) {
    const { Semaphore } = require('./index');
    return new Semaphore(name, permits, this.semaphoreBackend, options);
  }

  /** A `ReadWriteLock` on this component's read-write lock backend. */
  readWriteLock(name, options) {
    const { ReadWriteLock } = require('./index');
    return new ReadWriteLock(name, this.readWriteLockBackend, options);
  }

  /** A `TaskLock` on this component's lock backend. */
  taskLock(name, options) {
    const { TaskLock } = require('./task_lock');
    return new TaskLock(name, this.lockBackend, options);
  }

  /** A `LeaderElection` on this component's election backend. */
  leaderElection(name, options) {
    const { LeaderElection } = require('./election');
    return new LeaderElection(name, this.electionBackend, options);
  }

  /**
   * Runs `fn` with this component as the backend of every primitive built without one (in `fn`
   * and what it starts), after judging the backends' reach: a `BackendScopeError` in `staging`
   * or `production`, a `BackendScopeWarning` (process warning) when `GREL_ENVIRONMENT` is unset
   * or unknown. Returns what `fn` returns.
   */
  run(fn) {
    if (typeof fn !== 'function') throw new TypeError('run(fn) takes a function');
    this.#judge();
    return scopes.run(new Map([...(scopes.getStore() ?? []), [this.#name, this]]), fn);
  }

  #judge() {
    const backends = [...new Set(Object.values(this.#slots).filter((b) => b !== null))];
    // A user's backend that declares no scope is not judged.
    const judged = backends
      .map((b) => (isBackend(b) ? [`the ${b.kind} store`, b.scope] : [b.constructor?.name ?? 'backend', b.scope]))
      .filter(([, scope]) => REACHES.includes(scope));
    const owner = `Coordination(${JSON.stringify(this.#name)})`;
    const [verdict, message, unknown] = now(() =>
      native.judgeReach(owner, judged, this.#requires, process.env.GREL_ENVIRONMENT),
    );
    if (verdict === 'refused') throw new BackendScopeError(message, { code: 'BACKEND_SCOPE' });
    if (verdict === 'warned') {
      if (unknown !== undefined) process.emitWarning(unknown, { type: 'UnknownEnvironmentWarning', code: 'TENURE_UNKNOWN_ENVIRONMENT' });
      process.emitWarning(message, { type: 'BackendScopeWarning', code: 'TENURE_BACKEND_SCOPE' });
    }
  }
}

/** The component named 'default' of the enclosing runs, or a sole one of another name. */
function current() {
  const components = scopes.getStore();
  if (!components) return undefined;
  return components.get('default') ?? (components.size === 1 ? [...components.values()][0] : undefined);
}

const OUT_OF_CONTEXT =
  'No backend resolved in this scope. Pass a backend (memoryBackend() for a per-process lock), or build it inside coordination.run().';

/**
 * A primitive's `(backend, options)`: as given, or — given no backend (`(name)` or
 * `(name, options)`) — `slot`'s backend of the enclosing run.
 */
function resolve(slot, backend, options) {
  const [found, settings] = given(slot, backend, options);
  return [storeFor(slot, found), settings];
}

function given(slot, backend, options) {
  const plain = backend === undefined || backend === null || Object.getPrototypeOf(backend) === Object.prototype;
  if (!plain || isBackend(backend) || user.looksLikeOne(backend)) return [backend, options];
  if (options !== undefined && backend !== undefined && backend !== null) return [backend, options];
  const component = current();
  if (component === undefined) throw new OutOfContextError(OUT_OF_CONTEXT, { code: 'OUT_OF_CONTEXT' });
  return [component[`${slot}Backend`], backend ?? options];
}

/** The native store of `backend`: itself, or one running a user's object. */
function storeFor(slot, backend) {
  if (isBackend(backend)) return backend;
  if (typeof backend === 'object' && backend !== null) {
    const lacking = user.missing(backend, slot);
    if (lacking.length === 0) return user.toNative(backend);
    throw new TypeError(
      `the backend must be a store from openBackend() or memoryBackend(), or ${user.PROTOCOLS[slot]}: ` +
        `${backend.constructor?.name ?? 'the object'} has no ${lacking.join(', ')} method${lacking.length > 1 ? 's' : ''}`,
    );
  }
  return backend; // the addon says what is wrong with it
}

module.exports = { Coordination, resolve };
