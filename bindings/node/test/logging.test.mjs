// The driver's events on `logger`: what a listener hears, and `DEBUG=tenure` on stderr.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { LeaderElection, Lock, logger, memoryBackend } from 'tenure';
import { fresh, sleep } from './stores.mjs';

/** The records heard while `fn` runs (and shortly after: they cross from the runtime's threads). */
async function heard(fn) {
  const records = [];
  const listen = (record) => records.push(record);
  logger.on('log', listen);
  try {
    await fn();
    await sleep(100);
  } finally {
    logger.off('log', listen);
  }
  return records;
}

test('a lost lock is a warning naming the lock, with no token in it', async () => {
  const store = memoryBackend();
  const name = fresh('lost');
  const records = await heard(async () => {
    const mine = await new Lock(name, store, { leaseDuration: 100 }).acquire();
    await sleep(150);
    const theirs = await new Lock(name, store).acquire();
    await assert.rejects(mine.extend());
    await theirs.release();
  });
  const lost = records.find((r) => r.message === 'lock lost');
  assert.ok(lost, `no "lock lost" among ${JSON.stringify(records)}`);
  assert.equal(lost.level, 'warn');
  assert.equal(lost.fields.lock, name);
  assert.match(lost.line, new RegExp(`^lock lost: .*lock=${name}`));
  // Debug records (acquire, release) are not asked for here.
  assert.ok(records.every((r) => r.level !== 'debug'), JSON.stringify(records));
  for (const r of records) assert.ok(!('token' in r.fields), r.line);
});

test('leadership gained and stopped are info records naming the election', async () => {
  const name = fresh('leads');
  const records = await heard(async () => {
    const election = new LeaderElection(name, memoryBackend(), { worker: 'node-1' });
    election.start();
    await election.waitForLeader();
    await election.stop();
  });
  const info = records.filter((r) => r.level === 'info' && r.fields.election === name).map((r) => r.message);
  assert.ok(info.includes('acquired leadership'), JSON.stringify(records));
  assert.ok(info.includes('stopped'), JSON.stringify(records));
});

test('nothing is recorded once the last listener is gone', async () => {
  const records = [];
  const listen = (record) => records.push(record);
  logger.on('log', listen);
  logger.off('log', listen);
  assert.equal(logger.listenerCount('log'), 0);
  const store = memoryBackend();
  const name = fresh('quiet');
  const mine = await new Lock(name, store, { leaseDuration: 50 }).acquire();
  await sleep(80);
  const theirs = await new Lock(name, store).acquire();
  await assert.rejects(mine.extend());
  await theirs.release();
  await sleep(100);
  assert.deepEqual(records, []);
});

test('DEBUG=tenure prints every record to stderr, acquire and release included', () => {
  const source = `
    const { Lock, memoryBackend } = require('tenure');
    (async () => { await (await new Lock('printed', memoryBackend()).acquire()).release(); })();
  `;
  const run = spawnSync(process.execPath, ['-e', source], { env: { ...process.env, DEBUG: 'express,tenure' }, encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stderr, /^tenure debug lock acquired: lock=printed fence=1$/m);
  assert.match(run.stderr, /^tenure debug lock released: lock=printed fence=1$/m);
  const quiet = spawnSync(process.execPath, ['-e', source], { env: { ...process.env, DEBUG: 'tenurex' }, encoding: 'utf8' });
  assert.equal(quiet.stderr, '');
});
