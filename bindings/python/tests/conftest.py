"""The stores the behavioural tests run on: memory, a fresh SQLite file, and the machine's Redis
(`TENURE_REDIS_URL`, default `redis://127.0.0.1:6379`) under a fresh key prefix."""

import os
import uuid

import pytest

from tenure import MemoryProvider, RedisProvider, SQLiteProvider

REDIS_URL = os.environ.get("TENURE_REDIS_URL", "redis://127.0.0.1:6379")


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store(request, tmp_path):
    """A function that makes a fresh, empty provider of one kind: `async with store() as p:`.
    Providers it makes for one test share one store (one file, one prefix)."""
    kind = request.param
    prefix = f"pytest-{uuid.uuid4().hex}:"

    def make():
        if kind == "memory":
            return MemoryProvider()
        if kind == "sqlite":
            return SQLiteProvider(str(tmp_path / "locks.db"))
        return RedisProvider(f"{REDIS_URL}/?prefix={prefix}")

    return make
