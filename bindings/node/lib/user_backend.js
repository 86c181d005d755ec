'use strict';
// Backends written by users: any object with grelmicro's lock calls — `acquire`, `release`,
// `locked`, `owned` — or election calls — `acquireOrRenew`, `release`, `get` — is a store. The
// driver calls it like a built-in one (each call bounded by `backendTimeout`, a late grant given
// back, a fence that goes back refused); this file calls its methods and checks their answers.
//
// A method takes one object: `{ name, token, duration, metadata, signal }` (what the call has;
// `duration` in ms, `signal` an AbortSignal that aborts when the driver gives the call up) and
// answers — directly or through a promise —:
//   acquire          the fencing token (a positive integer, number or bigint), or null when
//                    another token holds the lock;
//   release, locked, owned   a boolean;
//   acquireOrRenew   the record `{ holder, leaseDuration (ms), acquiredAt, renewedAt (Date or
//                    ms since the epoch), transitions, metadata }`;
//   get              that record, or null when nobody leads.
// A backend may declare `scope`: 'process', 'host' or 'cluster' (see Coordination).

const native = require('../native/binding.js');
const { keepThrown } = require('./errors');

const METHODS = {
  lock: ['acquire', 'release', 'locked', 'owned'],
  election: ['acquireOrRenew', 'release', 'get'],
};
/** The driver's name of a call → the user's method. */
const CALLED = {
  acquire: 'acquire',
  release: 'release',
  locked: 'locked',
  owned: 'owned',
  acquire_or_renew: 'acquireOrRenew',
  leader_release: 'release',
  get: 'get',
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
  return typeof value === 'object' && value !== null && [...METHODS.lock, ...METHODS.election].some((m) => typeof value[m] === 'function');
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

/** `run([method, args, answer])`: calls the method; returns what aborts it while it runs. */
function runner(backend, label) {
  return ([method, args, answer]) => {
    const name = CALLED[method];
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

module.exports = { serves, looksLikeOne, missing, toNative, METHODS };
