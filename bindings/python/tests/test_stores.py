"""`Lock` on SQLite, Redis and PostgreSQL: providers open and close, and several processes contend through
one store with strictly increasing fencing tokens and no overlapping critical sections."""

import asyncio
import os
import subprocess
import sys
import time
import uuid

import pytest

from conftest import postgres_url
from tenure import (
    Lock,
    OutOfContextError,
    PostgresProvider,
    RedisProvider,
    SettingsValidationError,
    SQLiteProvider,
)

REDIS_URL = os.environ.get("TENURE_REDIS_URL", "redis://127.0.0.1:6379")

WORKER = r"""
import asyncio, sys
from tenure import Lock, PostgresProvider, RedisProvider, SQLiteProvider

async def main(kind, where, log, rounds):
    kinds = {"sqlite": SQLiteProvider, "redis": RedisProvider, "postgres": PostgresProvider}
    provider = kinds[kind](where)
    async with provider:
        lock = Lock("shared", backend=provider.lock(), retry_interval=0.01, env_load=False)
        for _ in range(rounds):
            async with lock as handle:
                with open(log, "a") as f:
                    f.write(f"start {handle.fencing_token}\n")
                await asyncio.sleep(0.01)
                with open(log, "a") as f:
                    f.write(f"end {handle.fencing_token}\n")

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
"""


def contend(kind, where, tmp_path, processes=3, rounds=5):
    log = tmp_path / "sections.log"
    workers = [
        subprocess.Popen([sys.executable, "-c", WORKER, kind, where, str(log), str(rounds)])
        for _ in range(processes)
    ]
    for worker in workers:
        assert worker.wait(timeout=60) == 0
    words = log.read_text().split()
    pairs = list(zip(words[0::2], words[1::2]))  # ("start" | "end", fence)
    assert len(pairs) == 2 * processes * rounds
    last = 0
    for (start, fence), (end, same) in zip(pairs[0::2], pairs[1::2]):
        assert (start, end) == ("start", "end"), "a section started inside another"
        assert fence == same
        assert int(fence) > last, "fencing tokens must strictly increase"
        last = int(fence)


def test_processes_contend_through_one_sqlite_file(tmp_path):
    contend("sqlite", str(tmp_path / "locks.db"), tmp_path)


def test_processes_contend_through_one_redis(tmp_path):
    prefix = f"tenure-py-{uuid.uuid4().hex}:"
    contend("redis", f"{REDIS_URL}/?prefix={prefix}", tmp_path)


def test_processes_contend_through_one_postgres_database(tmp_path):
    contend("postgres", postgres_url(f"py_{uuid.uuid4().hex[:16]}"), tmp_path)


def test_a_provider_must_be_open_to_be_used(tmp_path):
    async def main():
        provider = SQLiteProvider(str(tmp_path / "x.db"))
        lock = Lock("cart", backend=provider.lock(), env_load=False)
        with pytest.raises(OutOfContextError) as caught:
            await lock.acquire()
        assert "SQLiteProvider" in str(caught.value)
        async with provider:
            handle = await lock.acquire()
            assert handle.fencing_token == 1
            await lock.release()
        with pytest.raises(OutOfContextError):
            await lock.acquire()

    asyncio.run(main())


def test_redis_settings_come_from_arguments_or_the_environment(monkeypatch):
    assert RedisProvider(host="h", port=7000, db=2, password="p@ss").url == "redis://:p%40ss@h:7000/2"
    monkeypatch.setenv("REDIS_URL", "redis://cache:6379/1")
    assert RedisProvider().url == "redis://cache:6379/1"
    monkeypatch.setenv("REDIS_HOST", "cache")
    with pytest.raises(ValueError, match="not both"):
        RedisProvider()


def test_redis_sentinel_urls_and_passwords_as_grelmicro_reads_them(monkeypatch):
    # grelmicro's Sentinel URL, its `sentinel_password=` for sentinels run with requirepass.
    provider = RedisProvider("redis+sentinel://:m@s1:26379,s2:26379/mymaster/0", sentinel_password="s p")
    assert provider.url == "redis+sentinel://:m@s1:26379,s2:26379/mymaster/0?sentinel_password=s%20p"
    # A Kubernetes split: the URL in a ConfigMap, the password in a Secret; both joined.
    monkeypatch.setenv("REDIS_URL", "valkey+sentinel://s1,s2/mymaster")
    monkeypatch.setenv("REDIS_PASSWORD", "pw")
    monkeypatch.setenv("REDIS_SENTINEL_PASSWORD", "sp")
    assert RedisProvider().url == "valkey+sentinel://:pw@s1,s2/mymaster?sentinel_password=sp"
    monkeypatch.setenv("REDIS_URL", "redis://:other@cache:6379/1")
    with pytest.raises(SettingsValidationError, match="REDIS_PASSWORD is ambiguous") as raised:
        RedisProvider()
    assert "pw" not in str(raised.value) and "other" not in str(raised.value)


