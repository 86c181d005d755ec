"""The stores the behavioural tests run on: memory, a fresh SQLite file, the machine's Redis
(`TENURE_REDIS_URL`, default `redis://127.0.0.1:6379`) under a fresh key prefix, its
PostgreSQL (`TENURE_POSTGRES_URL`, default `postgresql://postgres@127.0.0.1:5432/test`) on fresh
tables, and an etcd member the session starts (Debian's `etcd`) under a fresh key prefix."""

import asyncio
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid

import pytest

from tenure import EtcdProvider, MemoryProvider, PostgresProvider, RedisProvider, SQLiteProvider

# The suite runs as a test environment: a memory or SQLite backend under a Coordination that
# requires cluster scope is not reported (test_scope.py sets the variable itself).
os.environ["GREL_ENVIRONMENT"] = "test"

# Tests marked `py314` (a `pytestmark` at the top of their module: what Python 3.12-3.14 changed
# under them) run a second time on Python 3.14 beside grelmicro (`pytest -m py314`).
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "py314: exercises what Python 3.12-3.14 changed (eager first steps, loop policy, fork)")


REDIS_URL = os.environ.get("TENURE_REDIS_URL", "redis://127.0.0.1:6379")
POSTGRES_URL = os.environ.get("TENURE_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def postgres_url(stem: str) -> str:
    """The machine's PostgreSQL, on the tables `<stem>_locks`, `<stem>_leaders`, `<stem>_schedules`."""
    return (
        f"{POSTGRES_URL}?lock_table={stem}_locks&leader_table={stem}_leaders&schedule_table={stem}_schedules"
        f"&rwlock_table={stem}_rwlocks&semaphore_table={stem}_semaphores"
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def etcd_url():
    """The client URL of a one-member etcd cluster started for the session."""
    client, peer = _free_port(), _free_port()
    data = tempfile.mkdtemp(prefix="tenure-pytest-etcd-")
    member = subprocess.Popen(
        ["etcd", "--name", "t", "--data-dir", f"{data}/data",
         "--listen-client-urls", f"http://127.0.0.1:{client}", "--advertise-client-urls", f"http://127.0.0.1:{client}",
         "--listen-peer-urls", f"http://127.0.0.1:{peer}", "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
         "--initial-cluster", f"t=http://127.0.0.1:{peer}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", client), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    try:
        yield f"etcd://127.0.0.1:{client}"
    finally:
        member.kill()
        member.wait()
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture(params=["memory", "sqlite", "redis", "postgres", "etcd"])
def store(request, tmp_path):
    """A function that makes a fresh, empty provider of one kind: `async with store() as p:`.
    Providers it makes for one test share one store (one file, one prefix)."""
    kind = request.param
    prefix = f"pytest-{uuid.uuid4().hex}:"
    stem = f"pytest_{uuid.uuid4().hex[:16]}"

    def make():
        if kind == "memory":
            return MemoryProvider()
        if kind == "sqlite":
            return SQLiteProvider(str(tmp_path / "locks.db"))
        if kind == "postgres":
            return PostgresProvider(postgres_url(stem))
        if kind == "etcd":
            return EtcdProvider(f"{request.getfixturevalue('etcd_url')}/?prefix={prefix}")
        return RedisProvider(f"{REDIS_URL}/?prefix={prefix}")

    make.kind = kind
    return make


def memory_election(name):
    """An election on a fresh memory store that elects within a tenth of a second."""
    from tenure import LeaderElection

    return LeaderElection(
        name,
        backend=MemoryProvider().leaderelection(),
        env_load=False,
        lease_duration=5,
        renew_deadline=4,
        retry_interval=0.1,
        backend_timeout=1,
    )


def follow(store, fences, start=1):
    """Whether `fences` are what successive acquisitions get: `start, start + 1, …` on the stores
    of grelmicro's layout (per name, consecutive); on etcd, whose fences are the holders' create
    revisions (issue 18: comparable with `etcdctl lock`'s), strictly increasing from `start` on."""
    if store.kind != "etcd":
        return fences == list(range(start, start + len(fences)))
    return fences[0] >= start and all(b > a for a, b in zip(fences, fences[1:]))


def outlast(store, lease):
    """Seconds to wait for a lease of `lease` seconds to have ended in the store: etcd keeps
    leases in whole seconds and never below its minimum TTL (2 s for Debian's defaults), so the
    store holds longer than asked (never shorter)."""
    return max(lease, 2.0) + 1.0 if store.kind == "etcd" else lease


async def holders_at_once(pool, tasks, hold=0.03):
    """`tasks` tasks each take a permit of `pool` for `hold` seconds: the most inside at once, and
    the fencing tokens they held."""
    inside, most, fences = 0, 0, []

    async def hold_one():
        nonlocal inside, most
        async with pool as permit:
            inside += 1
            most = max(most, inside)
            fences.append(permit.fencing_token)
            await asyncio.sleep(hold)
            inside -= 1

    await asyncio.gather(*(hold_one() for _ in range(tasks)))
    return most, fences
