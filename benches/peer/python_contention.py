"""Read-write locks and semaphores under contention, through tenure's Python package beside
grelmicro 0.44 in one interpreter and one run, on Redis and PostgreSQL:

- 8 reader tasks sharing one name, each `async with lock.read:` in a loop: read cycles per second,
  the two libraries' 2-second slices taking turns (3 each, the median kept);
- a writer's wait behind readers: 8 reader tasks keep the lock read, each holding 50 ms per
  read; a writer arrives and waits (median of 5 arrivals), against the 50 ms a reader holds;
- a semaphore of 4 permits under 8 tasks (tenure only: grelmicro has none), each holding 10 ms per
  permit: permits per second against the 400/s that 4 permits of 10 ms allow, the most holders
  seen at once, and Jain's index of the tasks' shares.

Usage: python_contention.py REDIS_URL POSTGRES_URL   (needs grelmicro 0.44 and the tenure wheel)"""

import asyncio
import os
import statistics
import sys
import time
from contextlib import AsyncExitStack
from datetime import timedelta

READERS, SLICE, SLICES = 8, 2.0, 3
HOLD, ARRIVALS = 0.05, 5
PERMITS, TASKS, PERMIT_HOLD = 4, 8, 0.01


async def stores(stack: AsyncExitStack, redis_url: str, postgres_url: str):
    """(label, grelmicro rw backend, tenure provider) for each store."""
    import tenure

    enter = stack.enter_async_context
    from grelmicro.coordination.redis import RedisReadWriteLockAdapter
    from grelmicro.providers.redis import RedisProvider

    prefix = f"py-contention-{os.getpid()}:"
    grel = await enter(RedisProvider(redis_url))
    ours = await enter(tenure.RedisProvider(f"{redis_url}/?prefix={prefix}t:"))
    yield "redis", await enter(RedisReadWriteLockAdapter(provider=grel, prefix=prefix)), ours
    from grelmicro.coordination.postgres import PostgresReadWriteLockAdapter
    from grelmicro.providers.postgres import PostgresProvider

    stem = f"py_contention_{os.getpid()}"
    grel = await enter(PostgresProvider(postgres_url))
    ours = await enter(tenure.PostgresProvider(f"{postgres_url}?rwlock_table={stem}_t&semaphore_table={stem}_s"))
    yield "postgres", await enter(PostgresReadWriteLockAdapter(provider=grel, table_name=f"{stem}_g")), ours


async def read_rate(lock) -> float:
    """Read cycles per second of READERS tasks over one slice."""
    stop = time.perf_counter() + SLICE
    counts = [0] * READERS

    async def reader(i: int) -> None:
        while time.perf_counter() < stop:
            async with lock.read:
                pass
            counts[i] += 1

    started = time.perf_counter()
    await asyncio.gather(*(reader(i) for i in range(READERS)))
    return sum(counts) / (time.perf_counter() - started)


async def writer_wait(lock) -> float:
    """Median seconds a writer waits while READERS tasks keep the lock read (HOLD per read)."""
    waits = []
    for _ in range(ARRIVALS):
        done = asyncio.Event()

        async def reader() -> None:
            while not done.is_set():
                async with lock.read:
                    await asyncio.sleep(HOLD)

        readers = [asyncio.create_task(reader()) for _ in range(READERS)]
        await asyncio.sleep(3 * HOLD)  # every reader in
        started = time.perf_counter()
        async with lock.write:
            waits.append(time.perf_counter() - started)
            done.set()
        await asyncio.gather(*readers)
    return statistics.median(waits)


async def semaphore_run(semaphore) -> tuple:
    """(permits per second, most holders at once, Jain's index) of TASKS tasks over 3 s."""
    stop = time.perf_counter() + 3.0
    counts, inside, most = [0] * TASKS, 0, 0

    async def worker(i: int) -> None:
        nonlocal inside, most
        while time.perf_counter() < stop:
            async with semaphore:
                inside += 1
                most = max(most, inside)
                await asyncio.sleep(PERMIT_HOLD)
                inside -= 1
            counts[i] += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker(i) for i in range(TASKS)))
    rate = sum(counts) / (time.perf_counter() - started)
    jain = sum(counts) ** 2 / (len(counts) * sum(c * c for c in counts)) if any(counts) else 0.0
    return rate, most, jain


async def main(redis_url: str, postgres_url: str) -> None:
    import tenure
    from grelmicro.coordination.readwritelock import ReadWriteLock as GrelRW

    async with AsyncExitStack() as stack:
        async for label, grel_backend, ours_provider in stores(stack, redis_url, postgres_url):
            grel = GrelRW("bench", backend=grel_backend, lease_duration=timedelta(seconds=30))
            ours = tenure.ReadWriteLock("bench", backend=ours_provider.readwritelock(), lease_duration=30, env_load=False)
            g_rates, o_rates = [], []
            for _ in range(SLICES):
                g_rates.append(await read_rate(grel))
                o_rates.append(await read_rate(ours))
            g, o = statistics.median(g_rates), statistics.median(o_rates)
            print(f"{label}, {READERS} readers on one name: grelmicro {g:.0f}/s, tenure {o:.0f}/s, ratio {o / g:.2f}")
            g_wait, o_wait = await writer_wait(grel), await writer_wait(ours)
            print(
                f"{label}, a writer behind {READERS} readers holding {HOLD * 1000:.0f} ms each: "
                f"grelmicro waits {g_wait * 1000:.1f} ms, tenure {o_wait * 1000:.1f} ms "
                f"({o_wait / HOLD:.2f} x a reader's hold)"
            )
            semaphore = tenure.Semaphore("bench", PERMITS, backend=ours_provider.semaphore(), lease_duration=30, env_load=False)
            rate, most, jain = await semaphore_run(semaphore)
            floor = PERMITS / PERMIT_HOLD
            print(
                f"{label}, a semaphore of {PERMITS} permits under {TASKS} tasks holding {PERMIT_HOLD * 1000:.0f} ms: "
                f"{rate:.0f} permits/s ({rate / floor:.2f} x the {floor:.0f}/s the permits allow), "
                f"at most {most} at once, Jain's index {jain:.3f}"
            )


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
