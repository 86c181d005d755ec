// A backend written by a user in JavaScript: plain classes with async methods, nothing imported
// from tenure (user_backend.test.mjs, losses.test.mjs).

/** Locks with fencing tokens and leader records in two Maps, as a user would write them. */
export class DictLocks {
  scope = 'process';
  locks = new Map(); // name -> { token, until, fence }
  fences = new Map();
  leaders = new Map(); // name -> record
  calls = [];

  async acquire({ name, token, duration }) {
    this.calls.push(`acquire ${name}`);
    const now = Date.now();
    const held = this.locks.get(name);
    if (held && held.token !== token && held.until > now) return null;
    const fence = held && held.token === token ? held.fence : (this.fences.get(name) ?? 0) + 1;
    this.fences.set(name, fence);
    this.locks.set(name, { token, until: now + duration, fence });
    return fence;
  }

  async release({ name, token }) {
    this.calls.push(`release ${name}`);
    if (name.startsWith('leader:')) {
      const record = this.leaders.get(name);
      if (!record || record.holder !== token) return false;
      this.leaders.delete(name);
      return true;
    }
    const held = this.locks.get(name);
    if (!held || held.token !== token || held.until <= Date.now()) return false;
    this.locks.delete(name);
    return true;
  }

  async locked({ name }) {
    const held = this.locks.get(name);
    return held !== undefined && held.until > Date.now();
  }

  async owned({ name, token }) {
    const held = this.locks.get(name);
    return held !== undefined && held.token === token && held.until > Date.now();
  }

  async acquireOrRenew({ name, token, duration, metadata }) {
    const now = new Date();
    const record = this.leaders.get(name);
    const live = record && record.renewedAt.getTime() + record.leaseDuration > now.getTime();
    if (live && record.holder !== token) return record;
    const next = live
      ? { ...record, leaseDuration: duration, renewedAt: now, metadata }
      : { holder: token, leaseDuration: duration, acquiredAt: now, renewedAt: now, transitions: (record?.transitions ?? -1) + 1, metadata };
    this.leaders.set(name, next);
    return next;
  }

  async get({ name }) {
    return this.leaders.get(name) ?? null;
  }
}
