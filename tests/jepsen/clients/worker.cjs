// A client of the Jepsen harness through the npm package `tenure` (resolved from NODE_PATH),
// written as a node-redlock user writes it: a Lock on an open store, acquire, the guarded work,
// release, again and again. It tells the harness each operation (and reaches the fenced resource)
// over one TCP connection: see src/serve.rs.
// Usage: node worker.cjs URL NAME HARNESS_ADDRESS PROCESS LEASE_SECONDS TIMEOUT_SECONDS
const net = require('node:net');
const { openBackend, Lock, LockNotOwnedError, LockTimeoutError, TenureError } = require('tenure');

const [url, name, address, processNumber, lease, timeout] = process.argv.slice(2);
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

(async () => {
  const say = harness(address);
  await say(`hello ${processNumber} ${name} ${process.pid}`);
  const backend = await openBackend(url);
  const lock = new Lock(name, backend, { leaseDuration: Number(lease) * 1000, retryInterval: 50, envLoad: false });
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
    await say(`ok ${handle.fencingToken}`);
    const values = (await say(`read ${handle.fencingToken}`)).split(' ').slice(1);
    await sleep(Math.random() * 200);
    await say(['add', String(handle.fencingToken), ...values].join(' '));
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
