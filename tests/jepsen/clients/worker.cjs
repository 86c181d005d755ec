// A client of the Jepsen harness through the npm package `tenure` (resolved from NODE_PATH),
// written as a node-redlock user writes it: a Lock on an open store, acquire, the guarded work,
// release, again and again. It tells the harness each operation (and reaches the fenced resource)
// over one TCP connection: see src/serve.rs.
// With PERMITS above 0 it holds permits of a Semaphore of that many instead, and writes to the
// resource as it enters and as it leaves. With PERMITS `election` it runs a LeaderElection, and
// each time it leads writes under its term's fencing token, then stops (the next turn starts it
// again).
// Usage: node worker.cjs URL NAME HARNESS_ADDRESS PROCESS LEASE_SECONDS TIMEOUT_SECONDS PERMITS
const net = require('node:net');
const { openBackend, LeaderElection, Lock, Semaphore, LockNotOwnedError, LockTimeoutError, TenureError } = require('tenure');

const [url, name, address, processNumber, lease, timeout, permits] = process.argv.slice(2);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// One request, one answer line, in turn.
function harness(addressText) {
  const [host, port] = [addressText.slice(0, addressText.lastIndexOf(':')), addressText.slice(addressText.lastIndexOf(':') + 1)];
  const socket = net.connect(Number(port), host);
  socket.setEncoding('utf8');
  let buffered = '';
  const waiting = [];
  socket.on('data', (chunk) => {
    buffered += chunk;
    let end;
    while ((end = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 1);
      waiting.shift()(line);
    }
  });
  socket.on('error', (error) => {
    console.error(`the harness: ${error.message}`);
    process.exit(3);
  });
  return async (line) => {
    const answer = await new Promise((resolve) => {
      waiting.push(resolve);
      socket.write(`${line}\n`);
    });
    if (!answer || answer.startsWith('error')) throw new Error(`the harness answered ${answer} to ${line}`);
    return answer;
  };
}

// Reads the set under `fence`, waits a little (a pause can fall here), writes it back.
async function section(say, fence) {
  const values = (await say(`read ${fence}`)).split(' ').slice(1);
  await sleep(Math.random() * 200);
  await say(['add', String(fence), ...values].join(' '));
}

async function elections(say, backend) {
  const ms = Number(lease) * 1000;
  const election = new LeaderElection(name, backend, {
    leaseDuration: ms,
    renewDeadline: 0.6 * ms,
    retryInterval: 0.1 * ms,
    backendTimeout: 0.3 * ms,
    envLoad: false,
  });
  for (;;) {
    await say('invoke acquire');
    election.start();
    let fence = null;
    try {
      await election.waitForLeader({ signal: AbortSignal.timeout(Number(timeout) * 1000) });
      fence = election.fencingToken;
    } catch (error) {
      if (error.name !== 'TimeoutError' && error.name !== 'AbortError') throw error;
    }
    if (fence === null) {
      await say('fail'); // not leading (or no longer): nothing granted that this turn uses
    } else {
      await say(`ok ${fence}`);
      await section(say, fence);
      await say('invoke release');
    }
    await election.stop();
    if (fence !== null) await say('info'); // the release on stop reports nothing
  }
}

(async () => {
  const say = harness(address);
  await say(`hello ${processNumber} ${name} ${process.pid}`);
  // Opened again while the store is unavailable (a failover as the worker starts), as a
  // supervisor restarts a service that could not open it.
  let backend;
  while (backend === undefined) {
    try {
      backend = await openBackend(url);
    } catch (error) {
      if (!(error instanceof TenureError)) throw error;
      console.error(`the store cannot be opened yet: ${error.message}`);
      await sleep(100);
    }
  }
  if (permits === 'election') return elections(say, backend);
  const settings = { leaseDuration: Number(lease) * 1000, retryInterval: 50, envLoad: false };
  const lock =
    Number(permits) > 0 ? new Semaphore(name, Number(permits), backend, settings) : new Lock(name, backend, settings);
  for (;;) {
    await say('invoke acquire');
    let handle;
    try {
      handle = await lock.acquire({ timeout: Number(timeout) * 1000 });
    } catch (error) {
      if (!(error instanceof TenureError)) throw error;
      await say(error instanceof LockTimeoutError ? 'fail' : 'info');
      if (!(error instanceof LockTimeoutError)) await sleep(100);
      continue;
    }
    const fence = handle.fencingToken;
    await say(`ok ${fence}`);
    if (Number(permits) > 0) {
      await say(`write ${fence}`); // in
      await sleep(Math.random() * 200);
      await say(`write ${fence}`); // out
    } else {
      await section(say, fence);
    }
    await say('invoke release');
    try {
      await handle.release();
      await say('ok');
    } catch (error) {
      if (!(error instanceof TenureError)) throw error;
      await say(error instanceof LockNotOwnedError ? 'fail' : 'info');
    }
  }
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
