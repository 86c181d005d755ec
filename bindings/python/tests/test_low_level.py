"""grelmicro's low-level calls (`do_*`, API reference "should not be called directly"): their
return values and errors, on a built-in store and on a backend a user wrote."""

import asyncio
import threading
from datetime import timedelta

import pytest
from dict_backend import DictBackend

from tenure import (
    Lock,
    LockAcquireError,
    LockHandle,
    LockNotOwnedError,
    LockOwnedCheckError,
    LockReentrantError,
    LockReleaseError,
    LockTimeoutError,
    MemoryLockAdapter,
    SettingsValidationError,
    TaskLock,
    WouldBlockError,
)

# Runs again on Python 3.14 beside grelmicro (`pytest -m py314`):
# backends written in Python.
pytestmark = pytest.mark.py314


def run(coro):
    return asyncio.run(coro)


@pytest.mark.parametrize("make", [MemoryLockAdapter, DictBackend])
def test_lock_do_calls_answer_as_the_reference_says(make):
    async def main():
        backend = make()
        lock = Lock("cart", backend=backend)
        assert await lock.do_acquire("t1", duration=timedelta(seconds=5)) == 1
        assert await lock.do_acquire("t1", duration=5) == 1  # a renewal keeps the fence
        assert await lock.do_acquire("t2", duration=5) is None
        assert await lock.do_owned("t1") is True and await lock.do_owned("t2") is False
        assert await lock.locked()
        assert await lock.do_release("t2") is False
        assert await lock.do_release("t1") is True
        assert await lock.do_acquire("t2", duration=5) == 2
        with pytest.raises(SettingsValidationError):
            await lock.do_acquire("t3", duration=0)

    run(main())


class Broken(DictBackend):
    async def acquire(self, **call):
        raise ConnectionResetError("gone")

    release = owned = acquire


def test_lock_do_calls_wrap_a_backend_failure_with_the_cause():
    async def main():
        lock = Lock("cart", backend=Broken())
        for call, error in (
            (lambda: lock.do_acquire("t", duration=1), LockAcquireError),
            (lambda: lock.do_release("t"), LockReleaseError),
            (lambda: lock.do_owned("t"), LockOwnedCheckError),
        ):
            with pytest.raises(error) as caught:
                await call()
            assert isinstance(caught.value.__cause__, ConnectionResetError)
            assert caught.value.name == "cart"

    run(main())


def test_do_thread_calls_drive_the_threads_own_holder():
    async def main():
        lock = Lock("cart", backend=MemoryLockAdapter(), retry_interval=0.01)
        results = {}

        def thread_body(started, go_on):
            results["id"] = threading.get_ident()
            started.set()
            go_on.wait(5)
            results["owned"] = lock.from_thread.owned()
            lock.from_thread.release()  # releases what the loop acquired for this thread

        started, go_on = threading.Event(), threading.Event()
        worker = asyncio.create_task(asyncio.to_thread(thread_body, started, go_on))
        await asyncio.to_thread(started.wait, 5)
        thread_id = results["id"]
        handle = await lock.do_thread_acquire(thread_id, timeout=1)
        assert isinstance(handle, LockHandle) and handle.fencing_token == 1 and ":thread:" in handle.token
        with pytest.raises(LockReentrantError):
            await lock.do_thread_acquire_nowait(thread_id)
        assert (await lock.do_thread_extend(thread_id)).fencing_token == 1
        with pytest.raises(WouldBlockError):
            await lock.do_thread_acquire_nowait(thread_id + 1)
        with pytest.raises(LockTimeoutError):
            await lock.do_thread_acquire(thread_id + 1, timeout=0.05)
        go_on.set()
        await worker
        assert results["owned"] is True and not await lock.locked()
        with pytest.raises(LockNotOwnedError):
            await lock.do_thread_release(thread_id)
        with pytest.raises(LockNotOwnedError):
            await lock.do_thread_extend(thread_id)

    run(main())


@pytest.mark.parametrize("make", [MemoryLockAdapter, DictBackend])
def test_task_lock_do_calls_answer_as_the_reference_says(make):
    async def main():
        task_lock = TaskLock("job", backend=make(), min_hold_duration=0.2, lease_duration=5)
        assert await task_lock.do_acquire("t1", duration=5) is True
        assert await task_lock.do_acquire("t2", duration=5) is False
        assert await task_lock.do_reacquire("t1", 0.05) is True  # shortened
        await asyncio.sleep(0.3)
        assert not await task_lock.locked()
        assert await task_lock.do_release("t1") is False
        assert await task_lock.do_acquire("t2", duration=5) is True
        assert await task_lock.do_release("t2") is True

    run(main())


def test_task_lock_do_exit_and_do_thread_calls_end_and_begin_the_instances_run():
    async def main():
        backend = MemoryLockAdapter()
        task_lock = TaskLock("job", backend=backend, min_hold_duration=0.2, lease_duration=5)
        other = TaskLock("job", backend=backend, min_hold_duration=0.2, lease_duration=5)
        await task_lock.do_thread_enter()
        with pytest.raises(LockReentrantError):
            await task_lock.do_thread_enter()
        with pytest.raises(WouldBlockError):
            await other.do_thread_enter()
        await task_lock.do_thread_exit()  # kept for the minimum hold
        assert await task_lock.locked()
        with pytest.raises(LockNotOwnedError):
            await task_lock.do_thread_exit()
        await asyncio.sleep(0.25)
        await task_lock.__aenter__()
        with pytest.raises(SettingsValidationError, match="min_hold_duration"):
            await task_lock.do_exit("token", min_hold_duration=timedelta(seconds=3))
        await task_lock.do_exit("token", min_hold_duration=timedelta(seconds=0.2))
        assert await task_lock.locked()
        with pytest.raises(LockNotOwnedError):
            await task_lock.do_exit("token", min_hold_duration=0.2)

    run(main())


def test_task_lock_do_calls_wrap_a_backend_failure_as_the_reference_says():
    async def main():
        task_lock = TaskLock("job", backend=Broken())
        with pytest.raises(LockAcquireError):
            await task_lock.do_acquire("t", duration=1)
        with pytest.raises(LockReleaseError) as caught:
            await task_lock.do_reacquire("t", 1)  # a re-acquire failure is a release error
        assert isinstance(caught.value.__cause__, ConnectionResetError)
        with pytest.raises(LockReleaseError):
            await task_lock.do_release("t")

    run(main())
