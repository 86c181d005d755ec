// A lock revoked by an operator (`tenure revoke`, the command at TENURE_CLI, which the test command
// sets), as a node-redlock user's `using()` sees it: the signal aborts with a LockLostError whose
// reason is `revoked`, the operator's reason in its message, and `using()` rejects with it.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { Lock, LockLostError, openBackend } from 'tenure';
import { fresh, redisUrl } from './stores.mjs';

const cli = process.env.TENURE_CLI;
const url = `${redisUrl}/?prefix=${fresh('tenure-node-revoke')}:`;
const backend = await openBackend(url);
after(() => backend.close());

test('a revoked lock aborts the work with the reason revoked, and using() rejects with it', async () => {
  assert.ok(cli, 'set TENURE_CLI to the tenure command (scripts/test.sh node does)');
  const lock = new Lock('report', backend, { leaseDuration: 3000 });
  const work = lock.using(async (signal, handle) => {
    const said = execFileSync(cli, ['--backend', url, 'revoke', 'report', '--reason', 'stuck on a deploy'], {
      encoding: 'utf8',
    });
    assert.match(said, new RegExp(`\\(fence ${handle.fencingToken}\\); the fence is now ${handle.fencingToken + 1n}`));
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    assert.ok(signal.reason instanceof LockLostError, String(signal.reason));
    return 'finished';
  });
  await assert.rejects(work, (e) => e instanceof LockLostError && e.reason === 'revoked' && /stuck on a deploy/.test(e.message));
  assert.equal(await lock.locked(), true, 'the placeholder holds it until the revoked lease would have ended');
});
