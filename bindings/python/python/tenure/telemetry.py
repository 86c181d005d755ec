"""The driver's metrics and spans through OpenTelemetry's Python API.

When ``opentelemetry-api`` is importable, ``import tenure`` hands everything the driver measures
(acquire latency by outcome, waits, holds, holders and waiters, renewals, losses by cause,
leadership, the last fencing token, store calls; spans for acquire, hold and release) to the
``tenure`` meter and tracer of the global providers: configure an SDK and an exporter as usual,
before or after importing tenure. Without ``opentelemetry-api`` nothing is measured and nothing is
imported. ``TENURE_TELEMETRY=off`` turns it off; :func:`disable` and :func:`enable` at run time.

The instruments, their units, bucket boundaries and attributes are the driver's, the same in
every language (docs/telemetry.md); this module only converts them.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from tenure import _tenure

__all__ = ["enable", "disable", "enabled", "set_name_limit"]

_instruments: dict[str, Callable[..., None]] = {}
_enabled = False


def _api() -> Any:
    try:
        from opentelemetry import metrics, trace
    except ImportError:
        return None
    return metrics, trace


_observed = False


def enable() -> bool:
    """Hands the driver's measurements to OpenTelemetry; False if ``opentelemetry-api`` is missing."""
    global _enabled, _observed
    api = _api()
    if api is None:
        return False
    _tenure.telemetry_install(_deliver)
    if not _observed:
        _observed = True
        _register_observed(api[0])
    _enabled = True
    return True


def _register_observed(metrics: Any) -> None:
    """Holders, waiters, fences and leaders: state the driver keeps, read when the SDK collects."""
    meter = metrics.get_meter("tenure", _tenure.__version__)
    for name, kind, unit, description, _ in _tenure.telemetry_instruments():
        if kind == "observable_up_down_counter":
            create = meter.create_observable_up_down_counter
        elif kind == "observable_gauge":
            create = meter.create_observable_gauge
        else:
            continue
        create(name, callbacks=[_observer(metrics, name)], unit=unit, description=description)


def _observer(metrics: Any, name: str) -> Callable[[Any], list[Any]]:
    def observe(options: Any) -> list[Any]:
        if not _enabled:
            return []
        return [metrics.Observation(value, attributes) for value, attributes in _tenure.telemetry_observe(name)]

    return observe


def disable() -> None:
    """Stops measuring (each hook costs one atomic load again)."""
    global _enabled
    _tenure.telemetry_uninstall()
    _enabled = False


def enabled() -> bool:
    """Whether the driver's measurements reach OpenTelemetry."""
    return _enabled


def set_name_limit(limit: int) -> None:
    """Reports at most ``limit`` distinct lock names; later ones as ``_other`` (default 1000,
    or ``TENURE_METRICS_MAX_NAMES``)."""
    _tenure.telemetry_set_name_limit(limit)


def _instrument(meter: Any, name: str, kind: str, unit: str, description: str, boundaries: list[float]) -> Callable[..., None]:
    if kind == "counter":
        return meter.create_counter(name, unit=unit, description=description).add
    if kind == "up_down_counter":
        return meter.create_up_down_counter(name, unit=unit, description=description).add
    if kind == "histogram":
        try:
            histogram = meter.create_histogram(
                name, unit=unit, description=description, explicit_bucket_boundaries_advisory=boundaries
            )
        except TypeError:  # opentelemetry-api before 1.30: no advisory boundaries
            histogram = meter.create_histogram(name, unit=unit, description=description)
        return histogram.record
    return meter.create_gauge(name, unit=unit, description=description).set


def _deliver(batch: list[tuple[Any, ...]]) -> None:
    """Called by the driver's telemetry thread with a batch of records."""
    api = _api()
    if api is None:
        return
    metrics, trace = api
    tracer = None
    for record in batch:
        try:
            tracer = _one(metrics, trace, tracer, record)
        except Exception:  # noqa: BLE001 - a broken SDK or exporter loses that record only
            continue


def _one(metrics: Any, trace: Any, tracer: Any, record: tuple[Any, ...]) -> Any:
    """Hands one record to the API; returns the tracer (made at the first span)."""
    if record[0] == "m":
        _, name, kind, unit, description, boundaries, value, attributes = record
        record_value = _instruments.get(name)
        if record_value is None:
            meter = metrics.get_meter("tenure", _tenure.__version__)
            record_value = _instrument(meter, name, kind, unit, description, boundaries)
            _instruments[name] = record_value
        record_value(value, attributes)
    elif record[0] == "s":
        if tracer is None:
            tracer = trace.get_tracer("tenure", _tenure.__version__)
        _, name, start, end, attributes, events, error = record
        span = tracer.start_span(name, kind=trace.SpanKind.INTERNAL, attributes=attributes, start_time=start)
        for event_name, at, event_attributes in events:
            span.add_event(event_name, attributes=event_attributes, timestamp=at)
        if error is not None:
            span.set_status(trace.Status(trace.StatusCode.ERROR, error))
        span.end(end_time=end)
    return tracer


if os.environ.get("TENURE_TELEMETRY", "").strip().lower() not in ("0", "off", "false", "no"):
    try:
        enable()
    except Exception:  # noqa: BLE001 - an SDK that fails must not fail `import tenure`
        import warnings

        warnings.warn("tenure: telemetry could not be turned on; nothing is measured", RuntimeWarning, stacklevel=1)
