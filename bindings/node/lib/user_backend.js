'use strict';
// Backends written by users: any object with grelmicro's lock calls — `acquire`, `release`,
// `locked`, `owned` —, election calls — `acquireOrRenew`, `release`, `get` —, read-write lock
// calls — grelmicro 0.44's nine, `acquireRead` … `ownedWrite` — or semaphore calls — `acquire`,
// `release`, `owned`, `state` — is a store. The driver calls it like a built-in one (each call
// bounded by `backendTimeout`, a late grant given back, a lock's or a writer's fence that goes
// back refused); this file calls its methods and checks their answers.
//
// A method takes one object: `{ name, token, duration, metadata, intent, permits, wait, signal }`
// (what the call has; `duration` and `wait` in ms, `signal` an AbortSignal that aborts when the
// driver gives the call up) and answers — directly or through a promise —:
//   acquire          the fencing token (a positive integer, number or bigint), or null when
//                    another token holds the lock;
//   release, locked, owned   a boolean;
//   acquireOrRenew   the record `{ holder, leaseDuration (ms), acquiredAt, renewedAt (Date or
//                    ms since the epoch), transitions, metadata }`;
//   get              that record, or null when nobody leads;
//   acquireRead, downgrade   the generation read (an integer >= 0), or null when refused;
//   acquireWrite     `{ fencingToken, poisoned }`, or null when refused;
//   state            `{ generation, writing, readers, waitingWriters }`;
//   and the other read-write calls a boolean;
//   a semaphore's acquire   `{ fencingToken (or null when refused), permits (the stored count) }`;
//   a semaphore's state     `{ permits, holders, waiting, fence }`.
// A backend may declare `scope`: 'process', 'host' or 'cluster' (see Coordination).

const native = require('../native/binding.js');
const { keepThrown } = require('./errors');

const METHODS = {
  lock: ['acquire', 'release', 'locked', 'owned'],
  election: ['acquireOrRenew', 'release', 'get'],
  readWriteLock: [
    'acquireRead',
    'acquireWrite',
    'releaseRead',
    'releaseWrite',
    'cancelIntent',
    'downgrade',
    'state',
    'ownedRead',
    'ownedWrite',
  ],
  semaphore: ['acquire', 'release', 'owned', 'state'],
};
/** The protocol of each slot, for messages. */
const PROTOCOLS = {
  lock: 'a lock backend',
  election: 'a leader election backend',
  readWriteLock: 'a read-write lock backend',
  semaphore: 'a semaphore backend',
};
const MAX_FENCE = (1n << 63n) - 1n;

/** The fencing tokens each user's object answered, for every store made for it. */
const fences = new WeakMap();

/** Whether `value` has every method of `slot` ('lock' or 'election'). */
function serves(value, slot) {
  return typeof value === 'object' && value !== null && METHODS[slot].every((m) => typeof value[m] === 'function');
}

/** Whether `value` has any method of a backend (options never do): it is meant as one. */
function looksLikeOne(value) {
  return typeof value === 'object' && value !== null && Object.values(METHODS).flat().some((m) => typeof value[m] === 'function');
}

/** The methods `value` lacks to serve `slot`. */
function missing(value, slot) {
  return METHODS[slot].filter((m) => typeof value?.[m] !== 'function');
}

/** The class name of a user's object, for messages. */
function labelOf(backend) {
  const name = backend.constructor?.name;
  return typeof name === 'string' && name !== '' && name !== 'Object' ? name : 'backend';
}

/** What a value is, for messages: its type, never its text (which could hold a token). */
function kindOf(value) {
  if (value === null) return 'null';
  if (typeof value === 'object' || typeof value === 'function') {
    let name;
    try {
      name = value.constructor?.name;
    } catch {
      // A proxy or a throwing getter: nothing more to say.
    }
    return typeof name === 'string' && name !== '' ? `${article(name)} ${name}` : 'an object';
  }
  return `${article(typeof value)} ${typeof value}`;
}

/** What the checks below find wrong with an answer: the only messages quoted in errors. */
class WrongAnswer extends TypeError {}
class OutOfRange extends RangeError {}

function article(word) {
  return /^[aeiou]/i.test(word) ? 'an' : 'a';
}

/** A native store running `backend` (a new one per primitive; the fences are the object's). */
function toNative(backend) {
  let kept = fences.get(backend);
  if (kept === undefined) fences.set(backend, (kept = new native.UserFences()));
  const label = labelOf(backend);
  const scope = typeof backend.scope === 'string' ? backend.scope : undefined;
  return native.userBackend(runner(backend, label), label, kept, scope);
}

