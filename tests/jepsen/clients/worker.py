"""A client of the Jepsen harness through the Python package `tenure`, written as a grelmicro
user writes it: a `Lock` on a provider, `acquire`, the guarded work, `release`, again and again.
It tells the harness each operation (and reaches the fenced resource) over one TCP connection:
see `src/serve.rs`.

With PERMITS above 0 it holds permits of a `Semaphore` of that many instead, and writes to the
resource as it enters and as it leaves.

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


async def main(url: str, name: str, address: str, process: str, lease: str, timeout: str, permits: str) -> None:
    harness = Harness(address, process, name)
    async with provider_for(url) as provider:
        settings = {"lease_duration": float(lease), "retry_interval": 0.05, "env_load": False}
        if int(permits) > 0:
            lock = tenure.Semaphore(name, int(permits), backend=provider.semaphore(), **settings)
        else:
            lock = tenure.Lock(name, backend=provider.lock(), **settings)
        while True:
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
                values = harness.say(f"read {fence}").split()[1:]
                await asyncio.sleep(random.uniform(0, 0.2))
                harness.say(" ".join(["add", str(fence), *values]))
            harness.say("invoke release")
            try:
                await lock.release()
            except LockNotOwnedError:
                harness.say("fail")  # the lease ran out meanwhile
            except TenureError:
                harness.say("info")
            else:
                harness.say("ok")


asyncio.run(main(*sys.argv[1:]))
