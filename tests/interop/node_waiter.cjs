// A Node waiter for who_holds.py: waits for lock NAME through the npm package `tenure` (from
// NODE_PATH), saying what it is for, prints `acquired <fence>` once it holds it, and releases.
// Usage: node node_waiter.cjs URL NAME PURPOSE
const { openBackend, Lock } = require('tenure');

const [url, name, purpose] = process.argv.slice(2);

(async () => {
  const backend = await openBackend(url);
  const lock = new Lock(name, backend, { leaseDuration: 10_000, envLoad: false, purpose });
  const handle = await lock.acquire({ timeout: 60_000 });
  console.log(`acquired ${handle.fencingToken}`);
  await handle.release();
  await backend.close();
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