/**
 * `run([method, name, args, answer])`: calls the user's method `name` (the driver's call
 * `method`, unique across the protocols: `sem_acquire`, `rw_state`, …); returns what aborts it
 * while it runs.
 */
function runner(backend, label) {
  return ([method, name, args, answer]) => {
    const what = `${label}.${name}`;
    // The signal is made when the method first reads it (most never do).
    let controller;
    let abandoned = false;
    const call = {
      name: args.name,
      get signal() {
        if (controller === undefined) {
          controller = new AbortController();
          if (abandoned) controller.abort();
        }
        return controller.signal;
      },
    };
    if (args.token != null) call.token = args.token;
    if (args.duration != null) call.duration = args.duration;
    if (method === 'acquire_or_renew') call.metadata = args.metadata ?? {};
    if (args.intent != null) call.intent = args.intent;
    if (args.permits != null) {
      call.permits = args.permits;
      call.wait = args.wait ?? null;
    }
    let result;
    try {
      result = backend[name](call);
    } catch (error) {
      failed(answer, `${what} threw ${kindOf(error)}`, error);
      return undefined;
    }
    if (result === null || typeof result !== 'object' || typeof result.then !== 'function') {
      finish(answer, method, what, result);
      return undefined;
    }
    let settled = false;
    Promise.resolve(result)
      .then(
        (value) => {
          settled = true;
          finish(answer, method, what, value);
        },
        (error) => {
          settled = true;
          if (abandoned) answer.fail(`${what} was aborted`);
          else failed(answer, `${what} rejected with ${kindOf(error)}`, error);
        },
      )
      .catch(() => answer.fail(`${what} answered a value that could not be read`));
    return () => {
      if (settled) return;
      abandoned = true;
      controller?.abort();
    };
  };
}

function failed(answer, message, thrown) {
  answer.fail(message, keepThrown(thrown));
}

/** Hands `value` to `answer` in the shape the call answers, or fails saying what was wrong. */
function finish(answer, method, what, value) {
  try {
    if (method === 'acquire') answer.fence(fence(value));
    else if (method === 'acquire_or_renew') answer.record(record(value));
    else if (method === 'get') answer.record(value === null ? null : record(value));
    else if (method === 'acquire_read' || method === 'downgrade') answer.generation(value === null ? null : count(value, 'a generation'));
    else if (method === 'acquire_write') writeGrant(answer, value);
    else if (method === 'rw_state') rwState(answer, value);
    else if (method === 'sem_acquire') permit(answer, value);
    else if (method === 'sem_state') semState(answer, value);
    else answer.flag(flag(value));
  } catch (error) {
    // Only the checks' own messages are quoted: another error (a throwing getter, a proxy) could
    // carry the value's text.
    const Class = error instanceof OutOfRange ? RangeError : TypeError;
    const ours = error instanceof WrongAnswer || error instanceof OutOfRange;
    const wrong = new Class(`${what} answered ${ours ? error.message : 'a value that could not be read'}`);
    failed(answer, wrong.message, wrong);
  }
}

function fence(value) {
  if (value === null) return null;
  if (typeof value === 'bigint') {
    if (value > 0n && value <= MAX_FENCE) return value;
    throw new OutOfRange('a fencing token out of range: a fencing token is a positive integer below 2**63');
  }
  if (typeof value === 'number') {
    if (Number.isSafeInteger(value) && value > 0) return BigInt(value);
    throw new OutOfRange(
      'a number that is not a positive safe integer: a fencing token is a positive integer (a bigint above 2**53)',
    );
  }
  throw new WrongAnswer(
    `${kindOf(value)}: a fencing token is a positive integer (number or bigint), or null when another token holds the lock`,
  );
}

/** A whole number >= 0 (number or bigint) as a bigint; `what` names it ("a generation"). */
function count(value, what) {
  if (typeof value === 'bigint') {
    if (value >= 0n && value <= MAX_FENCE) return value;
    throw new OutOfRange(`${what} out of range: ${what} is an integer from 0 below 2**63`);
  }
  if (Number.isSafeInteger(value) && value >= 0) return BigInt(value);
  throw new WrongAnswer(`${kindOf(value)}: ${what} is a whole number >= 0 (number or bigint)`);
}

/** A count that fits 32 bits (readers, holders, permits). */
function small(value, what) {
  if (Number.isSafeInteger(value) && value >= 0 && value < 2 ** 32) return value;
  throw new WrongAnswer(`${kindOf(value)}: ${what} is a whole number from 0 below 2**32`);
}

