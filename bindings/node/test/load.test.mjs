// Loading: two copies of the package in one process (two versions in one application's
// node_modules) both load and work — the addon takes no static TLS block, which a process has
// little of.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import * as tenure from 'tenure';

/** A copy of the installed package and its platform package in a fresh `node_modules`; `edit`
 * may change the copy's manifest. Returns the copy's directory. */
function copyInstalled(dir, edit = (manifest) => manifest) {
  const require = createRequire(import.meta.url);
  const installed = dirname(dirname(require.resolve('tenure')));
  const modules = join(dir, 'node_modules');
  cpSync(installed, join(modules, 'tenure'), { recursive: true });
  const manifest = join(modules, 'tenure', 'package.json');
  const fields = JSON.parse(readFileSync(manifest, 'utf8'));
  writeFileSync(manifest, JSON.stringify(edit(fields)));
  for (const platform of Object.keys(fields.optionalDependencies ?? {})) {
    try {
      cpSync(dirname(require.resolve(`${platform}/package.json`)), join(modules, platform), { recursive: true });
    } catch {
      // Not this machine's platform: npm did not install it.
    }
  }
  return join(modules, 'tenure');
}

test('a second copy of the package loads beside the first', async () => {
  const require = createRequire(import.meta.url);
  const dir = mkdtempSync(join(tmpdir(), 'tenure-copy-'));
  try {
    const copy = require(copyInstalled(dir));
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

test('the package says its version, which is its addon version too', () => {
  const require = createRequire(import.meta.url);
  const manifest = require(join(dirname(dirname(require.resolve('tenure'))), 'package.json'));
  assert.match(tenure.version, /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/);
  assert.equal(tenure.version, manifest.version);
});

test('a package whose addon is of another version refuses to load, naming both', () => {
  const require = createRequire(import.meta.url);
  const dir = mkdtempSync(join(tmpdir(), 'tenure-skew-'));
  try {
    const copy = copyInstalled(dir, (fields) => ({ ...fields, version: '9.9.9' }));
    assert.throws(() => require(copy), {
      message: new RegExp(`tenure 9\\.9\\.9 found an addon built for tenure ${tenure.version.replaceAll('.', '\\.')}`),
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
