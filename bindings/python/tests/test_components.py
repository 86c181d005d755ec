"""Adapters, providers and `Coordination` opened the way grelmicro users open them: async context
managers (entered twice, exited without an enter, exited on an error), both factory names, the
schedule slot, providers written by users, and configs built without a worker."""

import asyncio
import re

import pytest
from dict_backend import DictBackend

from tenure import (
    Coordination,
    CoordinationBackendError,
    LeaderElection,
    LeaderElectionConfig,
    Lock,
    LockConfig,
    MemoryLeaderElectionAdapter,
    MemoryLockAdapter,
    MemoryProvider,
    MemoryScheduleAdapter,
    OutOfContextError,
    SettingsValidationError,
    SQLiteProvider,
    TaskLockConfig,
)

# Runs again on Python 3.14 beside grelmicro (`pytest -m py314`):
# adapters and providers written in Python.
pytestmark = pytest.mark.py314


def run(coro):
    return asyncio.run(coro)


def test_grelmicros_first_lines_run_unchanged():
    async def main():
        async with MemoryLockAdapter() as backend:
            async with Lock("cart", backend=backend) as handle:
                assert handle.fencing_token == 1
            assert backend._loop is asyncio.get_running_loop()
        async with MemoryLeaderElectionAdapter() as backend:
            election = LeaderElection("svc", backend=backend, worker="w1", retry_interval=0.01)
            running = asyncio.create_task(election())
            await asyncio.wait_for(election.wait_for_leader(), 5)
            record = await backend.get(name="leader:svc")
            assert record.holder == "w1"
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)

    run(main())


def test_adapters_enter_twice_exit_without_entering_and_pass_errors_on():
    async def main():
        backend = MemoryLockAdapter()
        await backend.__aexit__(None, None, None)  # never entered: nothing happens
        async with backend, backend:
            assert await Lock("cart", backend=backend).do_acquire("t", duration=5) == 1
        with pytest.raises(KeyError):
            async with backend:
                raise KeyError("the body's error goes on")
        # Leases and fencing counters outlive an exit: fences never restart at 1.
        assert await backend.locked(name="lock:cart")
        assert await backend.acquire(name="lock:cart", token="u", duration=5) is None
        assert await backend.release(name="lock:cart", token="t")
        assert await backend.acquire(name="lock:cart", token="u", duration=5) == 2

    run(main())


def test_providers_nest_and_the_outermost_exit_closes(tmp_path):
    async def main():
        provider = SQLiteProvider(str(tmp_path / "locks.db"))
        await provider.__aexit__(None, None, None)  # never entered: nothing happens
        async with provider as outer:
            assert outer is provider
            async with provider:
                pass
            async with Lock("cart", backend=provider.lock_backend()) as handle:  # still open
                assert handle.fencing_token == 1
            async with Coordination(provider, requires="host"):
                pass
            assert await provider.lock_backend().locked(name="lock:cart") is False  # still open
        with pytest.raises(OutOfContextError, match="not open"):
            await Lock("cart", backend=provider.lock_backend()).acquire()
        with pytest.raises(OutOfContextError):
            async with provider.lock_backend():  # a borrowed adapter checks its provider is open
                pass

    run(main())


def test_both_factory_names_hand_out_the_same_backends():
    provider = MemoryProvider()
    assert provider.lock() is provider.lock_backend()
    assert provider.leaderelection() is provider.leaderelection_backend()
    assert provider.schedule() is provider.schedule_backend()
    assert provider.lock_backend().scope == "process"


def test_the_schedule_slot_claims_on_every_store(store):
    async def main():
        async with store() as provider:
            schedule = provider.schedule_backend()
            assert await schedule.last_fired("nightly") is None
            assert await schedule.claim("nightly", 100.0) is True
            assert await schedule.claim("nightly", 100.0) is False
            assert await schedule.claim("nightly", 99.0) is False
            assert await schedule.claim("nightly", 100.25) is True
            assert await schedule.last_fired("nightly") == 100.25
            with pytest.raises(ValueError, match="finite"):
                await schedule.claim("nightly", float("nan"))
            coordination = Coordination(provider, requires="process")
            assert coordination.schedule_backend is schedule

    run(main())


class ReferenceProvider:
    """A provider written against the API reference's factory names."""

    def __init__(self):
        self.backend = DictBackend()
        self.entered = 0

    async def __aenter__(self):
        self.entered += 1
        return self

    async def __aexit__(self, *exc):
        self.entered -= 1

    def lock(self):
        return self.backend

    def leaderelection(self):
        raise NotImplementedError


