// A Node contender for store.sh: takes lock NAME ROUNDS times through the npm package `tenure`
// (resolved from NODE_PATH: the tarball installed into a fresh directory), each critical section
// appending `start <fence> node` and `end <fence>` to LOG.
// Usage: node node_lock.cjs URL NAME LOG ROUNDS
const { appendFileSync } = require('node:fs');
const { openBackend, Lock } = require('tenure');

const [url, name, log, rounds] = process.argv.slice(2);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

(async () => {
  const backend = await openBackend(url);
  const lock = new Lock(name, backend, { leaseDuration: 10_000, retryInterval: 20, envLoad: false });
  for (let i = 0; i < Number(rounds); i += 1) {
    await lock.using(async (signal, handle) => {
      appendFileSync(log, `start ${handle.fencingToken} node\n`);
      await sleep(30);
      appendFileSync(log, `end ${handle.fencingToken}\n`);
    });
    await sleep(10);
  }
  await backend.close();
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