def test_postgres_settings_come_from_arguments_or_the_environment(monkeypatch):
    provider = PostgresProvider(host="db", port=6543, database="app", user="svc", password="p@ss", command_timeout=2)
    assert provider.url == "postgresql://svc:p%40ss@db:6543/app?command_timeout=2"
    monkeypatch.setenv("POSTGRES_HOST", "db")
    monkeypatch.setenv("POSTGRES_DB", "main")
    monkeypatch.setenv("POSTGRES_USER", "svc")
    monkeypatch.setenv("POSTGRES_COMMAND_TIMEOUT", "1.5")
    assert PostgresProvider().url == "postgresql://svc@db:5432/main?command_timeout=1.5"
    monkeypatch.setenv("POSTGRES_URL", "postgresql://db/x")
    with pytest.raises(SettingsValidationError, match="not both"):
        PostgresProvider()
    monkeypatch.delenv("POSTGRES_HOST")
    monkeypatch.setenv("POSTGRES_COMMAND_TIMEOUT", "soon")
    with pytest.raises(SettingsValidationError, match="COMMAND_TIMEOUT"):
        PostgresProvider()


@pytest.mark.parametrize(
    "url",
    ["redis://:hunter2@127.0.0.1:1/0?connect_timeout=0.5", "postgresql://u:hunter2@127.0.0.1:1/db?connect_timeout=0.5"],
)
def test_an_unreachable_store_fails_fast_without_the_password(url):
    async def main():
        started = time.monotonic()
        provider = RedisProvider(url) if url.startswith("redis") else PostgresProvider(url)
        with pytest.raises(ConnectionError) as caught:
            async with provider:
                pass
        assert time.monotonic() - started < 5
        assert "hunter2" not in str(caught.value)

    asyncio.run(main())


def test_a_bad_postgres_url_is_a_settings_error():
    async def main():
        with pytest.raises(SettingsValidationError, match="sslmode"):
            async with PostgresProvider("postgresql://h/db?sslmode=sometimes"):
                pass

    asyncio.run(main())


def test_a_file_another_sqlite_library_has_open_in_this_process_is_refused(tmp_path):
    import sqlite3

    path = str(tmp_path / "shared.db")
    other = sqlite3.connect(path)
    other.execute("CREATE TABLE app (x)")

    async def main():
        with pytest.raises(SettingsValidationError, match="another SQLite library"):
            async with SQLiteProvider(path):
                pass
        other.close()
        async with SQLiteProvider(path) as provider:  # closed: fine, and reopening our own is fine
            async with SQLiteProvider(path):
                assert not await Lock("x", backend=provider.lock(), env_load=False).locked()

    asyncio.run(main())


def test_an_unknown_scheme_is_refused_naming_the_known_ones():
    async def main():
        with pytest.raises(SettingsValidationError) as caught:
            async with RedisProvider("foo://u:hunter2@x"):
                pass
        message = str(caught.value)
        assert '"foo"' in message and "redis:" in message and "postgresql:" in message, message
        assert "hunter2" not in message

    asyncio.run(main())


def test_a_bad_variable_is_a_settings_error_naming_it(monkeypatch):
    monkeypatch.setenv("REDIS_HOST", "cache")
    monkeypatch.setenv("REDIS_PORT", "abc")
    with pytest.raises(SettingsValidationError, match="REDIS_PORT"):
        RedisProvider()
    monkeypatch.setenv("REDIS_PORT", "6380")
    monkeypatch.setenv("REDIS_DB", "-1")
    with pytest.raises(SettingsValidationError, match="REDIS_DB"):
        RedisProvider()
    with pytest.raises(SettingsValidationError, match="port"):
        RedisProvider(host="h", port=70000)
    with pytest.raises(SettingsValidationError, match="not both"):
        RedisProvider("redis://h", host="h")


def test_sqlite_comes_from_a_path_or_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("SQLITE_PATH", raising=False)
    with pytest.raises(SettingsValidationError, match="SQLITE_PATH"):
        SQLiteProvider()
    monkeypatch.setenv("SQLITE_PATH", str(tmp_path / "env.db"))
    assert SQLiteProvider().path == str(tmp_path / "env.db")
    monkeypatch.setenv("SQLITE_SYNCHRONOUS", "sometimes")
    with pytest.raises(SettingsValidationError, match="SQLITE_SYNCHRONOUS"):
        SQLiteProvider()
    monkeypatch.setenv("SQLITE_SYNCHRONOUS", "normal")
    assert SQLiteProvider(tmp_path / "a b.db").url == "sqlite://" + str(tmp_path / "a%20b.db") + "?synchronous=normal"
