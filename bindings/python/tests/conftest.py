"""The stores the behavioural tests run on: memory, a fresh SQLite file, the machine's Redis
(`TENURE_REDIS_URL`, default `redis://127.0.0.1:6379`) under a fresh key prefix, and its
PostgreSQL (`TENURE_POSTGRES_URL`, default `postgresql://postgres@127.0.0.1:5432/test`) on fresh
tables."""

import os
import uuid

import pytest

from tenure import MemoryProvider, PostgresProvider, RedisProvider, SQLiteProvider

# The suite runs as a test environment: a memory or SQLite backend under a Coordination that
# requires cluster scope is not reported (test_scope.py sets the variable itself).
os.environ["GREL_ENVIRONMENT"] = "test"

REDIS_URL = os.environ.get("TENURE_REDIS_URL", "redis://127.0.0.1:6379")
POSTGRES_URL = os.environ.get("TENURE_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def postgres_url(stem: str) -> str:
    """The machine's PostgreSQL, on the tables `<stem>_locks`, `<stem>_leaders`, `<stem>_schedules`."""
    return f"{POSTGRES_URL}?lock_table={stem}_locks&leader_table={stem}_leaders&schedule_table={stem}_schedules"


@pytest.fixture(params=["memory", "sqlite", "redis", "postgres"])
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
        return RedisProvider(f"{REDIS_URL}/?prefix={prefix}")

    return make
