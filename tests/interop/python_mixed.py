"""grelmicro 0.44's Lock and the `tenure` package's Lock as tasks of one asyncio program on one
Redis: critical sections never overlap and fencing tokens strictly increase across both
libraries; the same through one `redis+sentinel://` URL, on a master, a replica and a sentinel
this program starts; then tenure's Lock on grelmicro's own adapters (Redis, memory), which
tenure runs as backends a user wrote. Usage: python_mixed.py REDIS_URL

(Not SQLite in one program: tenure links its own copy of SQLite, and two copies of SQLite in one
process do not see each other's file locks — POSIX locks are per process — so they can both
"hold" the write lock. Across processes they exclude each other: tests/interop/sqlite.sh.)"""

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
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


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def answers(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2) as conn:
        conn.sendall(b"PING\r\n")
        return conn.recv(16).startswith(b"+PONG")
    return False


@contextlib.contextmanager
def sentinel_group():
    """A master, a replica and a sentinel on free loopback ports; yields the sentinel URL."""
    master, replica, sentinel = free_port(), free_port(), free_port()
    with tempfile.TemporaryDirectory(prefix="tenure-interop-sentinel-") as work:
        config = os.path.join(work, "sentinel.conf")
        with open(config, "w") as f:
            f.write(f"port {sentinel}\nbind 127.0.0.1\ndir {work}\nsentinel monitor mymaster 127.0.0.1 {master} 1\n")
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        processes = [subprocess.Popen(["redis-server", "--port", str(master), "--save", ""], cwd=work, **quiet)]
        processes.append(subprocess.Popen(
            ["redis-server", "--port", str(replica), "--save", "", "--replicaof", "127.0.0.1", str(master)], cwd=work, **quiet
        ))
        processes.append(subprocess.Popen(["redis-server", config, "--sentinel"], cwd=work, **quiet))
        try:
            deadline = time.monotonic() + 20
            while not all(answers(p) for p in (master, replica, sentinel)):
                assert time.monotonic() < deadline, "the sentinel group did not start"
                time.sleep(0.05)
            yield f"redis+sentinel://127.0.0.1:{sentinel}/mymaster/0"
        finally:
            for process in processes:
                process.kill()
                process.wait()


async def main(url: str) -> None:
    prefix = f"py-mixed-{uuid.uuid4().hex}:"
    async with GrelRedis(url) as provider, RedisLockAdapter(provider=provider, prefix=prefix) as grel:
        async with tenure.RedisProvider(f"{url}/?prefix={prefix}") as mine:
            await contend("redis", grel, mine.lock())
        # grelmicro's adapters are backends a user wrote, from tenure's side: its Lock runs on them.
        await contend("grelmicro's RedisLockAdapter under tenure's Lock", grel, grel)
    # One Sentinel URL, as both libraries read it (grelmicro's redis+sentinel://hosts/master/db).
    with sentinel_group() as sentinel_url:
        async with GrelRedis(sentinel_url) as provider, RedisLockAdapter(provider=provider, prefix=prefix) as grel:
            async with tenure.RedisProvider(f"{sentinel_url}?prefix={prefix}") as mine:
                await contend("redis through Sentinel", grel, mine.lock())
    async with GrelMemory() as memory:
        await contend("grelmicro's MemoryLockAdapter under tenure's Lock", memory, memory)


asyncio.run(main(sys.argv[1]))
