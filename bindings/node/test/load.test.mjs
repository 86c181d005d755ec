// Loading: two copies of the package in one process (two versions in one application's
// node_modules) both load and work — the addon takes no static TLS block, which a process has
// little of.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import * as tenure from 'tenure';

test('a second copy of the package loads beside the first', async () => {
  const require = createRequire(import.meta.url);
  const installed = dirname(dirname(require.resolve('tenure')));
  const dir = mkdtempSync(join(tmpdir(), 'tenure-copy-'));
  try {
    cpSync(installed, join(dir, 'tenure'), { recursive: true });
    const copy = require(join(dir, 'tenure'));
    assert.notEqual(copy.Lock, tenure.Lock);
    const mine = await new tenure.Lock('twice', tenure.memoryBackend()).acquire();
    const theirs = await new copy.Lock('twice', copy.memoryBackend()).acquire();
    assert.equal(mine.fencingToken, 1n);
    assert.equal(theirs.fencingToken, 1n);
    await mine.release();
    await theirs.release();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
