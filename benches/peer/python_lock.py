"""tenure's Python package beside grelmicro 0.44, in one interpreter and one run: one task's
`async with lock:` on the memory backend (median of 11 batches of 1000), on a trivial backend
written in Python (a dict; both libraries' `Lock` on the same class), and on Redis (median of 11
batches of 200) when a URL is given, beside two floors: a PING round trip of redis-py's asyncio
client (grelmicro's), and one on a bare asyncio stream. Prints microseconds per cycle and the ratios.
Usage: python_lock.py [REDIS_URL]   (needs grelmicro 0.44 and the tenure wheel installed)"""

import asyncio
import os
import statistics
import sys
import time


async def per_cycle(*locks, batch: int) -> list:
    """Microseconds per `async with` cycle of each lock: the median of 11 batches (after one
    warm-up), the locks' batches taking turns so that a slow spell of the machine hits each alike."""
    samples = [[] for _ in locks]
    for round_ in range(12):
        for lock, kept in zip(locks, samples):
            started = time.perf_counter()
            for _ in range(batch):
                async with lock:
                    pass
            if round_ > 0:
                kept.append((time.perf_counter() - started) / batch)
    return [statistics.median(kept) * 1e6 for kept in samples]


async def memory() -> tuple:
    import tenure
    from grelmicro.coordination.lock import Lock as GrelLock
    from grelmicro.coordination.memory import MemoryLockAdapter as GrelMemory

    async with GrelMemory() as backend:
        ours = tenure.Lock("bench", backend=tenure.MemoryLockAdapter(), env_load=False)
        return await per_cycle(GrelLock("bench", backend=backend), ours, batch=1000)


class DictLocks:
    """The least a lock backend written in Python does: a dict of (token, expiry, fence)."""

    def __init__(self) -> None:
        self.held: dict = {}
        self.fences: dict = {}

    async def acquire(self, *, name, token, duration):
        now = time.monotonic()
        held = self.held.get(name)
        if held is not None and held[0] != token and held[1] > now:
            return None
        fence = held[2] if held is not None and held[0] == token else self.fences.get(name, 0) + 1
        self.fences[name] = fence
        self.held[name] = (token, now + duration.total_seconds(), fence)
        return fence

    async def release(self, *, name, token):
        held = self.held.get(name)
        if held is None or held[0] != token:
            return False
        del self.held[name]
        return True

    async def locked(self, *, name):
        return name in self.held

    async def owned(self, *, name, token):
        return self.held.get(name, ("",))[0] == token


async def user_backend() -> tuple:
    import tenure
    from grelmicro.coordination.lock import Lock as GrelLock

    ours = tenure.Lock("bench", backend=DictLocks(), env_load=False)
    memory = tenure.Lock("bench", backend=tenure.MemoryLockAdapter(), env_load=False)
    return await per_cycle(GrelLock("bench", backend=DictLocks()), ours, memory, batch=1000)


class Each:
    """`async with Each(call):` awaits `call()`: what per_cycle measures is one call."""

    def __init__(self, call) -> None:
        self.call = call

    async def __aenter__(self):
        await self.call()

    async def __aexit__(self, *exc):
        return None


async def round_trip(url: str) -> float:
    """One PING round trip on a bare asyncio stream: the floor a Python program pays per command."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname or "127.0.0.1", parts.port or 6379)

    async def ping():
        writer.write(b"PING\r\n")
        await reader.readline()

    try:
        return (await per_cycle(Each(ping), batch=200))[0]
    finally:
        writer.close()


async def redis_asyncio_round_trip(url: str) -> float:
    """One PING round trip of redis-py's asyncio client (what grelmicro's Redis adapter uses)."""
    from redis.asyncio import Redis

    client = Redis.from_url(url)
    try:
        return (await per_cycle(Each(client.ping), batch=200))[0]
    finally:
        await client.aclose()


async def redis(url: str) -> tuple:
    import tenure
    from grelmicro.coordination.lock import Lock as GrelLock
    from grelmicro.coordination.redis import RedisLockAdapter
    from grelmicro.providers.redis import RedisProvider as GrelRedis

    prefix = f"py-bench-{os.getpid()}:"
    async with (
        GrelRedis(url) as provider,
        RedisLockAdapter(provider=provider, prefix=prefix) as backend,
        tenure.RedisProvider(f"{url}/?prefix={prefix}t:") as store,
    ):
        ours = tenure.Lock("bench", backend=store.lock(), env_load=False)
        return await per_cycle(GrelLock("bench", backend=backend), ours, batch=200)


async def main() -> None:
    grel, ours = await memory()
    print(f"memory, one task, async with lock: grelmicro {grel:.2f} us, tenure {ours:.2f} us, ratio {ours / grel:.2f}")
    grel, ours, memory_ = await user_backend()
    print(
        f"a backend written in Python (a dict), one task, async with lock: grelmicro {grel:.2f} us, tenure {ours:.2f}"
        f" us, ratio {ours / grel:.2f}; tenure on its memory store {memory_:.2f} us (the user backend costs"
        f" {ours - memory_:.2f} us more)"
    )
    if len(sys.argv) > 1:
        grel, ours = await redis(sys.argv[1])
        client = await redis_asyncio_round_trip(sys.argv[1])
        floor = await round_trip(sys.argv[1])
        print(
            f"redis, one task, async with lock: grelmicro {grel:.1f} us, tenure {ours:.1f} us, ratio {ours / grel:.2f}"
            f" (target <= 0.7); a redis.asyncio PING round trip {client:.1f} us: tenure = {ours / (2 * client):.2f} x"
            f" two (target <= 1.0); a PING on a bare asyncio stream {floor:.1f} us: tenure = {ours / (2 * floor):.2f} x two"
        )


if __name__ == "__main__":
    asyncio.run(main())
