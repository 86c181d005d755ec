"""grelmicro 0.44's ReadWriteLock on a SQLite file, Redis or PostgreSQL, for the read-write interop
test: `grelmicro_rw.py URL WHERE NAME LOG ROUNDS` takes NAME ROUNDS times with its own
ReadWriteLock and adapter (with `--tenure` first: the same code on the Python package `tenure`,
whose URL is tenure's and whose sections are the `python` ones), alternately to read and to write (a process whose ROUNDS start odd
reads first), and around each section appends to LOG the lines `tenure lock --shared` and
`--exclusive` workers write: `read <generation> grelmicro` … `done-read <generation>`, and
`write <fencing token> grelmicro` … `done-write <fencing token>`. URL: `sqlite:///path`,
`redis://…` (keys under the prefix WHERE) or `postgresql://…` (tables `<WHERE>_rwlocks`)."""

import asyncio
import sys
from datetime import timedelta
from typing import Any

if sys.argv[1] == "--tenure":
    import tenure

    sys.argv.pop(1)
    who = "python"
    ReadWriteLock: Any = tenure.ReadWriteLock
else:
    from grelmicro.coordination.readwritelock import ReadWriteLock

    who = "grelmicro"


def tenure_store(url: str) -> tuple[Any, Any]:
    if url.startswith("sqlite://"):
        provider = tenure.SQLiteProvider(url.removeprefix("sqlite://"))
    elif url.startswith("redis"):
        provider = tenure.RedisProvider(url)
    else:
        provider = tenure.PostgresProvider(url)
    return provider, provider.readwritelock


def store(url: str, where: str) -> tuple[Any, Any]:
    if who == "python":
        return tenure_store(url)
    from grelmicro.coordination.postgres import PostgresReadWriteLockAdapter
    from grelmicro.coordination.redis import RedisReadWriteLockAdapter
    from grelmicro.coordination.sqlite import SQLiteReadWriteLockAdapter
    from grelmicro.providers.postgres import PostgresProvider
    from grelmicro.providers.redis import RedisProvider
    from grelmicro.providers.sqlite import SQLiteProvider

    if url.startswith("sqlite://"):
        provider = SQLiteProvider(url.removeprefix("sqlite://"))
        return provider, lambda: SQLiteReadWriteLockAdapter(provider=provider)
    if url.startswith("redis"):
        provider = RedisProvider(url)
        return provider, lambda: RedisReadWriteLockAdapter(provider=provider, prefix=where)
    provider = PostgresProvider(url)
    return provider, lambda: PostgresReadWriteLockAdapter(provider=provider, table_name=f"{where}_rwlocks")


def note(log: str, line: str) -> None:
    with open(log, "a") as f:
        f.write(line + "\n")


async def main(url: str, where: str, name: str, log: str, rounds: str) -> None:
    provider, adapter = store(url, where)
    async with provider, adapter() as backend:
        lock = ReadWriteLock(name, backend=backend, lease_duration=timedelta(seconds=10), retry_interval=0.02)
        for i in range(int(rounds)):
            if (i + int(rounds)) % 2 == 1:
                async with lock.read as held:
                    note(log, f"read {held.generation} {who}")
                    await asyncio.sleep(0.05)
                    note(log, f"done-read {held.generation}")
            else:
                async with lock.write as held:
                    note(log, f"write {held.fencing_token} {who}")
                    await asyncio.sleep(0.03)
                    note(log, f"done-write {held.fencing_token}")
            await asyncio.sleep(0.01)


asyncio.run(main(*sys.argv[1:]))
