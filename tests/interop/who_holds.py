"""Who holds what, as an operator sees it (`tenure locks`), on one Redis or PostgreSQL store
shared by three kinds of process: a holder through the Python package (with a purpose), a Node
waiter behind it in the store's line (with a purpose), and a grelmicro 0.44 holder of another name
(which tells the store nothing about itself). Checks the listing names each with what it told the
store, never a token, and prints the table (issue 43's note shows it).

Usage: python who_holds.py redis|postgres URL SERVER WHERE TENURE NODE_PATH — URL Tenure's, SERVER
and WHERE grelmicro's (as store.sh has them); an interpreter with both grelmicro and the Python
package
"""

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import tenure
from grelmicro.coordination.lock import Lock as GrelmicroLock
from grelmicro.coordination.postgres import PostgresLockAdapter
from grelmicro.coordination.redis import RedisLockAdapter
from grelmicro.providers.postgres import PostgresProvider
from grelmicro.providers.redis import RedisProvider


def listed(cli: str, url: str, *args: str) -> str:
    return subprocess.run([cli, "--backend", url, "locks", *args], check=True, capture_output=True, text=True).stdout


async def main(kind: str, url: str, server: str, where: str, cli: str, node_path: str) -> None:
    provider = tenure.RedisProvider(url) if kind == "redis" else tenure.PostgresProvider(url)
    grelmicro = RedisProvider(server) if kind == "redis" else PostgresProvider(server)
    if kind == "redis":
        grelmicro_locks = RedisLockAdapter(provider=grelmicro, prefix=where)
    else:
        grelmicro_locks = PostgresLockAdapter(provider=grelmicro, table_name=f"{where}_locks")
    async with provider, grelmicro, grelmicro_locks as grelmicro_backend:
        report = tenure.Lock("report", backend=provider.lock(), worker="py-1", purpose="nightly export", env_load=False)
        billing = GrelmicroLock("billing", backend=grelmicro_backend, worker="grelmicro-1", lease_duration=timedelta(seconds=30))
        async with report as held, billing:
            env = dict(os.environ, NODE_PATH=node_path)
            here = Path(__file__).parent
            waiter = subprocess.Popen(
                ["node", str(here / "node_waiter.cjs"), url, "report", "weekly mail"], env=env, stdout=subprocess.PIPE, text=True
            )
            try:
                deadline = time.monotonic() + 30
                while True:
                    doc = json.loads(await asyncio.to_thread(listed, cli, url, "--json"))
                    locks = {lock["name"]: lock for lock in doc["locks"]}
                    line = locks.get("report", {}).get("line", [])
                    if line:
                        break
                    assert time.monotonic() < deadline, f"the Node waiter never showed in the line: {doc}"
                    await asyncio.sleep(0.05)
                table = await asyncio.to_thread(listed, cli, url)
                holder = locks["report"]["holders"][0]
                assert (holder["worker"], holder["purpose"], holder["pid"]) == ("py-1", "nightly export", os.getpid()), holder
                assert holder["host"] == socket.gethostname() and holder["program"].startswith("python"), holder
                assert locks["report"]["fencing_token"] == held.fencing_token, locks["report"]
                (waiting,) = line
                assert (waiting["purpose"], waiting["pid"], waiting["program"]) == ("weekly mail", waiter.pid, "node node_waiter.cjs"), waiting
                assert waiting["waiting_for_s"] >= 0, waiting
                grelmicro_holder = locks["billing"]["holders"][0]
                assert grelmicro_holder["worker"] == "grelmicro-1" and "pid" not in grelmicro_holder, grelmicro_holder
                shown = json.dumps(doc) + table
                assert ":task:" not in shown and ":thread:" not in shown, "a token was shown"
                for row in table.splitlines():
                    print(f"{kind}: {row}")
            except BaseException:
                waiter.kill()
                raise
        out, _ = await asyncio.to_thread(waiter.communicate, timeout=30)
        assert waiter.returncode == 0 and out.startswith("acquired "), (waiter.returncode, out)
        print(f"{kind}: the Node waiter took the lock once the Python holder released it ({out.strip()})")


asyncio.run(main(*sys.argv[1:]))
