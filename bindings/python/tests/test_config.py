"""Config objects, `from_config` and `reconfigure` (spec §1.10, §2.1 as amended by 0.44)."""

import asyncio
from datetime import timedelta

import pytest

from tenure import (
    LeaderElection,
    LeaderElectionConfig,
    Lock,
    LockConfig,
    MemoryProvider,
    SettingsValidationError,
    TaskLock,
    TaskLockConfig,
)


def test_configs_hold_timedeltas_and_are_validated_by_the_core():
    config = LockConfig(worker="w1", lease_duration=30, retry_interval=0.2)
    assert config.lease_duration == timedelta(seconds=30)
    with pytest.raises(SettingsValidationError):
        LockConfig(worker="w1", retry_jitter=1.5)
    with pytest.raises(SettingsValidationError):
        TaskLockConfig(worker="w1", min_hold_duration=10, lease_duration=5)
    with pytest.raises(SettingsValidationError):
        LeaderElectionConfig(worker="w1", lease_duration=5, renew_deadline=6)
    with pytest.raises(AttributeError):
        config.worker = "w2"  # frozen


def test_from_config_keeps_the_object_and_reads_no_environment(monkeypatch):
    monkeypatch.setenv("GREL_LOCK_LEASE_DURATION", "99")
    config = LockConfig(worker="w1", lease_duration=30)
    lock = Lock.from_config("cart", config, backend=MemoryProvider().lock())
    assert lock.config is config
    assert Lock("cart", backend=MemoryProvider().lock()).config.lease_duration == timedelta(seconds=99)


def test_reconfigure_applies_from_the_next_call_and_guards_the_worker():
    async def main():
        lock = Lock("cart", backend=MemoryProvider().lock(), worker="w1", env_load=False, lease_duration=0.2)
        await lock.acquire()
        await lock.reconfigure(LockConfig(worker="w1", lease_duration=30))
        assert lock.config.lease_duration == timedelta(seconds=30)
        await lock.extend()  # renewed for 30 s now: it outlives the old 0.2 s lease
        await asyncio.sleep(0.3)
        assert await lock.owned()
        await lock.release()
        with pytest.raises(SettingsValidationError, match="worker is immutable"):
            await lock.reconfigure(LockConfig(worker="w2"))
        with pytest.raises(TypeError, match="reconfigure requires LockConfig, got TaskLockConfig"):
            await lock.reconfigure(TaskLockConfig(worker="w1"))

    asyncio.run(main())


def test_task_locks_and_elections_take_configs_too():
    async def main():
        task_lock = TaskLock.from_config("job", TaskLockConfig(worker="w1", min_hold_duration=2), backend=MemoryProvider().lock())
        assert task_lock.config.min_hold_duration == timedelta(seconds=2)
        election = LeaderElection.from_config(
            "svc", LeaderElectionConfig(worker="w1"), backend=MemoryProvider().leaderelection(), metadata={"pod": "p"}
        )
        run = asyncio.create_task(election())
        await asyncio.wait_for(election.wait_for_leader(), 5)
        await election.reconfigure(LeaderElectionConfig(worker="w1", lease_duration=20, renew_deadline=15))
        assert election.config.renew_deadline == timedelta(seconds=15)
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)

    asyncio.run(main())
