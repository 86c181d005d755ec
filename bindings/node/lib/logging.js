'use strict';
// The driver's events on a process-wide emitter: `logger.on('log', (record) => …)`, where a
// record is `{ level, message, fields, line }` — `level` one of 'error', 'warn', 'info', 'debug'
// (the names of console's and pino's methods), `fields` the event's own (`lock`, `election`,
// `fence`, `error`, …) as strings, `line` all of it on one line. Nothing is recorded while no
// listener is attached. `debug` records (every acquire and release) come only with
// `TENURE_LOG_DEBUG=1`, or with `DEBUG` naming `tenure` (as the `debug` package reads it),
// which also prints every record to stderr. No record carries an ownership token or a password.

const { EventEmitter } = require('node:events');
const native = require('../native/binding.js');

const logger = new EventEmitter();
const printing = /(^|[\s,])tenure(:\*|\*)?($|[\s,])/.test(process.env.DEBUG ?? '');
const debug = printing || process.env.TENURE_LOG_DEBUG === '1';
let sink = null;

/** A record from the addon; a listener's exception is thrown again outside it, as uncaught. */
function emit([level, message, pairsJson]) {
  const pairs = JSON.parse(pairsJson);
  const fields = Object.fromEntries(pairs);
  const text = pairs.map(([k, v]) => `${k}=${v}`).join(' ');
  try {
    logger.emit('log', { level, message, fields, line: text ? `${message}: ${text}` : message });
  } catch (error) {
    process.nextTick(() => { throw error; });
  }
}

logger.on('newListener', (event) => {
  if (event === 'log' && sink === null) sink = native.listenLogs(emit, debug);
});
logger.on('removeListener', (event) => {
  if (event === 'log' && sink !== null && logger.listenerCount('log') === 0) {
    native.unlistenLogs(sink);
    sink = null;
  }
});

if (printing) {
  logger.on('log', (record) => process.stderr.write(`tenure ${record.level} ${record.line}\n`));
}

module.exports = { logger };
