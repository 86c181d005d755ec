"""A holder of semaphore NAME's permits for semaphore.sh through the Python package `tenure`,
written as a user writes it: takes a permit ROUNDS times, each section appending
`in <fence> python` and `out <fence>` to LOG.

Usage: python semaphore_py.py URL NAME PERMITS LOG ROUNDS
"""

import asyncio
import sys

import tenure


def provider_of(url: str):
    if url.startswith("redis"):
        return tenure.RedisProvider(url)
    if url.startswith("etcd"):
        return tenure.EtcdProvider(url)
    if url.startswith("sqlite://"):
        return tenure.SQLiteProvider(url[len("sqlite://"):])
    return tenure.PostgresProvider(url)


async def main(url: str, name: str, permits: str, log: str, rounds: str) -> None:
    async with provider_of(url) as provider:
        pool = tenure.Semaphore(name, int(permits), backend=provider.semaphore(), lease_duration=10,
                                retry_interval=0.02, env_load=False)
        for _ in range(int(rounds)):
            async with pool as permit:
                with open(log, "a") as f:
                    f.write(f"in {permit.fencing_token} python\n")
                await asyncio.sleep(0.05)
                with open(log, "a") as f:
                    f.write(f"out {permit.fencing_token}\n")
            await asyncio.sleep(0.01)


asyncio.run(main(*sys.argv[1:]))
