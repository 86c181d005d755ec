'use strict';
// Who holds a lock (`lock.state()`, `task.state()`): the native answer, its times as `Date`s.

const at = (ms) => (ms === null || ms === undefined ? null : new Date(ms));

const holderOf = (details) => (details ? { ...details, acquiredAt: at(details.acquiredAt) } : null);

/**
 * The native `{ name, held, fencingToken, worker, expiresAt, holder, waiting }` with `Date`s for
 * times (`waiting`: `null` where the store keeps no line).
 */
function lockState(state) {
  const waiting = state.waiting
    ? state.waiting.map((w) => ({ worker: w.worker, since: at(w.since), details: holderOf(w.details) }))
    : null;
  return {
    name: state.name,
    held: state.held,
    fencingToken: state.fencingToken ?? null,
    worker: state.worker ?? null,
    expiresAt: at(state.expiresAt),
    holder: holderOf(state.holder),
    waiting,
  };
}

module.exports = { lockState };
