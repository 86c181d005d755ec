"""The peer figure for the driver benchmark: grelmicro 0.44's in-memory Lock, acquire + release by
one task, as the median of 21 batches (the same shape as tests/suite/src/bench.rs). Prints
nanoseconds per cycle. Run by scripts/bench-peer.sh with the venv from tools/grelmicro-env.sh."""

import asyncio
import statistics
import time

from grelmicro.coordination.lock import Lock
from grelmicro.coordination.memory import MemoryLockAdapter

BATCH = 2_000


async def cycles(lock: Lock, count: int) -> None:
    for _ in range(count):
        async with lock:
            pass


async def main() -> None:
    async with MemoryLockAdapter() as backend:
        lock = Lock("bench", backend=backend)
        await cycles(lock, BATCH)
        per_cycle = []
        for _ in range(21):
            started = time.perf_counter()
            await cycles(lock, BATCH)
            per_cycle.append((time.perf_counter() - started) / BATCH)
        print(f"{statistics.median(per_cycle) * 1e9:.0f}")


asyncio.run(main())
