"""grelmicro 0.44's SQLite leader-election adapter, for the interop test: `take PATH NAME HOLDER
SECONDS` makes HOLDER the leader of NAME for SECONDS and prints the record's transitions;
`get PATH NAME` prints the live holder (or `none`) as grelmicro reads it."""

import asyncio
import sys
from datetime import timedelta

from grelmicro.coordination.sqlite import SQLiteLeaderElectionAdapter
from grelmicro.providers.sqlite import SQLiteProvider


async def main(command: str, path: str, name: str, *rest: str) -> None:
    async with SQLiteProvider(path) as provider, SQLiteLeaderElectionAdapter(provider=provider) as backend:
        if command == "take":
            holder, seconds = rest
            record = await backend.acquire_or_renew(
                name=name, token=holder, duration=timedelta(seconds=float(seconds)), metadata={"pod": "py"}
            )
            assert record.holder == holder, record
            print(record.transitions)
        else:
            record = await backend.get(name=name)
            print(record.holder if record else "none")


asyncio.run(main(*sys.argv[1:]))
