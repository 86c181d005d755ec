"""The Prometheus test's Python program (`scripts/metrics.sh`), written as a grelmicro user
exposes metrics: the OpenTelemetry SDK with its Prometheus reader, `prometheus_client`'s server,
and `import tenure` (which reports to the global meter provider by itself). It joins an election,
takes the shared lock OPS times, says `done OPS`, holds a lock of its own under `hold()`
(`holding`; the test pauses it past the lease: `lost`), and serves its metrics until SIGTERM.

Usage: python contender.py URL PORT OPS
"""

import asyncio
import signal
import sys

from opentelemetry import metrics
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import start_http_server

import tenure
from tenure.errors import LockLostError


def provider_for(url: str):
    if url.startswith("redis"):
        return tenure.RedisProvider(url)
    if url.startswith("postgres"):
        return tenure.PostgresProvider(url)
    raise SystemExit(f"no provider for {url}")


async def main(url: str, port: int, ops: int) -> None:
    start_http_server(port, addr="127.0.0.1")
    metrics.set_meter_provider(MeterProvider(metric_readers=[PrometheusMetricReader()]))
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    async with provider_for(url) as provider:
        election = tenure.LeaderElection("metrics-leader", backend=provider.leaderelection())
        electing = asyncio.create_task(election(stop=stopping))
        lock = tenure.Lock("metrics-shared", backend=provider.lock(), lease_duration=10)
        # The test says `go` once Prometheus has scraped this program.
        await asyncio.to_thread(sys.stdin.readline)
        for _ in range(ops):
            async with lock:
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.05)
        print(f"done {ops}", flush=True)
        own = tenure.Lock("metrics-held-python", backend=provider.lock(), lease_duration=2)
        try:
            async with own.hold(max_hold=3600):
                print("holding", flush=True)
                await stopping.wait()
        except LockLostError:
            print("lost", flush=True)
        await stopping.wait()
        await electing


if __name__ == "__main__":
    url, port, ops = sys.argv[1:]
    asyncio.run(main(url, int(port), int(ops)))
