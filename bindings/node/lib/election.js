'use strict';
// LeaderElection: grelmicro's election as a Node EventEmitter. `start()` runs the election loop
// in the background ('leader' and 'follower' events tell every change); while it runs the
// process stays alive, as with a running timer, unless `unref()` was called.

const { EventEmitter } = require('node:events');
const { Alive, native, errors, asyncDispose, settle, now, waitUnless } = require('./call');
const { resolve } = require('./coordination');

class LeaderElection extends EventEmitter {
  #native;
  #name;
  /** Keeps the process alive while the loop runs. */
  #alive = new Alive();
  /** The cancellations of the waits in flight, which a stop ends. */
  #waits = new Set();
  /** Whether the last event said this worker leads. */
  #leading = false;

  constructor(name, backend, options) {
    super();
    this.#native = now(() => new native.Election(name, ...resolve('election', backend, options)));
    this.#name = name;
  }

  /** The election's name. */
  get name() {
    return this.#name;
  }

  /** This worker's identity: the record's `holder` while it leads. */
  get worker() {
    return this.#native.worker;
  }

  /** Whether this worker leads now (advisory: fence writes that must not overlap a successor). */
  get isLeader() {
    return this.#native.isLeader;
  }

  /**
   * While this worker leads: its term's fencing token (higher for every term, never reset; send
   * it with every write the leader makes); null when not leading, or on a store that keeps none.
   */
  get fencingToken() {
    return this.#native.fencingToken ?? null;
  }

  /**
   * The leader health check (client-go's): `{ healthy: false, reason }` when this worker believes
   * it leads but the store has not confirmed it within its renew deadline plus `toleranceMs` (its
   * loop is stuck); `{ healthy: true, reason: 'healthy' }` otherwise, followers included.
   */
  health(toleranceMs = 10_000) {
    const reason = now(() => this.#native.health(toleranceMs));
    return reason == null ? { healthy: true, reason: 'healthy' } : { healthy: false, reason };
  }

  /** Whether the loop runs (until the release after a stop has finished). */
  get isRunning() {
    return this.#native.isRunning;
  }

  /** The last record the store returned: holder, leaseDuration, acquiredAt, renewedAt (ms), … */
  get record() {
    return this.#native.record() ?? null;
  }

  /** The resolved settings, in ms. */
  settings() {
    return this.#native.settings();
  }

  /** Applies new settings at the loop's next turn (the worker stays). */
  reconfigure(options) {
    now(() => this.#native.reconfigure(options));
  }

  /** Starts the election loop in the background; false if it runs already. */
  start() {
    const started = this.#native.start((leading) => {
      // A change heard after a stop is stale: the stop told the last one.
      if (leading && !this.#native.isRunning) return;
      this.#changed(leading);
    });
    if (started) this.#alive.start(() => this.#native.isRunning);
    return started;
  }

  /** Stops the loop: leadership ends now; resolves once the lease is released. */
  async stop() {
    this.#alive.stop();
    for (const cancel of this.#waits) cancel.cancel();
    await settle(() => this.#native.stop());
    this.#changed(false);
  }

  #changed(leading) {
    if (leading !== this.#leading) {
      this.#leading = leading;
      this.emit(leading ? 'leader' : 'follower');
    }
  }

  /** Lets the process exit while the election runs (as `timer.unref()`). */
  unref() {
    this.#alive.unref();
    return this;
  }

  /** Undoes `unref()`. */
  ref() {
    this.#alive.ref();
    return this;
  }

  /** Resolves once this worker leads (the loop must run), or rejects with `signal`'s reason. */
  waitForLeader({ signal } = {}) {
    return this.#wait(signal, (cancel) => this.#native.waitForLeader(cancel));
  }

  /** Resolves once this worker does not lead, or rejects with `signal`'s reason. */
  waitLoseLeader({ signal } = {}) {
    return this.#wait(signal, (cancel) => this.#native.waitLoseLeader(cancel));
  }

  /** A wait that `signal` or a `stop()` ends (the latter with an `ELECTION_STOPPED` error). */
  async #wait(signal, call) {
    let mine;
    try {
      return await waitUnless(signal, (cancel) => {
        mine = cancel ?? new native.Cancel();
        this.#waits.add(mine);
        return call(mine);
      });
    } catch (error) {
      if (error instanceof errors.TenureError && error.code === 'ABORTED') {
        throw new errors.TenureError(`LeaderElection stopped: ${this.#name}`, { code: 'ELECTION_STOPPED' });
      }
      throw error;
    } finally {
      this.#waits.delete(mine);
    }
  }

  /**
   * Waits for leadership, then runs `fn(signal)`; `signal` aborts with a `WouldBlockError`
   * ("Not leader", the core's) the moment leadership is lost, or with the reason of the
   * `signal` given here. Resolves to what `fn` returns, or to `undefined` when `fn` throws its
   * signal's reason on a loss (grelmicro's `lead` returns `None` for work cancelled by a loss).
   * With `repeat`, runs `fn` again after each completion and after each re-election, until
   * `signal` aborts, the election stops (`ELECTION_STOPPED`) or `fn` throws other than its
   * signal's reason: the promise then rejects with that.
   */
  async lead(fn, { signal, repeat = false } = {}) {
    if (typeof fn !== 'function') throw new TypeError('lead(fn): fn must be a function');
    for (;;) {
      await this.waitForLeader({ signal });
      const controller = new AbortController();
      const onAbort = () => controller.abort(signal.reason);
      if (signal) signal.addEventListener('abort', onAbort, { once: true });
      const watch = new native.Cancel();
      settle(() => this.#native.waitLoseLeader(watch)).then(
        () => controller.abort(this.#notLeader()),
        () => {},
      );
      try {
        const result = await fn(controller.signal);
        if (!repeat) return result;
      } catch (error) {
        const lost = controller.signal.aborted && error === controller.signal.reason && !signal?.aborted;
        if (!lost) throw error;
        // Work that ended on the loss, as grelmicro's cancelled work: nothing, or again.
        if (!repeat) return undefined;
      } finally {
        watch.cancel();
        if (signal) signal.removeEventListener('abort', onAbort);
      }
    }
  }

  /** The core's "Not leader" error for this election. */
  #notLeader() {
    try {
      this.#native.notLeaderError();
    } catch (error) {
      return errors.fromNative(error);
    }
    return new Error('tenure: the addon did not report "Not leader" as an error (a bug, please report it)');
  }

  /** `await using election = …` stops it at the end of the block. */
  [asyncDispose]() {
    return this.stop();
  }

}

module.exports = { LeaderElection };
