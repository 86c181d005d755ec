"""`from_thread` adapters: blocking calls from plain threads, each thread its own holder, and a
call on an event loop's thread refused (spec §1.4)."""

import asyncio
import threading
import time

import pytest

from tenure import Lock, LockNotOwnedError, LockReentrantError, MemoryProvider, TaskLock, WouldBlockError
from tenure.errors import EventLoopDeadlockError


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
        handle = await asyncio.to_thread(lambda: lock.from_thread.acquire_nowait())
        assert handle.fencing_token == 1
        await asyncio.to_thread(lock.from_thread.release)

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
