'use strict';
// Who holds a lock (`lock.state()`, `task.state()`): the native answer, its times as `Date`s.

const at = (ms) => (ms === null || ms === undefined ? null : new Date(ms));

/** The native `{ name, held, fencingToken, worker, expiresAt, holder }` with `Date`s for times. */
function lockState(state) {
  const holder = state.holder ? { ...state.holder, acquiredAt: at(state.holder.acquiredAt) } : null;
  return {
    name: state.name,
    held: state.held,
    fencingToken: state.fencingToken ?? null,
    worker: state.worker ?? null,
    expiresAt: at(state.expiresAt),
    holder,
  };
}

module.exports = { lockState };
