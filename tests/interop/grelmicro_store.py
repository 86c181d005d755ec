"""grelmicro 0.44 on Redis or PostgreSQL, for the interop tests, with its own Lock and lock and
leader-election adapters: on Redis under the key prefix WHERE, on PostgreSQL on the tables
`<WHERE>_locks` and `<WHERE>_leaders`. The URL's scheme picks the store.

- `lock URL WHERE NAME LOG ROUNDS` takes the lock NAME ROUNDS times and around each critical
  section appends `start <fence> grelmicro` and `end <fence>` to LOG (as `tenure lock` workers do);
- `take URL WHERE NAME HOLDER SECONDS` makes HOLDER the leader of NAME for SECONDS;
- `get URL WHERE NAME` prints the live leader (or `none`) as grelmicro reads it;
- `revoked URL WHERE NAME TENURE TENURE_URL` holds the lock NAME as a grelmicro user does, has
  `tenure revoke` take it away, and prints what grelmicro then sees: its `extend()` and its release
  on leaving `async with`, and the next holder's fence once the lock is free again."""

import asyncio
import json
import subprocess
import sys
from datetime import timedelta

from typing import Any

from grelmicro.coordination.lock import Lock
from grelmicro.coordination.postgres import PostgresLeaderElectionAdapter, PostgresLockAdapter
from grelmicro.coordination.redis import RedisLeaderElectionAdapter, RedisLockAdapter
from grelmicro.providers.postgres import PostgresProvider
from grelmicro.providers.redis import RedisProvider


def adapter(provider: Any, where: str, kind: str) -> Any:
    """The lock (`kind` "lock") or leader-election adapter of `provider`'s store at `where`."""
    if isinstance(provider, RedisProvider):
        cls = RedisLockAdapter if kind == "lock" else RedisLeaderElectionAdapter
        return cls(provider=provider, prefix=where)
    if kind == "lock":
        return PostgresLockAdapter(provider=provider, table_name=f"{where}_locks")
    return PostgresLeaderElectionAdapter(provider=provider, table_name=f"{where}_leaders")


async def lock(provider: Any, where: str, name: str, log: str, rounds: str) -> None:
    async with adapter(provider, where, "lock") as backend:
        lock = Lock(name, backend=backend, lease_duration=timedelta(seconds=10), retry_interval=0.02)
        for _ in range(int(rounds)):
            async with lock as held:
                with open(log, "a") as f:
                    f.write(f"start {held.fencing_token} grelmicro\n")
                await asyncio.sleep(0.03)
                with open(log, "a") as f:
                    f.write(f"end {held.fencing_token}\n")
            await asyncio.sleep(0.01)


async def revoked(provider: Any, where: str, name: str, tenure: str, tenure_url: str) -> None:
    from grelmicro.coordination.errors import LockNotOwnedError

    async with adapter(provider, where, "lock") as backend:
        lock = Lock(name, backend=backend, lease_duration=timedelta(seconds=3), retry_interval=0.05)
        try:
            async with lock as held:
                fence = held.fencing_token
                said = subprocess.run(
                    [tenure, "--backend", tenure_url, "revoke", name, "--reason", "interop", "--json"],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
                revocation = json.loads(said)
                assert revocation["revoked_fencing_token"] == fence, (revocation, fence)
                try:
                    await lock.extend()
                    sys.exit(f"grelmicro renewed a revoked lock (fence {fence})")
                except LockNotOwnedError as e:
                    print(f"extend(): LockNotOwnedError: {e}")
        except LockNotOwnedError as e:
            print(f"leaving async with: LockNotOwnedError: {e}")
        else:
            print("leaving async with: no error")
        other = Lock(name, backend=backend, lease_duration=timedelta(seconds=3), retry_interval=0.05)
        async with other as next_holder:
            print(f"next holder: fence {next_holder.fencing_token} after revoked fence {fence} (revocation's {revocation['fencing_token']})")
            assert next_holder.fencing_token > revocation["fencing_token"], next_holder.fencing_token


async def leader(provider: Any, where: str, command: str, name: str, *rest: str) -> None:
    async with adapter(provider, where, "leader") as backend:
        if command == "take":
            holder, seconds = rest
            record = await backend.acquire_or_renew(
                name=name, token=holder, duration=timedelta(seconds=float(seconds)), metadata={"pod": "py"}
            )
            assert record.holder == holder, record
        else:
            record = await backend.get(name=name)
            print(record.holder if record else "none")


async def main(command: str, url: str, where: str, *rest: str) -> None:
    provider = RedisProvider(url) if url.startswith("redis") else PostgresProvider(url)
    async with provider:
        if command == "lock":
            await lock(provider, where, *rest)
        elif command == "revoked":
            await revoked(provider, where, *rest)
        else:
            await leader(provider, where, command, *rest)


asyncio.run(main(*sys.argv[1:]))
