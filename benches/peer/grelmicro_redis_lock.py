"""The peer figures for the Redis benchmark: grelmicro 0.44's Lock on its RedisLockAdapter, with
the defaults (retry_interval 0.1 s), on the server at URL:

- one task, acquire + release: the median of 11 batches of 200, in microseconds per cycle;
- 8 tasks sharing one Lock, each acquiring and releasing in a loop for 2 s: cycles per second;
- 8 tasks on 8 names (a Lock each): cycles per second.

Prints `one <us>`, `contended <cycles/s>`, `spread <cycles/s>`. Usage: grelmicro_redis_lock.py URL"""

import asyncio
import os
import statistics
import sys
import time

from grelmicro.coordination.lock import Lock
from grelmicro.coordination.redis import RedisLockAdapter
from grelmicro.providers.redis import RedisProvider

BATCH = 200
TASKS = 8
RUN = 2.0


async def one(backend: RedisLockAdapter) -> float:
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


async def many(backend: RedisLockAdapter, names: int) -> float:
    locks = [Lock(f"many-{names}-{i}", backend=backend) for i in range(names)]
    cycles = 0
    start = time.perf_counter()

    async def worker(lock: Lock) -> None:
        nonlocal cycles
        while time.perf_counter() - start < RUN:
            async with lock:
                pass
            cycles += 1

    await asyncio.gather(*(worker(locks[i % names]) for i in range(TASKS)))
    return cycles / (time.perf_counter() - start)


async def main(url: str) -> None:
    prefix = f"grelmicro-bench-{os.getpid()}:"
    async with RedisProvider(url) as provider, RedisLockAdapter(provider=provider, prefix=prefix) as backend:
        print(f"one {await one(backend):.1f}")
        print(f"contended {await many(backend, 1):.0f}")
        print(f"spread {await many(backend, TASKS):.0f}")


asyncio.run(main(sys.argv[1]))
