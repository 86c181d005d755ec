"""`TaskLock` on memory, SQLite and Redis (the `store` fixture): one run per `min_hold_duration`
window across workers (spec §1.5, §3.4, §8.5)."""

import asyncio

import pytest
from conftest import follow, outlast

from tenure import LockNotOwnedError, LockReentrantError, MemoryProvider, SettingsValidationError, TaskLock, WouldBlockError


def run(coro):
    return asyncio.run(coro)


def task_lock(provider, **kwargs):
    return TaskLock("nightly", backend=provider.lock(), env_load=False, **kwargs)


def test_a_second_worker_is_refused_within_the_min_hold_and_runs_after_it(store):
    async def main():
        async with store() as provider:
            first, second = task_lock(provider, min_hold_duration=0.2), task_lock(provider, min_hold_duration=0.2)
            async with first:
                ran = first.fencing_token
                assert follow(store, [ran])
            # The run is over but the window is not: another worker is turned away.
            with pytest.raises(WouldBlockError):
                async with second:
                    pass
            assert await second.locked()
            await asyncio.sleep(outlast(store, 0.2) + 0.1)
            async with second:
                assert follow(store, [ran, second.fencing_token], start=ran)

    run(main())


def test_an_instance_cannot_be_entered_twice(store):
    async def main():
        async with store() as provider:
            lock = task_lock(provider, min_hold_duration=0.05)
            async with lock:
                with pytest.raises(LockReentrantError):
                    async with lock:
                        pass

    run(main())


def test_extend_renews_the_run_and_needs_one(store):
    async def main():
        async with store() as provider:
            lock = task_lock(provider, min_hold_duration=0.05, lease_duration=1)
            with pytest.raises(LockNotOwnedError):
                await lock.extend()
            async with lock:
                await lock.extend()
                await lock.refresh()

    run(main())


def test_the_min_hold_may_not_exceed_the_lease():
    with pytest.raises(SettingsValidationError):
        task_lock(MemoryProvider(), min_hold_duration=10, lease_duration=5)


def test_the_environment_configures_a_task_lock(monkeypatch):
    monkeypatch.setenv("GREL_TASKLOCK_NIGHTLY_MIN_HOLD_DURATION", "3")
    lock = TaskLock("nightly", backend=MemoryProvider().lock())
    assert lock.config.min_hold_duration.total_seconds() == 3.0


def test_the_same_instance_is_refused_until_its_own_hold_ends(store):
    async def main():
        async with store() as provider:
            lock = task_lock(provider, min_hold_duration=0.2, lease_duration=10)
            async with lock:
                first = lock.fencing_token
            with pytest.raises(WouldBlockError):  # its own run's hold still lasts
                async with lock:
                    pass
            await asyncio.sleep(outlast(store, 0.2) + 0.1)
            async with lock:
                assert lock.fencing_token > first

    run(main())
