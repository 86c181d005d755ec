"""A client of the Jepsen harness through the Python package `tenure`, written as a grelmicro
user writes it: a `Lock` on a provider, `acquire`, the guarded work, `release`, again and again.
It tells the harness each operation (and reaches the fenced resource) over one TCP connection:
see `src/serve.rs`.

With PERMITS above 0 it holds permits of a `Semaphore` of that many instead, and writes to the
resource as it enters and as it leaves. With PERMITS `election` it runs a `LeaderElection`
instead, as a grelmicro user runs one (`asyncio.create_task(election(stop=...))`), and each time
it leads, writes under its term's fencing token, then stops (the next turn starts it again).

Usage: python worker.py URL NAME HARNESS_ADDRESS PROCESS LEASE_SECONDS TIMEOUT_SECONDS PERMITS
"""

import asyncio
import os
import random
import socket
import sys

import tenure
from tenure.errors import LockNotOwnedError, LockTimeoutError, TenureError


def provider_for(url: str):
    if url.startswith("sqlite://"):
        return tenure.SQLiteProvider(url[len("sqlite://") :])
    if url.startswith("redis"):
        return tenure.RedisProvider(url)
    if url.startswith("etcd"):
        return tenure.EtcdProvider(url)
    return tenure.PostgresProvider(url)


class Harness:
    def __init__(self, address: str, process: str, name: str) -> None:
        host, port = address.rsplit(":", 1)
        self.file = socket.create_connection((host, int(port))).makefile("rw")
        self.say(f"hello {process} {name} {os.getpid()}")

    def say(self, line: str) -> str:
        self.file.write(line + "\n")
        self.file.flush()
        answer = self.file.readline().strip()
        if not answer or answer.startswith("error"):
            raise SystemExit(f"the harness answered {answer!r} to {line!r}")
        return answer


async def section(harness: Harness, fence: int) -> None:
    """Reads the set under `fence`, waits a little (a pause can fall here), writes it back."""
    values = harness.say(f"read {fence}").split()[1:]
    await asyncio.sleep(random.uniform(0, 0.2))
    harness.say(" ".join(["add", str(fence), *values]))


async def elections(harness: Harness, provider, name: str, lease: float, timeout: float) -> None:
    election = tenure.LeaderElection(
        name,
        backend=provider.leaderelection(),
        lease_duration=lease,
        renew_deadline=0.6 * lease,
        retry_interval=0.1 * lease,
        backend_timeout=0.3 * lease,
        env_load=False,
    )
    while True:
        harness.say("invoke acquire")
        stop = asyncio.Event()
        running = asyncio.create_task(election(stop=stop))
        try:
            await asyncio.wait_for(election.wait_for_leader(), timeout)
            fence = election.fencing_token
        except asyncio.TimeoutError:
            fence = None
        if fence is None:
            # Not leading (or no longer): nothing was granted that this turn will use.
            harness.say("fail")
        else:
            harness.say(f"ok {fence}")
            await section(harness, fence)
            harness.say("invoke release")
        stop.set()
        await running
        if fence is not None:
            harness.say("info")  # the release on stop reports nothing


async def opened(url: str):
    """The store's provider, opened again while the store is unavailable (a failover as the worker
    starts), as a supervisor restarts a service that could not open it."""
    provider = provider_for(url)
    while True:
        try:
            await provider.open()
            return provider
        except (TenureError, OSError) as error:  # (an unreachable store: ConnectionError)
            print(f"the store cannot be opened yet: {error}", file=sys.stderr)
            await asyncio.sleep(0.1)


async def main(url: str, name: str, address: str, process: str, lease: str, timeout: str, permits: str) -> None:
    harness = Harness(address, process, name)
    async with await opened(url) as provider:
        if permits == "election":
            await elections(harness, provider, name, float(lease), float(timeout))
            return
        settings = {"lease_duration": float(lease), "retry_interval": 0.05, "env_load": False}
        if int(permits) > 0:
            lock = tenure.Semaphore(name, int(permits), backend=provider.semaphore(), **settings)
        else:
            lock = tenure.Lock(name, backend=provider.lock(), **settings)
        # A release the store failed leaves this task holding the lock's marker, as grelmicro's
        # does (an acquire would be refused as nested): the task releases again first.
        releasing = False
        while True:
            if releasing:
                releasing = await release(harness, lock)
                if releasing:
                    await asyncio.sleep(0.1)
                continue
            harness.say("invoke acquire")
            try:
                handle = await lock.acquire(timeout=float(timeout))
            except LockTimeoutError:
                harness.say("fail")
                continue
            except TenureError:
                harness.say("info")  # the store failed: the lease may have been granted
                await asyncio.sleep(0.1)
                continue
            fence = handle.fencing_token
            harness.say(f"ok {fence}")
            if int(permits) > 0:
                harness.say(f"write {fence}")  # in
                await asyncio.sleep(random.uniform(0, 0.2))
                harness.say(f"write {fence}")  # out
            else:
                await section(harness, fence)
            releasing = await release(harness, lock)


async def release(harness: Harness, lock) -> bool:
    """Releases, telling the harness; whether the store failed it (the task must release again)."""
    harness.say("invoke release")
    try:
        await lock.release()
    except LockNotOwnedError:
        harness.say("fail")  # the lease ran out meanwhile
    except TenureError:
        harness.say("info")
        return True
    else:
        harness.say("ok")
    return False


asyncio.run(main(*sys.argv[1:]))
