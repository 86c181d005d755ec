"""The peer figure for the SQLite benchmark: grelmicro 0.44's Lock on its SQLite adapter (a file,
WAL, synchronous as given: full is SQLite's and grelmicro's default), acquire + release by one
task, as the median of 11 batches of 100. Prints microseconds per cycle.
Usage: grelmicro_sqlite_lock.py DIR [full|normal]"""

import asyncio
import os
import statistics
import sys
import time

from grelmicro.coordination.lock import Lock
from grelmicro.coordination.sqlite import SQLiteLockAdapter
from grelmicro.providers.sqlite import SQLiteProvider

BATCH = 100


async def main(directory: str, synchronous: str) -> None:
    path = os.path.join(directory, f"grelmicro-{synchronous}.db")
    async with SQLiteProvider(path, synchronous=synchronous) as provider, SQLiteLockAdapter(provider=provider) as backend:
        lock = Lock("bench", backend=backend)
        per_cycle = []
        for batch in range(12):
            started = time.perf_counter()
            for _ in range(BATCH):
                async with lock:
                    pass
            if batch > 0:
                per_cycle.append((time.perf_counter() - started) / BATCH)
        print(f"{statistics.median(per_cycle) * 1e6:.1f}")


asyncio.run(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "full"))
