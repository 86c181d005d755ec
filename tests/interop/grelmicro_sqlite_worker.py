"""A grelmicro 0.44 worker for the SQLite interop test: takes the lock NAME on the SQLite file PATH
ROUNDS times with grelmicro's own Lock and SQLite adapter, and around each critical section
appends `start <fence> grelmicro` and `end <fence>` to LOG (the same lines `tenure lock` workers
write). Usage: grelmicro_sqlite_worker.py PATH NAME LOG ROUNDS"""

import asyncio
import sys
from datetime import timedelta

from grelmicro.coordination.lock import Lock
from grelmicro.coordination.sqlite import SQLiteLockAdapter
from grelmicro.providers.sqlite import SQLiteProvider


async def main(path: str, name: str, log: str, rounds: int) -> None:
    async with SQLiteProvider(path) as provider, SQLiteLockAdapter(provider=provider) as backend:
        lock = Lock(name, backend=backend, lease_duration=timedelta(seconds=10), retry_interval=0.02)
        for _ in range(rounds):
            async with lock as held:
                with open(log, "a") as f:
                    f.write(f"start {held.fencing_token} grelmicro\n")
                await asyncio.sleep(0.03)
                with open(log, "a") as f:
                    f.write(f"end {held.fencing_token}\n")
            await asyncio.sleep(0.01)


asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
