"""The Prometheus test's Python program (`scripts/metrics.sh`), written as a FastAPI service
exposes Tenure to operators: the OpenTelemetry SDK with its Prometheus reader, `import tenure`
(which reports to the global meter provider by itself), and FastAPI routes for `/metrics` and a
`/healthz` that fails when the election's loop stopped renewing. It joins an election, waits for
`go` on stdin, takes the shared lock OPS times, says `done OPS`, holds a lock of its own under
`hold()` (`holding`; the test pauses it past the lease: `lost`), and serves until SIGTERM.

Usage: python contender.py URL PORT OPS
"""

import asyncio
import signal
import sys

import uvicorn
from fastapi import FastAPI, Response
from opentelemetry import metrics
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

import tenure
from tenure.errors import LockLostError

metrics.set_meter_provider(MeterProvider(metric_readers=[PrometheusMetricReader()]))
app = FastAPI()
election: tenure.LeaderElection


@app.get("/metrics")
def metrics_route() -> Response:
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)


@app.get("/healthz")
def healthz(response: Response) -> dict:
    health = election.health(tolerance=10)
    if not health.healthy:
        response.status_code = 503
    return {"healthy": health.healthy, "reason": health.reason}


async def main(url: str, port: int, ops: int) -> None:
    global election
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    async with tenure.RedisProvider(url) as provider:
        election = tenure.LeaderElection("metrics-leader", backend=provider.leaderelection())
        electing = asyncio.create_task(election(stop=stopping))
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        serving = asyncio.create_task(server.serve())
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
        server.should_exit = True
        await asyncio.gather(electing, serving)


if __name__ == "__main__":
    url, port, ops = sys.argv[1:]
    asyncio.run(main(url, int(port), int(ops)))
