"""The peer figures for the Redis and PostgreSQL benchmarks: grelmicro 0.44's Lock on its
RedisLockAdapter (under a key prefix of its own) or PostgresLockAdapter (on a table of its own,
dropped afterwards), with the defaults (retry_interval 0.1 s), on the store at URL:

- one task, acquire + release: the median of 11 batches of 200, in microseconds per cycle;
- 8 tasks sharing one Lock, each acquiring and releasing in a loop for 2 s: cycles per second,
  and Jain's fairness index over the tasks' cycle counts (1 = equal turns, 1/8 = one task
  takes them all);
- 8 tasks on 8 names (a Lock each): cycles per second.

Prints `one <us>`, `contended <cycles/s>`, `fairness <index>`, `spread <cycles/s>`.
Usage: grelmicro_store_lock.py redis|postgres URL"""

import asyncio
import os
import statistics
import sys
import time

from typing import Any

from grelmicro.coordination.lock import Lock
from grelmicro.coordination.postgres import PostgresLockAdapter
from grelmicro.coordination.redis import RedisLockAdapter
from grelmicro.providers.postgres import PostgresProvider
from grelmicro.providers.redis import RedisProvider

BATCH = 200
TASKS = 8
RUN = 2.0


async def one(backend: Any) -> float:
    lock = Lock("one", backend=backend)
    per_cycle = []
    for batch in range(12):
        started = time.perf_counter()
        for _ in range(BATCH):
            async with lock:
                pass
        if batch > 0:
            per_cycle.append((time.perf_counter() - started) / BATCH)
    return statistics.median(per_cycle) * 1e6


def jain(counts: list[int]) -> float:
    """Jain's fairness index of `counts`."""
    total = sum(counts)
    return total * total / (len(counts) * sum(c * c for c in counts)) if total else 0.0


async def many(backend: Any, names: int) -> tuple[float, float]:
    locks = [Lock(f"many-{names}-{i}", backend=backend) for i in range(names)]
    cycles = [0] * TASKS
    start = time.perf_counter()

    async def worker(task: int, lock: Lock) -> None:
        while time.perf_counter() - start < RUN:
            async with lock:
                pass
            cycles[task] += 1

    await asyncio.gather(*(worker(i, locks[i % names]) for i in range(TASKS)))
    return sum(cycles) / (time.perf_counter() - start), jain(cycles)


async def measure(backend: Any) -> None:
    print(f"one {await one(backend):.1f}")
    rate, fairness = await many(backend, 1)
    print(f"contended {rate:.0f}")
    print(f"fairness {fairness:.3f}")
    print(f"spread {(await many(backend, TASKS))[0]:.0f}")


async def main(kind: str, url: str) -> None:
    if kind == "redis":
        prefix = f"grelmicro-bench-{os.getpid()}:"
        async with RedisProvider(url) as provider, RedisLockAdapter(provider=provider, prefix=prefix) as backend:
            await measure(backend)
        return
    table = f"grelmicro_bench_{os.getpid()}"
    async with PostgresProvider(url) as provider:
        async with PostgresLockAdapter(provider=provider, table_name=table) as backend:
            await measure(backend)
        await provider.client.execute(f"DROP TABLE {table}")


asyncio.run(main(sys.argv[1], sys.argv[2]))
