"""grelmicro 0.44 on Redis, for the interop test, with its own Lock, RedisLockAdapter and
RedisLeaderElectionAdapter under the key prefix PREFIX:

- `lock URL PREFIX NAME LOG ROUNDS` takes the lock NAME ROUNDS times and around each critical
  section appends `start <fence> grelmicro` and `end <fence>` to LOG (as `tenure lock` workers do);
- `take URL PREFIX NAME HOLDER SECONDS` makes HOLDER the leader of NAME for SECONDS;
- `get URL PREFIX NAME` prints the live leader (or `none`) as grelmicro reads it."""

import asyncio
import sys
from datetime import timedelta

from grelmicro.coordination.lock import Lock
from grelmicro.coordination.redis import RedisLeaderElectionAdapter, RedisLockAdapter
from grelmicro.providers.redis import RedisProvider


async def lock(provider: RedisProvider, prefix: str, name: str, log: str, rounds: str) -> None:
    async with RedisLockAdapter(provider=provider, prefix=prefix) as backend:
        lock = Lock(name, backend=backend, lease_duration=timedelta(seconds=10), retry_interval=0.02)
        for _ in range(int(rounds)):
            async with lock as held:
                with open(log, "a") as f:
                    f.write(f"start {held.fencing_token} grelmicro\n")
                await asyncio.sleep(0.03)
                with open(log, "a") as f:
                    f.write(f"end {held.fencing_token}\n")
            await asyncio.sleep(0.01)


async def leader(provider: RedisProvider, prefix: str, command: str, name: str, *rest: str) -> None:
    async with RedisLeaderElectionAdapter(provider=provider, prefix=prefix) as backend:
        if command == "take":
            holder, seconds = rest
            record = await backend.acquire_or_renew(
                name=name, token=holder, duration=timedelta(seconds=float(seconds)), metadata={"pod": "py"}
            )
            assert record.holder == holder, record
        else:
            record = await backend.get(name=name)
            print(record.holder if record else "none")


async def main(command: str, url: str, prefix: str, *rest: str) -> None:
    async with RedisProvider(url) as provider:
        if command == "lock":
            await lock(provider, prefix, *rest)
        else:
            await leader(provider, prefix, command, *rest)


asyncio.run(main(*sys.argv[1:]))
