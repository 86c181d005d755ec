// Leader election on every store, as Node users write it.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { LeaderElection, SettingsValidationError, WouldBlockError } from 'tenure';
import { fresh, openStores, sleep } from './stores.mjs';

const stores = await openStores(after);
const fast = { leaseDuration: 1000, renewDeadline: 700, retryInterval: 50, backendTimeout: 300, envLoad: false };

for (const [kind, backend] of Object.entries(stores)) {
  describe(`an election on ${kind}`, () => {
    test('one leader among three, who hands over cleanly when it stops', async () => {
      const name = fresh('svc');
      const elections = [0, 1, 2].map((i) => new LeaderElection(name, backend, { ...fast, metadata: { replica: String(i) } }));
      const elected = Promise.race(elections.map((e) => once(e, 'leader').then(() => e)));
      for (const e of elections) assert.equal(e.start(), true);
      assert.equal(elections[0].start(), false, 'a second start does nothing');
      const leader = await elected;
      await sleep(200);
      assert.equal(elections.filter((e) => e.isLeader).length, 1);
      const record = leader.record;
      assert.equal(record.holder, leader.worker);
      assert.equal(record.metadata.replica, String(elections.indexOf(leader)));
      assert.ok(record.leaseDuration === 1000 && record.renewedAt >= record.acquiredAt);

      const rest = elections.filter((e) => e !== leader);
      const next = Promise.race(rest.map((e) => e.waitForLeader().then(() => e, () => null)));
      const demoted = once(leader, 'follower');
      const stoppedAt = Date.now();
      await leader.stop();
      await demoted;
      assert.equal(leader.isLeader, false);
      assert.equal(leader.isRunning, false);
      const successor = await next;
      const others = rest.filter((e) => e !== successor);
      const waiting = others.map((e) => e.waitForLeader().then(() => 'led', (e) => e.code));
      // A clean stop releases the lease: the next one leads within a retry or so, not a lease.
      assert.ok(Date.now() - stoppedAt < 900, `took ${Date.now() - stoppedAt} ms`);
      assert.ok(successor.isLeader);
      for (const e of [...others, successor]) await e.stop();
      // A stop ends the waits in flight: nothing is left to keep the process alive.
      assert.deepEqual(await Promise.all(waiting), ['ELECTION_STOPPED']);
    });

    test('each term has a fencingToken above the last', async () => {
      const name = fresh('terms');
      const [a, b] = [0, 1].map(() => new LeaderElection(name, backend, fast));
      assert.equal(a.fencingToken, null);
      a.start();
      await a.waitForLeader();
      const first = a.fencingToken;
      assert.equal(typeof first, 'bigint');
      b.start();
      await sleep(200);
      assert.equal(b.fencingToken, null);
      assert.equal(a.fencingToken, first, "a renewal keeps the term's token");
      await a.stop();
      assert.equal(a.fencingToken, null);
      await b.waitForLeader();
      assert.ok(b.fencingToken > first, `${b.fencingToken} after ${first}`);
      await b.stop();
    });

    test('lead() runs the work while leading and aborts its signal when leadership ends', async () => {
      const election = new LeaderElection(fresh('lead'), backend, fast);
      election.start();
      let stopping;
      const result = await election.lead(async (signal) => {
        assert.equal(signal.aborted, false);
        const aborted = once(signal, 'abort');
        stopping = election.stop();
        await aborted;
        return signal.reason;
      });
      await stopping;
      assert.ok(result instanceof WouldBlockError && /Not leader/.test(result.message), String(result));
      assert.equal(election.isRunning, false);
    });

    test('lead() resolves to nothing when the work ends on the loss, as grelmicro\'s lead', async () => {
      const election = new LeaderElection(fresh('lost'), backend, fast);
      election.start();
      let stopping;
      const result = await election.lead(async (signal) => {
        stopping = election.stop();
        await once(signal, 'abort');
        throw signal.reason;
      });
      await stopping;
      assert.equal(result, undefined);
      const failing = new LeaderElection(fresh('fails'), backend, fast);
      failing.start();
      await assert.rejects(failing.lead(async () => { throw new Error('the work failed'); }), { message: 'the work failed' });
      await failing.stop();
    });

    test('lead({ repeat }) runs the work again after each completion, until its signal aborts', async () => {
      const election = new LeaderElection(fresh('repeat'), backend, fast);
      election.start();
      const controller = new AbortController();
      let runs = 0;
      const work = async (signal) => {
        assert.equal(signal.aborted, false, 'the work starts while leading');
        runs += 1;
        if (runs === 3) controller.abort(new Error('enough'));
      };
      await assert.rejects(election.lead(work, { signal: controller.signal, repeat: true }), { message: 'enough' });
      assert.equal(runs, 3);
      await election.stop();
    });

    test('waits follow an AbortSignal', async () => {
      const election = new LeaderElection(fresh('wait'), backend, fast);
      const controller = new AbortController();
      const waiting = election.waitForLeader({ signal: controller.signal });
      controller.abort(new Error('gave up'));
      await assert.rejects(waiting, { message: 'gave up' });
      await election[Symbol.asyncDispose]();
    });
  });
}

test('bad election settings name the option', () => {
  const backend = Object.values(stores)[0];
  for (const field of ['leaseDuration', 'renewDeadline', 'retryInterval', 'errorInterval']) {
    assert.throws(() => new LeaderElection('svc', backend, { [field]: Number.NaN }), (e) => e instanceof SettingsValidationError && e.field === field);
  }
  assert.throws(() => new LeaderElection('svc', backend, { leaseDuration: 1000, renewDeadline: 5000 }), SettingsValidationError);
  assert.throws(() => new LeaderElection('svc', backend, { metadata: { '': 'x' } }), SettingsValidationError);
});