class GrelmicroProvider:
    """A provider written against grelmicro 0.44's factory names."""

    def __init__(self):
        self.backend = DictBackend()

    def lock_backend(self):
        return self.backend

    def leaderelection_backend(self):
        return self.backend

    def schedule_backend(self):
        return MemoryScheduleAdapter()


def test_providers_written_by_users_with_either_factory_name():
    async def main():
        reference = ReferenceProvider()
        async with Coordination(reference) as coordination:
            assert reference.entered == 1
            assert coordination.lock_backend is reference.backend
            with pytest.raises(CoordinationBackendError, match="no leader election backend"):
                coordination.leaderelection_backend
            with pytest.raises(CoordinationBackendError, match="no schedule backend"):
                coordination.schedule_backend
            async with coordination.lock("cart") as handle:
                assert handle.fencing_token == 1
        assert reference.entered == 0
        grelmicro = GrelmicroProvider()
        coordination = Coordination(grelmicro)
        assert coordination.lock_backend is grelmicro.backend is coordination.election_backend
        assert isinstance(coordination.schedule_backend, MemoryScheduleAdapter)
        mixed = Coordination(lock=ReferenceProvider, leaderelection=grelmicro, schedule=MemoryScheduleAdapter)
        assert isinstance(mixed.lock_backend, DictBackend) and isinstance(mixed.schedule_backend, MemoryScheduleAdapter)

    run(main())


def test_coordination_refuses_what_serves_no_slot():
    with pytest.raises(TypeError, match="expects a provider or a coordination backend, got object"):
        Coordination(object())
    with pytest.raises(TypeError, match=re.escape("Coordination(lock=...) needs a LockBackend: MemoryScheduleAdapter has no acquire")):
        Coordination(lock=MemoryScheduleAdapter())
    class NeedsArgs(DictBackend):
        def __init__(self, table):
            super().__init__()

    with pytest.raises(TypeError, match="NeedsArgs needs constructor arguments, so it cannot be passed as a bare class"):
        Coordination(NeedsArgs)
    with pytest.raises(SettingsValidationError, match="requires= must be one of process, host, cluster"):
        Coordination(MemoryProvider(), requires="galaxy")
    assert Coordination(MemoryProvider(), requires="HOST").requires == "host"
    assert Coordination(MemoryLeaderElectionAdapter()).election_backend is not None
    with pytest.raises(CoordinationBackendError, match="no lock backend"):
        Coordination(MemoryLeaderElectionAdapter()).lock_backend


def test_a_failed_enter_exits_what_was_entered():
    class Failing(DictBackend):
        async def __aenter__(self):
            raise ConnectionRefusedError("down")

    async def main():
        provider = ReferenceProvider()
        with pytest.raises(ConnectionRefusedError):
            async with Coordination(provider, leaderelection=Failing()):
                pass
        assert provider.entered == 0

    run(main())


def test_configs_without_a_worker_get_a_fresh_one():
    first, second = LockConfig(lease_duration=9), LockConfig()
    assert re.fullmatch(r"[0-9a-f]{16}", first.worker) and first.worker != second.worker
    assert first.lease_duration.total_seconds() == 9
    assert LeaderElectionConfig(lease_duration=5, renew_deadline=4, backend_timeout=2).worker
    with pytest.raises(SettingsValidationError, match="Backend timeout must be shorter than renew deadline"):
        LeaderElectionConfig(lease_duration=5, renew_deadline=3)  # refused by grelmicro 0.44 too
    assert TaskLockConfig(min_hold_duration=2).worker
    lock = Lock.from_config("cart", LockConfig(lease_duration=9), backend=MemoryLockAdapter())
    assert lock.config.lease_duration.total_seconds() == 9


def test_a_coordination_enters_twice_and_exits_without_entering():
    async def main():
        provider = ReferenceProvider()
        coordination = Coordination(provider)
        await coordination.__aexit__(None, None, None)  # never entered: nothing happens
        async with coordination, coordination:
            assert provider.entered == 2
            async with Lock("cart") as handle:
                assert handle.fencing_token == 1
        assert provider.entered == 0
        with pytest.raises(KeyError):
            async with coordination:
                raise KeyError("the body's error goes on")
        assert provider.entered == 0

    run(main())
