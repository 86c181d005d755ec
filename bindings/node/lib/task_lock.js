'use strict';
// TaskLock: grelmicro's task lock — at most one run of a job per `minHoldDuration` window
// across every worker. `enter()` starts a run or fails at once with a `WouldBlockError`.

const { endQuietly, native, asyncDispose, settle, now } = require('./call');
const { resolve } = require('./coordination');
const { lockState } = require('./state');

/** One run under a task lock. */
class TaskRun {
  #run;

  constructor(run) {
    this.#run = run;
  }

  /** The fencing token of this run (a `bigint`). */
  get fencingToken() {
    return this.#run.fencingToken;
  }

  /** Renews the lease for another lease duration. */
  extend() {
    return settle(() => this.#run.extend());
  }

  /** Ends the run; the lock stays taken until the minimum hold has passed. */
  exit() {
    return settle(() => this.#run.exit());
  }

  /** `await using run = await task.enter()` exits at the end of the block. */
  [asyncDispose]() {
    return endQuietly(() => this.#run.exit());
  }
}

class TaskLock {
  #native;
  #name;

  constructor(name, backend, options) {
    this.#native = now(() => new native.TaskLock(name, ...resolve('lock', backend, options)));
    this.#name = name;
  }

  /** The task lock's name. */
  get name() {
    return this.#name;
  }

  /** The resolved settings, in ms. */
  settings() {
    return this.#native.settings();
  }

  /** Applies new settings from the next enter on (the worker stays). */
  reconfigure(options) {
    now(() => this.#native.reconfigure(options));
  }

  /** Starts a run, or rejects at once with a `WouldBlockError` (held, or within the window). */
  async enter() {
    return new TaskRun(await settle(() => this.#native.enter()));
  }

  /** Whether anyone holds the task lock. */
  locked() {
    return settle(() => this.#native.locked());
  }

  /** Who runs the task: as `Lock.state()`. */
  async state() {
    return lockState(await settle(() => this.#native.state()));
  }
}

module.exports = { TaskLock, TaskRun };
