"""grelmicro 0.44's Lock and the `tenure` package's Lock as tasks of one asyncio program on one
Redis: critical sections never overlap and fencing tokens strictly increase across both
libraries; then tenure's Lock on grelmicro's own adapters (Redis, memory), which tenure runs as
backends a user wrote. Usage: python_mixed.py REDIS_URL

(Not SQLite in one program: tenure links its own copy of SQLite, and two copies of SQLite in one
process do not see each other's file locks — POSIX locks are per process — so they can both
"hold" the write lock. Across processes they exclude each other: tests/interop/sqlite.sh.)"""

import asyncio
import sys
import uuid

import tenure
from grelmicro.coordination.lock import Lock as GrelLock
from grelmicro.coordination.memory import MemoryLockAdapter as GrelMemory
from grelmicro.coordination.redis import RedisLockAdapter
from grelmicro.providers.redis import RedisProvider as GrelRedis

ROUNDS = 8


async def contend(store: str, grel_backend, tenure_backend) -> None:
    log = []

    async def worker(lock, who):
        for _ in range(ROUNDS):
            async with lock as handle:
                log.append(("start", handle.fencing_token, who))
                await asyncio.sleep(0.005)
                log.append(("end", handle.fencing_token, who))

    workers = [worker(GrelLock("mixed", backend=grel_backend, retry_interval=0.01), "grelmicro") for _ in range(2)]
    workers += [
        worker(tenure.Lock("mixed", backend=tenure_backend, retry_interval=0.01, env_load=False), "tenure")
        for _ in range(2)
    ]
    await asyncio.gather(*workers)
    last = 0
    for (start, fence, who), (end, same, _) in zip(log[0::2], log[1::2]):
        assert (start, end) == ("start", "end"), f"{store}: a section started inside another"
        assert fence == same and fence > last, f"{store}: fencing token {fence} after {last}"
        last = fence
    whos = {who for _, _, who in log}
    assert whos == {"grelmicro", "tenure"} and len(log) == 8 * ROUNDS, f"{store}: {len(log)} entries from {whos}"
    print(f"{store}: {len(log) // 2} sections from grelmicro and tenure in one program, fences 1..{last}, none overlapping")


async def main(url: str) -> None:
    prefix = f"py-mixed-{uuid.uuid4().hex}:"
    async with GrelRedis(url) as provider, RedisLockAdapter(provider=provider, prefix=prefix) as grel:
        async with tenure.RedisProvider(f"{url}/?prefix={prefix}") as mine:
            await contend("redis", grel, mine.lock())
        # grelmicro's adapters are backends a user wrote, from tenure's side: its Lock runs on them.
        await contend("grelmicro's RedisLockAdapter under tenure's Lock", grel, grel)
    async with GrelMemory() as memory:
        await contend("grelmicro's MemoryLockAdapter under tenure's Lock", memory, memory)


asyncio.run(main(sys.argv[1]))
