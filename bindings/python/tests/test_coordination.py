"""`Coordination`: backends from one provider or each on its own, and the scope that makes them
the default of primitives built without a backend (spec §1.8, §8.11)."""

import asyncio

import pytest

from tenure import (
    Coordination,
    CoordinationBackendError,
    LeaderElection,
    Lock,
    MemoryLeaderElectionAdapter,
    MemoryLockAdapter,
    MemoryProvider,
    OutOfContextError,
    SQLiteProvider,
    TaskLock,
    WouldBlockError,
)


def run(coro):
    return asyncio.run(coro)


def test_primitives_without_a_backend_use_the_scopes_and_fail_outside_it():
    async def main():
        lock = Lock("cart", env_load=False)
        with pytest.raises(OutOfContextError) as caught:
            await lock.acquire()
        assert "Coordination" in str(caught.value)
        async with Coordination(MemoryProvider()):
            async with lock as handle:
                assert handle.fencing_token == 1

                async def child():  # tasks started in the scope inherit it
                    with pytest.raises(WouldBlockError):
                        await Lock("cart", env_load=False).acquire_nowait()

                await asyncio.create_task(child())
        with pytest.raises(OutOfContextError):
            await lock.locked()

    run(main())


def test_a_component_builds_primitives_on_its_backends():
    async def main():
        async with Coordination(MemoryProvider) as coordination:  # a class is instantiated
            async with coordination.lock("a") as handle:
                assert handle.name == "a"
            async with coordination.tasklock("job", min_hold_duration=0.01, env_load=False):
                pass
            election = coordination.leaderelection("svc", env_load=False)
            task = asyncio.create_task(election())
            await asyncio.wait_for(election.wait_for_leader(), 5)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    run(main())


def test_backends_can_be_set_one_by_one_and_a_missing_one_says_so():
    only_locks = Coordination(lock=MemoryLockAdapter())
    assert only_locks.lock_backend is not None
    with pytest.raises(CoordinationBackendError, match="leader election"):
        only_locks.election_backend
    both = Coordination(lock=MemoryLockAdapter(), leaderelection=MemoryLeaderElectionAdapter())
    assert both.election_backend is not None
    with pytest.raises(ValueError):
        Coordination(election=MemoryLeaderElectionAdapter(), leaderelection=MemoryLeaderElectionAdapter())


def test_the_scope_opens_and_closes_its_providers(tmp_path):
    async def main():
        provider = SQLiteProvider(str(tmp_path / "locks.db"))
        async with Coordination(provider):
            assert (await TaskLock("job", min_hold_duration=0.01, env_load=False).locked()) is False
            election = LeaderElection("svc", env_load=False)
            assert election.config.lease_duration.total_seconds() == 15.0
        with pytest.raises(OutOfContextError):
            await Lock("x", backend=provider.lock(), env_load=False).locked()

    run(main())


def test_named_components_are_resolved_by_name():
    async def main():
        analytics, default = MemoryProvider(), MemoryProvider()
        async with Coordination(default), Coordination(analytics, name="analytics"):
            named = Lock("x", backend="analytics", env_load=False)
            plain = Lock("x", env_load=False)
            async with named:
                await plain.acquire_nowait()  # another store: not held there
                await plain.release()
        with pytest.raises(OutOfContextError, match="analytics"):
            await Lock("x", backend="analytics", env_load=False).locked()
        async with Coordination(analytics, name="analytics"):  # a sole component answers for "default"
            async with Lock("y", env_load=False):
                pass

    run(main())
