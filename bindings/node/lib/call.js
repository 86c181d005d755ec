'use strict';
// How the JavaScript half calls the addon: failures mapped to tenure's errors, waits that follow
// an AbortSignal.

const native = require('../native/binding.js');
const errors = require('./errors');

/** The package's version, which its addon (a per-platform package, or `native/`) must carry too. */
const { version } = require('../package.json');
if (native.version() !== version) {
  throw new Error(
    `tenure ${version} found an addon built for tenure ${native.version()}: install matching versions ` +
      `of tenure and its platform package (npm install tenure@${version})`,
  );
}

const { fromNative } = errors;
const asyncDispose = Symbol.asyncDispose || Symbol.for('nodejs.asyncDispose');

/** `call()`, its failures turned into tenure's errors (an abort into the signal's reason). */
async function settle(call, signal) {
  try {
    return await call();
  } catch (error) {
    throw fromNative(error, signal);
  }
}

/** `call()` at once, its failure turned into tenure's error. */
function now(call) {
  try {
    return call();
  } catch (error) {
    throw fromNative(error);
  }
}

function rejectIfAborted(signal) {
  if (signal !== undefined && signal !== null) {
    if (typeof signal.aborted !== 'boolean' || typeof signal.addEventListener !== 'function') {
      throw new TypeError('signal must be an AbortSignal');
    }
    signal.throwIfAborted();
  }
}

/** A cancellation of the native call that follows `signal` until `done` is called. */
function follow(signal) {
  if (signal === undefined || signal === null) return { cancel: undefined, done() {} };
  const cancel = new native.Cancel();
  const onAbort = () => cancel.cancel();
  signal.addEventListener('abort', onAbort, { once: true });
  return { cancel, done: () => signal.removeEventListener('abort', onAbort) };
}

/** Ends what `call()` ends (a release, an exit); one ended or lost already is not an error. */
async function endQuietly(call) {
  try {
    await call();
  } catch (error) {
    const mapped = fromNative(error);
    if (!(mapped instanceof errors.LockNotOwnedError)) throw mapped;
  }
}

/** `call(cancel)` (a native wait), unless `signal` aborts first: then it rejects with the reason. */
async function waitUnless(signal, call) {
  rejectIfAborted(signal);
  const { cancel, done } = follow(signal);
  try {
    return await settle(() => call(cancel), signal);
  } finally {
    done();
  }
}

/**
 * What keeps the process alive while background work runs (a keep-alive, an election), as a
 * running timer would: it looks every half second whether `running()` still holds and lets go
 * once it does not, without a native wait that could not be unref'd.
 */
class Alive {
  #timer;
  #unref = false;

  /** Holds the process until `running()` turns false or `stop()`. */
  start(running) {
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => {
      if (!running()) this.stop();
    }, 500);
    if (this.#unref) this.#timer.unref();
  }

  stop() {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  unref() {
    this.#unref = true;
    if (this.#timer !== undefined) this.#timer.unref();
  }

  ref() {
    this.#unref = false;
    if (this.#timer !== undefined) this.#timer.ref();
  }
}

module.exports = { version, Alive, endQuietly, native, errors, asyncDispose, settle, now, waitUnless };