/** `value`'s fields, or a wrong answer naming what it is not. */
function fields(value, kind, names) {
  if (typeof value !== 'object' || value === null) throw new WrongAnswer(`${kindOf(value)}, not ${kind}`);
  const absent = names.filter((f) => value[f] === undefined);
  if (absent.length > 0) throw new WrongAnswer(`${kindOf(value)}, not ${kind} (no ${absent.join(', ')})`);
  return names.map((f) => value[f]);
}

function writeGrant(answer, value) {
  if (value === null) return answer.write(null, false);
  const [token, poisoned] = fields(value, 'a write grant', ['fencingToken', 'poisoned']);
  if (typeof poisoned !== 'boolean') throw new WrongAnswer(`a write grant whose poisoned is ${kindOf(poisoned)}, not a boolean`);
  const granted = fence(token);
  if (granted === null) throw new WrongAnswer('a write grant whose fencingToken is null');
  answer.write(granted, poisoned);
}

function rwState(answer, value) {
  const [generation, writing, readers, waiting] = fields(value, 'a read-write lock state', [
    'generation',
    'writing',
    'readers',
    'waitingWriters',
  ]);
  if (typeof writing !== 'boolean') throw new WrongAnswer(`a state whose writing is ${kindOf(writing)}, not a boolean`);
  answer.rwState(
    count(generation, "a state's generation"),
    writing,
    small(readers, "a state's readers"),
    small(waiting, "a state's waitingWriters"),
  );
}

function permit(answer, value) {
  if (typeof value !== 'object' || value === null || value.permits === undefined || !('fencingToken' in value)) {
    throw new WrongAnswer(`${kindOf(value)}: a permit is { fencingToken (or null), permits }`);
  }
  answer.permit(fence(value.fencingToken), small(value.permits, "a permit's permits"));
}

function semState(answer, value) {
  const [permits, holders, waiting, last] = fields(value, 'a semaphore state', ['permits', 'holders', 'waiting', 'fence']);
  const what = (field) => `a state's ${field}`;
  answer.semState(small(permits, what('permits')), small(holders, what('holders')), small(waiting, what('waiting')), count(last, what('fence')));
}

function flag(value) {
  if (typeof value === 'boolean') return value;
  if (value === 0 || value === 1) return value === 1;
  throw new WrongAnswer(`${kindOf(value)}: the answer is a boolean`);
}

/** A record in the addon's form (ms), checked. */
function record(value) {
  if (typeof value !== 'object' || value === null) throw new WrongAnswer(`${kindOf(value)}, not a leader record`);
  const absent = ['holder', 'leaseDuration', 'acquiredAt', 'renewedAt', 'transitions'].filter((f) => value[f] === undefined);
  if (absent.length > 0) throw new WrongAnswer(`${kindOf(value)}, not a leader record (no ${absent.join(', ')})`);
  const { holder, leaseDuration, transitions } = value;
  if (typeof holder !== 'string') throw new WrongAnswer(`a record whose holder is ${kindOf(holder)}, not a string`);
  if (typeof leaseDuration !== 'number' || !Number.isFinite(leaseDuration) || leaseDuration < 0) {
    throw new WrongAnswer('a record whose leaseDuration is not a number of milliseconds >= 0');
  }
  if (!Number.isSafeInteger(transitions) || transitions < 0) {
    throw new WrongAnswer('a record whose transitions is not a whole number >= 0');
  }
  const metadata = value.metadata ?? {};
  const pairs = metadata instanceof Map ? [...metadata] : typeof metadata === 'object' ? Object.entries(metadata) : null;
  if (pairs === null || !pairs.every(([k, v]) => typeof k === 'string' && typeof v === 'string')) {
    throw new WrongAnswer('a record whose metadata is not an object of strings');
  }
  return {
    holder,
    leaseDuration,
    acquiredAt: moment(value.acquiredAt, 'acquiredAt'),
    renewedAt: moment(value.renewedAt, 'renewedAt'),
    transitions,
    metadata: Object.fromEntries(pairs),
  };
}

/** Milliseconds since the epoch, from a Date or a number. */
function moment(value, field) {
  const ms = value instanceof Date ? value.getTime() : value;
  if (typeof ms !== 'number' || !Number.isFinite(ms)) {
    throw new WrongAnswer(`a record whose ${field} is ${kindOf(value)}, not a Date or ms since the epoch`);
  }
  return ms;
}

module.exports = { serves, looksLikeOne, missing, toNative, METHODS, PROTOCOLS };
