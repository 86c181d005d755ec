"""`from_thread` adapters: blocking calls from plain threads, each thread its own holder, and a
call on an event loop's thread refused (spec §1.4)."""

import asyncio
import re
import subprocess
import sys
import threading
import time

import pytest

from tenure import Lock, LockNotOwnedError, LockReentrantError, MemoryProvider, SQLiteProvider, TaskLock, WouldBlockError
from tenure.errors import EventLoopDeadlockError

# Runs again on Python 3.14 beside grelmicro (`pytest -m py314`):
# from_thread and the event loop, whose policy 3.14 changed.
pytestmark = pytest.mark.py314


def test_threads_take_turns_and_fences_climb():
    lock = Lock("cart", backend=MemoryProvider().lock(), retry_interval=60, env_load=False)
    fences, inside, overlaps = [], [], []

    def worker():
        for _ in range(20):
            with lock.from_thread as handle:
                if inside:
                    overlaps.append(handle.fencing_token)
                inside.append(1)
                fences.append(handle.fencing_token)
                time.sleep(0.001)
                inside.pop()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not overlaps
    assert sorted(fences) == list(range(1, 81))


def test_one_thread_cannot_nest_and_others_are_refused_or_wait():
    lock = Lock("cart", backend=MemoryProvider().lock(), env_load=False)
    adapter = lock.from_thread
    handle = adapter.acquire()
    assert adapter.owned() and adapter.locked()
    with pytest.raises(LockReentrantError):
        adapter.acquire()
    assert adapter.extend().fencing_token == handle.fencing_token
    outcome = []

    def other():
        try:
            adapter.acquire_nowait()
        except WouldBlockError:
            outcome.append("refused")
        with pytest.raises(LockNotOwnedError):
            adapter.release()
        outcome.append(adapter.acquire(timeout=5).fencing_token)
        adapter.release()

    t = threading.Thread(target=other)
    t.start()
    time.sleep(0.05)
    adapter.release()
    t.join(10)
    assert outcome == ["refused", 2]


def test_a_call_on_an_event_loops_thread_is_refused():
    async def main():
        lock = Lock("cart", backend=MemoryProvider().lock(), env_load=False)
        with pytest.raises(EventLoopDeadlockError):
            lock.from_thread.acquire()
        # From another thread while the loop runs, it works (and the loop keeps running).
        # The thread owns what it took, so acquire and release run on the same worker
        # (two to_thread calls may land on two executor threads).
        def cycle():
            handle = lock.from_thread.acquire_nowait()
            lock.from_thread.release()
            return handle.fencing_token

        assert await asyncio.to_thread(cycle) == 1
        assert not await lock.locked()

    asyncio.run(main())


def test_task_locks_from_threads():
    provider = MemoryProvider()
    first = TaskLock("job", backend=provider.lock(), min_hold_duration=10, env_load=False)
    second = TaskLock("job", backend=provider.lock(), min_hold_duration=10, env_load=False)
    with first.from_thread:
        assert first.from_thread.locked()
    with pytest.raises(WouldBlockError):
        with second.from_thread:
            pass


def _stored_token(path, key):
    """The token the SQLite file holds for `key`, read by another process (one SQLite library per
    process)."""
    script = "import sqlite3, sys; row = sqlite3.connect(sys.argv[1]).execute('SELECT token FROM locks WHERE name = ?', (sys.argv[2],)).fetchone(); print(row[0] if row else '')"
    return subprocess.run([sys.executable, "-c", script, str(path), key], capture_output=True, text=True, check=True).stdout.strip()


def test_threads_hold_with_thread_tokens_as_grelmicro_writes_them(tmp_path):
    path = tmp_path / "locks.db"
    provider = SQLiteProvider(str(path))
    asyncio.run(provider.open())
    try:
        lock = Lock("cart", backend=provider.lock(), env_load=False)
        handle = lock.from_thread.acquire()
        stored = _stored_token(path, "lock:cart")
        assert stored == handle.token
        assert re.fullmatch(r"[0-9a-f]+:thread:\d+\.[0-9a-f]+", stored), stored
        lock.from_thread.release()
        task = TaskLock("job", backend=provider.lock(), min_hold_duration=0.01, env_load=False)
        with task.from_thread:
            assert ":thread:" in _stored_token(path, "tasklock:job")
    finally:
        asyncio.run(provider.close())


def test_a_nested_acquire_on_one_thread_is_refused_not_a_deadlock():
    lock = Lock("cart", backend=MemoryProvider().lock(), env_load=False)
    outcome = []

    def nest():
        with lock.from_thread:
            try:
                lock.from_thread.acquire(timeout=30)
            except LockReentrantError as e:
                outcome.append(e.name)

    t = threading.Thread(target=nest)
    t.start()
    t.join(10)
    assert not t.is_alive(), "the nested acquire waited for its own thread"
    assert outcome == ["cart"]
    assert not lock.from_thread.locked()


def test_threads_use_a_store_whose_loop_has_closed(store):
    """A provider opened in `asyncio.run` serves plain threads afterwards: its connections, made
    on a loop that is gone, are made again on the package's runtime."""
    provider = store()
    asyncio.run(provider.open())
    try:
        lock = Lock("cart", backend=provider.lock(), backend_timeout=2, env_load=False)
        handle = lock.from_thread.acquire(timeout=5)
        assert lock.from_thread.owned() and lock.from_thread.locked()
        assert lock.from_thread.extend().fencing_token == handle.fencing_token
        lock.from_thread.release()
        assert not lock.from_thread.locked()
    finally:
        asyncio.run(provider.close())
