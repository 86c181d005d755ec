"""The driver's metrics and spans through OpenTelemetry's Python API, as a user turns them on:
an SDK meter provider and tracer provider set globally, then locks used as usual."""

import asyncio
import os
import subprocess
import sys
import time

import pytest

from conftest import memory_election
from tenure import LeaderElection, Lock, MemoryProvider, telemetry

metrics_sdk = pytest.importorskip("opentelemetry.sdk.metrics", reason="the suite's venv installs opentelemetry-sdk")

from opentelemetry import metrics, trace  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

READER = InMemoryMetricReader()
SPANS = InMemorySpanExporter()
metrics.set_meter_provider(metrics_sdk.MeterProvider(metric_readers=[READER]))
_tracers = TracerProvider()
_tracers.add_span_processor(SimpleSpanProcessor(SPANS))
trace.set_tracer_provider(_tracers)


def points(instrument, name):
    """The data points of `instrument` about the lock `name`, as (attributes, point)."""
    data = READER.get_metrics_data()
    found = []
    for resource in data.resource_metrics if data else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == instrument:
                    found += [(dict(p.attributes), p) for p in metric.data.data_points if p.attributes.get("name") == name]
    return found


def eventually(what, condition, timeout=10.0):
    """Measurements reach Python on the driver's telemetry thread: wait for them."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def test_telemetry_is_on_when_opentelemetry_api_is_installed():
    assert telemetry.enabled()


def test_a_lock_cycle_reaches_the_sdk_as_metrics_and_spans():
    name = "py-telemetry-cycle"

    async def main():
        lock = Lock(name, backend=MemoryProvider().lock(), env_load=False)
        async with lock as handle:
            return handle.fencing_token

    fence = asyncio.run(main())

    def acquired():
        return [p for a, p in points("tenure.lock.acquire.duration", name) if a["outcome"] == "acquired"]

    (point,) = eventually("the acquire histogram", acquired)
    assert point.count == 1 and point.sum > 0
    (holders,) = points("tenure.lock.holders", name)
    assert holders[1].value == 0, "read when collecting: the lease was released"
    (fence_point,) = eventually("the fence gauge", lambda: [p for _, p in points("tenure.lock.fence", name)])
    assert fence_point.value == fence

    def spans():
        ours = [s for s in SPANS.get_finished_spans() if s.attributes.get("name") == name]
        return ours if len(ours) >= 3 else None

    found = eventually("the three spans", spans)
    assert [s.name for s in found] == ["tenure.acquire", "tenure.hold", "tenure.release"]
    for span in found:
        assert span.attributes["fence"] == fence and span.attributes["primitive"] == "lock"
        assert span.start_time <= span.end_time


def test_an_election_reports_one_leader_and_its_health():
    name = "py-telemetry-election"

    async def main():
        election = memory_election(name)
        task = asyncio.create_task(election())
        await asyncio.wait_for(election.wait_for_leader(), 5)
        health = election.health(tolerance=10)
        leading = eventually("the leader gauge at 1", lambda: [p for _, p in points("tenure.election.leader", name) if p.value == 1])
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return health, leading

    health, leading = asyncio.run(main())
    assert health.healthy and health.reason == "healthy" and leading
    eventually("the leader gauge back at 0", lambda: [p for _, p in points("tenure.election.leader", name) if p.value == 0])
    changes = eventually("both changes", lambda: points("tenure.election.changes", name) if len(points("tenure.election.changes", name)) == 2 else None)
    assert sorted(a["outcome"] for a, _ in changes) == ["elected", "stopped"]


def test_a_health_tolerance_that_is_not_a_duration_is_refused():
    from tenure.errors import SettingsValidationError

    election = LeaderElection("py-telemetry-health", backend=MemoryProvider().leaderelection(), env_load=False)
    for bad in (-1, 0, float("nan"), "10"):
        with pytest.raises(SettingsValidationError, match="tolerance"):
            election.health(tolerance=bad)


@pytest.mark.parametrize(
    "setup",
    [
        "import sys; sys.modules['opentelemetry'] = None",  # opentelemetry-api not installed
        "import os; os.environ['TENURE_TELEMETRY'] = 'off'",
    ],
)
def test_without_opentelemetry_or_when_turned_off_nothing_is_measured(setup):
    program = (
        f"{setup}\n"
        "import asyncio, tenure\n"
        "assert not tenure.telemetry.enabled()\n"
        "async def main():\n"
        "    async with tenure.Lock('x', backend=tenure.MemoryProvider().lock(), env_load=False):\n"
        "        pass\n"
        "asyncio.run(main())\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
