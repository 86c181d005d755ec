"""Read-write locks: tenure's Python package beside grelmicro 0.44, in one interpreter and one run:
one task's `async with lock.read:` and `async with lock.write:` on memory, a SQLite file, Redis and
PostgreSQL (median of 11 batches, the two libraries' batches taking turns; see python_lock.py).
Prints microseconds per cycle and tenure / grelmicro.
Usage: python_rw.py DIR [REDIS_URL [POSTGRES_URL]]   (needs grelmicro 0.44 and the tenure wheel)"""

import asyncio
import os
import sys
from contextlib import AsyncExitStack
from datetime import timedelta

from python_lock import per_cycle


async def stores(stack: AsyncExitStack, directory: str, redis_url: str, postgres_url: str):
    """(label, grelmicro backend, tenure backend, batch) for each store."""
    import tenure
    from grelmicro.coordination.memory import MemoryReadWriteLockAdapter
    from grelmicro.coordination.sqlite import SQLiteReadWriteLockAdapter
    from grelmicro.providers.sqlite import SQLiteProvider

    enter = stack.enter_async_context
    yield "memory", await enter(MemoryReadWriteLockAdapter()), await enter(tenure.MemoryReadWriteLockAdapter()), 1000
    grel_file, ours_file = os.path.join(directory, "grelmicro.db"), os.path.join(directory, "tenure.db")
    grel_sqlite = await enter(SQLiteProvider(grel_file))
    ours_sqlite = await enter(tenure.SQLiteProvider(ours_file))
    yield "sqlite", await enter(SQLiteReadWriteLockAdapter(provider=grel_sqlite)), ours_sqlite.readwritelock(), 100
    if redis_url:
        from grelmicro.coordination.redis import RedisReadWriteLockAdapter
        from grelmicro.providers.redis import RedisProvider

        prefix = f"py-rw-bench-{os.getpid()}:"
        grel = await enter(RedisProvider(redis_url))
        ours = await enter(tenure.RedisProvider(f"{redis_url}/?prefix={prefix}t:"))
        yield "redis", await enter(RedisReadWriteLockAdapter(provider=grel, prefix=prefix)), ours.readwritelock(), 200
    if postgres_url:
        from grelmicro.coordination.postgres import PostgresReadWriteLockAdapter
        from grelmicro.providers.postgres import PostgresProvider

        stem = f"py_rw_bench_{os.getpid()}"
        grel = await enter(PostgresProvider(postgres_url))
        ours = await enter(tenure.PostgresProvider(f"{postgres_url}?rwlock_table={stem}_t"))
        grel_backend = await enter(PostgresReadWriteLockAdapter(provider=grel, table_name=f"{stem}_g"))
        yield "postgres", grel_backend, ours.readwritelock(), 100


async def main(directory: str, redis_url: str = "", postgres_url: str = "") -> None:
    import tenure
    from grelmicro.coordination.readwritelock import ReadWriteLock as GrelRW

    async with AsyncExitStack() as stack:
        async for label, grel_backend, ours_backend, batch in stores(stack, directory, redis_url, postgres_url):
            grel = GrelRW("bench", backend=grel_backend, lease_duration=timedelta(seconds=30))
            ours = tenure.ReadWriteLock("bench", backend=ours_backend, lease_duration=30, env_load=False)
            for side in ("read", "write"):
                g, o = await per_cycle(getattr(grel, side), getattr(ours, side), batch=batch)
                print(f"{label}, one task, async with lock.{side}: grelmicro {g:.1f} us, tenure {o:.1f} us, ratio {o / g:.2f}")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
