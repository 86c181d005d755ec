"""A contender for store.sh through the Python package `tenure`, written as a grelmicro user writes
it: takes lock NAME ROUNDS times, each critical section appending `start <fence> python` and
`end <fence>` to LOG.

Usage: python tenure_py_lock.py URL NAME LOG ROUNDS
"""

import asyncio
import sys

import tenure


async def main(url: str, name: str, log: str, rounds: str) -> None:
    if url.startswith("redis"):
        provider = tenure.RedisProvider(url)
    elif url.startswith("etcd"):
        provider = tenure.EtcdProvider(url)
    else:
        provider = tenure.PostgresProvider(url)
    async with provider:
        lock = tenure.Lock(name, backend=provider.lock(), lease_duration=10, retry_interval=0.02, env_load=False)
        for _ in range(int(rounds)):
            async with lock as held:
                with open(log, "a") as f:
                    f.write(f"start {held.fencing_token} python\n")
                await asyncio.sleep(0.03)
                with open(log, "a") as f:
                    f.write(f"end {held.fencing_token}\n")
            await asyncio.sleep(0.01)


asyncio.run(main(*sys.argv[1:]))
