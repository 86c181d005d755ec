"""tenure's Python package beside grelmicro 0.44, in one interpreter and one run: one task's
`async with lock:` on the memory backend (median of 11 batches of 1000), and on Redis (median of
11 batches of 200) when a URL is given. Prints microseconds per cycle and the ratios.
Usage: python_lock.py [REDIS_URL]   (needs grelmicro 0.44 and the tenure wheel installed)"""

import asyncio
import os
import statistics
import sys
import time


async def per_cycle(lock, batch: int) -> float:
    samples = []
    for round_ in range(12):
        started = time.perf_counter()
        for _ in range(batch):
            async with lock:
                pass
        if round_ > 0:
            samples.append((time.perf_counter() - started) / batch)
    return statistics.median(samples) * 1e6


async def memory() -> tuple:
    import tenure
    from grelmicro.coordination.lock import Lock as GrelLock
    from grelmicro.coordination.memory import MemoryLockAdapter as GrelMemory

    async with GrelMemory() as backend:
        grel = await per_cycle(GrelLock("bench", backend=backend), 1000)
    ours = await per_cycle(tenure.Lock("bench", backend=tenure.MemoryLockAdapter(), env_load=False), 1000)
    return grel, ours


async def redis(url: str) -> tuple:
    import tenure
    from grelmicro.coordination.lock import Lock as GrelLock
    from grelmicro.coordination.redis import RedisLockAdapter
    from grelmicro.providers.redis import RedisProvider as GrelRedis

    prefix = f"py-bench-{os.getpid()}:"
    async with GrelRedis(url) as provider, RedisLockAdapter(provider=provider, prefix=prefix) as backend:
        grel = await per_cycle(GrelLock("bench", backend=backend), 200)
    async with tenure.RedisProvider(f"{url}/?prefix={prefix}t:") as store:
        ours = await per_cycle(tenure.Lock("bench", backend=store.lock(), env_load=False), 200)
    return grel, ours


async def main() -> None:
    grel, ours = await memory()
    print(f"memory, one task, async with lock: grelmicro {grel:.2f} us, tenure {ours:.2f} us, ratio {ours / grel:.2f}")
    if len(sys.argv) > 1:
        grel, ours = await redis(sys.argv[1])
        print(f"redis, one task, async with lock: grelmicro {grel:.1f} us, tenure {ours:.1f} us, ratio {ours / grel:.2f}")


asyncio.run(main())
