'use strict';
// The errors of `tenure`, with grelmicro 0.44's classes and hierarchy as JavaScript classes: the
// classes of the core's error table (tenure_core::error::table), which the addon names for every
// failure, so that this file maps no code. A cross-binding test checks every class, its parents
// and its fields against the table (tests/interop/errors.py).
// Every error has a stable `code`; one about a lock has its name in `lockName` (`name` is the
// class's name, as on every JavaScript error); a store's failure behind it is its `cause`.
// `instanceof` works across the hierarchy: a `LockTimeoutError` is a `WouldBlockError`, a
// `LockLostError` a `LockNotOwnedError`. Messages never contain an ownership token or a password.

class TenureError extends Error {
  constructor(message, options) {
    super(message, options && options.cause !== undefined ? { cause: options.cause } : undefined);
    this.name = new.target.name;
    this.code = (options && options.code) || 'TENURE';
    if (options && options.lockName !== undefined) this.lockName = options.lockName;
  }
}

/** A store failed or could not be reached: `code` is `STORE_TIMEOUT`, `STORE_UNAVAILABLE`, … */
class StoreError extends TenureError {}
class SettingsValidationError extends TenureError {}
class OutOfContextError extends TenureError {}
/** A backend reaches less far than its `Coordination` requires, in `staging` or `production`. */
class BackendScopeError extends TenureError {}
class BackendNotOpenError extends OutOfContextError {}
/** `reconfigure` was given the options of another primitive. */
class ConfigTypeError extends TenureError {}
/** A blocking call on the thread that must serve it. */
class EventLoopDeadlockError extends TenureError {}
class CoordinationError extends TenureError {}
class CoordinationBackendError extends CoordinationError {}
class LockReentrantError extends CoordinationError {}
/** Another operation of this holder is still in progress. */
class LockBusyError extends LockReentrantError {}
class LockUpgradeError extends CoordinationError {}
class LockBackendError extends CoordinationError {}
class LockAcquireError extends LockBackendError {}
class LockExtendError extends LockBackendError {}
class LockReleaseError extends LockBackendError {}
class LockLockedCheckError extends LockBackendError {}
class LockOwnedCheckError extends LockBackendError {}
class LockNotOwnedError extends CoordinationError {}
/** The lease was lost while held (or a keep-alive reached its `maxHold`). */
class LockLostError extends LockNotOwnedError {}
class AdmissionError extends TenureError {}
class WouldBlockError extends AdmissionError {}
class LockTimeoutError extends WouldBlockError {}

const MARKER = '\u0000tenure:';

/**
 * What backends written in JavaScript threw, by id, until the error of the call it failed is
 * built (its `cause`). A failure that never reaches a caller (an election's retried renewal) is
 * forgotten once `KEPT` newer ones came.
 */
const thrown = new Map();
const KEPT = 256;
let nextThrown = 0;

/** Keeps `value` (thrown by a user's backend) for the error that will carry it; its id. */
function keepThrown(value) {
  nextThrown = (nextThrown + 1) % 0x7fffffff;
  thrown.set(nextThrown, value);
  if (thrown.size > KEPT) thrown.delete(thrown.keys().next().value);
  return nextThrown;
}

function fromFields(fields) {
  const Class = fields.class !== undefined ? classes[`${fields.class}Error`] : fields.code.startsWith('STORE_') ? StoreError : TenureError;
  if (Class === undefined) {
    return new Error(
      `tenure's addon reported ${fields.code} as ${fields.class}Error, which this package does not define: ` +
        'the addon and the package come from different versions; reinstall tenure',
    );
  }
  let cause = fields.cause ? fromFields(fields.cause) : undefined;
  if (fields.thrown !== undefined && thrown.has(fields.thrown)) {
    cause = thrown.get(fields.thrown);
    thrown.delete(fields.thrown);
  }
  const error = new Class(fields.message, { code: fields.code, lockName: fields.name, cause });
  if (fields.timeoutMs !== undefined) error.timeoutMs = fields.timeoutMs;
  if (fields.field !== undefined) error.field = fields.field;
  if (fields.reason !== undefined) error.reason = fields.reason;
  return error;
}

// napi's statuses for an argument of the wrong type.
const wrongType = new Set([
  'InvalidArg', 'ObjectExpected', 'StringExpected', 'NameExpected', 'FunctionExpected', 'NumberExpected',
  'BooleanExpected', 'ArrayExpected', 'BigintExpected', 'DateExpected', 'ArrayBufferExpected',
]);

/** The error a native failure stands for (anything else is returned as it is). */
function fromNative(error, signal) {
  if (!(error instanceof Error) || typeof error.message !== 'string') return error;
  if (wrongType.has(error.code)) {
    const typeError = new TypeError(error.message);
    typeError.code = 'ERR_INVALID_ARG_TYPE';
    return typeError;
  }
  if (!error.message.startsWith(MARKER)) return error;
  const fields = JSON.parse(error.message.slice(MARKER.length));
  if (fields.code === 'ABORTED' && signal) return signal.reason;
  return fromFields(fields);
}

const classes = {
  TenureError,
  StoreError,
  SettingsValidationError,
  OutOfContextError,
  BackendScopeError,
  BackendNotOpenError,
  ConfigTypeError,
  EventLoopDeadlockError,
  CoordinationError,
  CoordinationBackendError,
  LockReentrantError,
  LockBusyError,
  LockUpgradeError,
  LockBackendError,
  LockAcquireError,
  LockExtendError,
  LockReleaseError,
  LockLockedCheckError,
  LockOwnedCheckError,
  LockNotOwnedError,
  LockLostError,
  AdmissionError,
  WouldBlockError,
  LockTimeoutError,
};

module.exports = { fromNative, keepThrown, ...classes };
