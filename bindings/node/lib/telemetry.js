'use strict';
// The driver's metrics and spans through OpenTelemetry's JavaScript API. When
// `@opentelemetry/api` can be required, requiring `tenure` hands everything the driver measures
// (acquire latency by outcome, waits, holds, holders and waiters, renewals, losses by cause,
// leadership, fences, store calls; spans for acquire, hold and release) to the `tenure` meter and
// tracer of the global providers: register an SDK and an exporter as usual. Without the API
// nothing is measured; `TENURE_TELEMETRY=off` turns it off, `telemetry.disable()` at run time.
// The instruments, units, boundaries and attributes are the driver's (docs/telemetry.md): this
// module only converts them.

const native = require('../native/binding.js');
const { version } = require('../package.json');

let api = null;
try {
  api = require('@opentelemetry/api');
} catch {
  api = null;
}

let enabled = false;
/** The meter provider the instruments were made on, and the instruments by name. */
let provider = null;
let instruments = new Map();

/** Makes the instruments on the global meter provider in place now (again if it changed). */
function instrumentsNow() {
  const current = api.metrics.getMeterProvider();
  if (current === provider) return instruments;
  provider = current;
  instruments = new Map();
  const meter = current.getMeter('tenure', version);
  for (const [name, kind, unit, description, boundaries] of JSON.parse(native.telemetryInstruments())) {
    const options = { unit, description };
    let record;
    if (kind === 'counter') {
      const counter = meter.createCounter(name, options);
      record = (value, attributes) => counter.add(value, attributes);
    } else if (kind === 'up_down_counter') {
      const counter = meter.createUpDownCounter(name, options);
      record = (value, attributes) => counter.add(value, attributes);
    } else if (kind === 'histogram') {
      const histogram = meter.createHistogram(name, { ...options, advice: { explicitBucketBoundaries: boundaries } });
      record = (value, attributes) => histogram.record(value, attributes);
    } else if (kind === 'gauge') {
      const gauge = meter.createGauge(name, options);
      record = (value, attributes) => gauge.record(value, attributes);
    } else {
      // Holders, waiters, fences, leaders: read when the SDK collects.
      const observable = kind === 'observable_up_down_counter'
        ? meter.createObservableUpDownCounter(name, options)
        : meter.createObservableGauge(name, options);
      observable.addCallback((result) => {
        if (!enabled) return;
        for (const [value, attributes] of JSON.parse(native.telemetryObserve(name))) result.observe(value, attributes);
      });
      record = null;
    }
    instruments.set(name, record);
  }
  return instruments;
}

/** A batch from the driver (JSON), on this thread. */
function deliver(json) {
  try {
    const now = instrumentsNow();
    let tracer = null;
    for (const record of JSON.parse(json)) {
      if (record[0] === 'm') {
        const [, name, , , , , value, attributes] = record;
        now.get(name)?.(value, attributes);
      } else if (record[0] === 's') {
        const [, name, start, end, attributes, events, error] = record;
        tracer ??= api.trace.getTracer('tenure', version);
        const span = tracer.startSpan(name, { kind: api.SpanKind.INTERNAL, attributes, startTime: start });
        for (const [eventName, at, eventAttributes] of events) span.addEvent(eventName, eventAttributes, at);
        if (error != null) span.setStatus({ code: api.SpanStatusCode.ERROR, message: error });
        span.end(end);
      }
    }
  } catch (error) {
    // Measuring never fails the program: a broken exporter loses this batch only.
    process.emitWarning(`tenure: telemetry batch dropped: ${error?.message ?? error}`);
  }
}

/** Hands the driver's measurements to OpenTelemetry; false if `@opentelemetry/api` is missing. */
function enable() {
  if (api === null) return false;
  native.listenTelemetry(deliver);
  enabled = true;
  return true;
}

/** Stops measuring (each hook costs one atomic load again). */
function disable() {
  native.unlistenTelemetry();
  enabled = false;
}

const telemetry = {
  enable,
  disable,
  /** Whether the driver's measurements reach OpenTelemetry. */
  enabled: () => enabled,
  /** Reports at most `limit` distinct lock names; later ones as `_other` (default 1000). */
  setNameLimit: (limit) => native.telemetrySetNameLimit(limit),
};

// One listener per process, on the main thread (a worker thread's would replace it).
const off = ['0', 'off', 'false', 'no'].includes((process.env.TENURE_TELEMETRY ?? '').trim().toLowerCase());
if (!off && require('node:worker_threads').isMainThread) enable();

module.exports = { telemetry };
