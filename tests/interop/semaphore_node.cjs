// A holder of semaphore NAME's permits for semaphore.sh through the npm package `tenure`
// (resolved from NODE_PATH), each section appending `in <fence> node` and `out <fence>` to LOG.
// Usage: node semaphore_node.cjs URL NAME PERMITS LOG ROUNDS
const { appendFileSync } = require('node:fs');
const { openBackend, Semaphore } = require('tenure');

const [url, name, permits, log, rounds] = process.argv.slice(2);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

(async () => {
  const backend = await openBackend(url);
  const pool = new Semaphore(name, Number(permits), backend, { leaseDuration: 10_000, retryInterval: 20, envLoad: false });
  for (let i = 0; i < Number(rounds); i += 1) {
    await pool.using(async (signal, permit) => {
      appendFileSync(log, `in ${permit.fencingToken} node\n`);
      await sleep(50);
      appendFileSync(log, `out ${permit.fencingToken}\n`);
    });
    await sleep(10);
  }
  await backend.close();
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
