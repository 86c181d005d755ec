"""`ReadWriteLock` on every store (the `store` fixture): grelmicro 0.44's `lock.read` /
`lock.write`, guards, errors, `state()`, `from_thread`, the adapter's calls and `Coordination`,
written the way grelmicro's users write them (spec §1.9, §8.13)."""

import asyncio
import threading
from datetime import timedelta

import pytest
from conftest import outlast

from tenure import (
    Coordination,
    EventLoopDeadlockError,
    LockNotOwnedError,
    LockReentrantError,
    LockTimeoutError,
    LockUpgradeError,
    MemoryProvider,
    MemoryReadWriteLockAdapter,
    OutOfContextError,
    ReadGuard,
    ReadWriteLock,
    ReadWriteLockConfig,
    ReadWriteLockState,
    WouldBlockError,
    WriteGuard,
)


def run(coro):
    return asyncio.run(coro)


def rw(provider, name="doc", **kwargs):
    return ReadWriteLock(name, backend=provider.readwritelock(), env_load=False, **kwargs)


async def no_intent_left(lock):
    """Whether the writers' intents are gone within 5 s (a withdrawal may still be on its way)."""
    deadline = asyncio.get_running_loop().time() + 5
    while (await lock.state()).waiting_writers and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.02)
    return (await lock.state()).waiting_writers == 0


def test_readers_share_and_read_the_last_writes_generation(store):
    async def main():
        async with store() as provider:
            lock = rw(provider)
            both = asyncio.Event()

            async def reader(seen):
                async with lock.read as guard:
                    seen.append(guard.generation)
                    if len(seen) == 2:
                        both.set()
                    await asyncio.wait_for(both.wait(), 5)  # both read at once

            seen = []
            await asyncio.gather(reader(seen), reader(seen))
            assert seen == [0, 0]
            fences = []
            for _ in range(3):
                async with lock.write as guard:
                    assert isinstance(guard, WriteGuard)
                    fences.append(guard.fencing_token)
            assert fences == [1, 2, 3]
            async with lock.read as guard:
                assert isinstance(guard, ReadGuard)
                assert guard.generation == 3
                assert await lock.state() == ReadWriteLockState(generation=3, writing=False, readers=1, waiting_writers=0)

    run(main())


def test_a_writer_excludes_readers_and_waits_first_in_line(store):
    async def main():
        async with store() as provider:
            lock = rw(provider, retry_interval=0.02)
            other = rw(provider, retry_interval=0.02)
            async with lock.write:
                assert (await lock.state()).writing
                with pytest.raises(WouldBlockError):
                    await asyncio.create_task(other.read.acquire_nowait())
            # A reader holds; a writer waits with an intent that keeps new readers out.
            reading = await lock.read.acquire()
            writer = asyncio.create_task(other.write.acquire(timeout=10))
            while (await lock.state()).waiting_writers == 0:
                await asyncio.sleep(0.01)
            with pytest.raises(WouldBlockError):
                await asyncio.create_task(other.read.acquire_nowait())
            await reading.extend()  # a reader inside may stay
            await lock.read.release()
            guard = await asyncio.wait_for(writer, 5)
            assert guard.fencing_token == 2 and not guard.poisoned
            state = await lock.state()
            assert (state.writing, state.readers, state.waiting_writers) == (True, 0, 0)

    run(main())


def test_a_timeout_or_a_nowait_writer_leaves_no_intent(store):
    async def main():
        async with store() as provider:
            lock, other = rw(provider), rw(provider)
            async with lock.read:
                with pytest.raises(LockTimeoutError) as caught:
                    await asyncio.create_task(other.write.acquire(timeout=0.2))
                assert isinstance(caught.value, TimeoutError)
                with pytest.raises(WouldBlockError):
                    await asyncio.create_task(other.write.acquire_nowait())
                with pytest.raises(LockTimeoutError):
                    async with other.write.hold(timeout=0.1):
                        pass
                # A writer that gave up withdrew its intent before saying so.
                assert (await lock.state()).waiting_writers == 0
                async with other.read as joined:  # readers still get in
                    assert joined.valid

    run(main())


def test_a_cancelled_writer_withdraws_its_intent(store):
    async def main():
        async with store() as provider:
            lock, other = rw(provider, retry_interval=0.02), rw(provider)
            async with lock.read:
                writer = asyncio.create_task(other.write.acquire())
                while (await lock.state()).waiting_writers == 0:
                    await asyncio.sleep(0.01)
                writer.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await writer
                assert await no_intent_left(lock)
                async with other.read:
                    pass

    run(main())


def test_nested_use_is_reentrancy_and_read_to_write_is_an_upgrade(store):
    async def main():
        async with store() as provider:
            lock = rw(provider)
            async with lock.read:
                with pytest.raises(LockReentrantError):
                    await lock.read.acquire()
                with pytest.raises(LockUpgradeError) as caught:
                    await lock.write.acquire()
                assert caught.value.name == "doc"
            async with lock.write:
                with pytest.raises(LockReentrantError):
                    await lock.read.acquire()
                with pytest.raises(LockReentrantError):
                    await lock.write.acquire()
            with pytest.raises(LockNotOwnedError):
                await lock.read.release()
            with pytest.raises(LockNotOwnedError):
                await lock.write.extend()
            assert not await lock.read.owned() and not await lock.write.owned()

    run(main())


def test_downgrade_keeps_writers_out_and_the_block_releases_the_read(store):
    async def main():
        async with store() as provider:
            lock, other = rw(provider), rw(provider)
            async with lock.write as writing:
                fence = writing.fencing_token
                reading = await writing.downgrade()
                assert isinstance(reading, ReadGuard) and reading.generation == fence
                assert not writing.valid and not writing.poisoned
                with pytest.raises(LockNotOwnedError):
                    writing.fencing_token
                assert await lock.read.owned() and not await lock.write.owned()
                with pytest.raises(WouldBlockError):
                    await asyncio.create_task(other.write.acquire_nowait())
                async with other.read as joined:
                    assert joined.generation == fence
                with pytest.raises(LockUpgradeError):
                    await lock.write.acquire()
            assert await lock.state() == ReadWriteLockState(generation=fence, writing=False, readers=0, waiting_writers=0)

    run(main())


def test_guards_tell_their_lease_and_are_spent_by_release(store):
    async def main():
        async with store() as provider:
            lock = rw(provider, lease_duration=timedelta(seconds=30))
            guard = await lock.write.acquire()
            assert guard.name == "doc" and guard.token and guard.valid
            assert 0 < guard.expires_in <= 30
            assert repr(guard).startswith("WriteGuard(name='doc', fencing_token=1, poisoned=False")
            await guard.extend()
            assert guard.fencing_token == 1
            assert await lock.write.owned()
            await lock.write.release()
            assert not guard.valid and guard.expires_in >= 0
            with pytest.raises(LockNotOwnedError):
                guard.fencing_token
            async with lock.read as read:
                assert repr(read) == "ReadGuard(name='doc', generation=1, valid=True)"
            with pytest.raises(LockNotOwnedError):
                read.generation

    run(main())


def test_a_writer_that_expired_poisons_the_next_write(store):
    async def main():
        async with store() as provider:
            lock, other = rw(provider, lease_duration=0.3), rw(provider)
            first = await lock.write.acquire()
            await asyncio.sleep(outlast(store, 0.3) + 0.2)
            assert not first.valid
            async with other.write as second:
                assert second.poisoned and second.fencing_token == 2
                with pytest.raises(LockNotOwnedError):
                    await lock.write.extend()
            async with other.write as third:
                assert not third.poisoned and third.fencing_token == 3

    run(main())


def test_threads_read_together_and_write_alone(store):
    async def main():
        async with store() as provider:
            lock = rw(provider, retry_interval=0.01)
            events, errors, guard = [], [], threading.Lock()

            def note(what):
                with guard:
                    events.append(what)

            def reader():
                try:
                    with lock.read.from_thread as held:
                        note(("read", held.generation))
                        threading.Event().wait(0.05)
                        note(("done", None))
                except BaseException as e:  # surfaced below
                    errors.append(e)

            def writer():
                try:
                    with lock.write.from_thread as held:
                        note(("write", held.fencing_token))
                        threading.Event().wait(0.02)
                        note(("done", None))
                    with lock.read.from_thread:
                        with pytest.raises(LockUpgradeError):
                            lock.write.from_thread.acquire()
                except BaseException as e:
                    errors.append(e)

            # Three readers inside at once (each waits at the barrier for the others).
            barrier = threading.Barrier(3, timeout=10)

            def sharing():
                try:
                    with lock.read.from_thread:
                        barrier.wait()
                except BaseException as e:
                    errors.append(e)

            threads = [threading.Thread(target=sharing) for _ in range(3)]
            for t in threads:
                t.start()
            await asyncio.to_thread(lambda: [t.join(20) for t in threads])
            assert not errors, errors

            threads = [threading.Thread(target=t) for t in (reader, writer, reader, writer, reader)]
            for t in threads:
                t.start()
            await asyncio.to_thread(lambda: [t.join(20) for t in threads])
            assert not errors, errors
            inside, writing = 0, False
            for what, _ in events:
                if what == "write":
                    assert inside == 0, events
                    writing, inside = True, 1
                elif what == "read":
                    assert not writing, events
                    inside += 1
                else:
                    inside -= 1
                    writing = writing and inside > 0
            assert len(events) == 10
            with pytest.raises(EventLoopDeadlockError):
                lock.read.from_thread.acquire()

    run(main())


def test_a_task_holding_a_lease_keeps_its_rule_when_another_backend_is_resolved():
    async def main():
        async with Coordination(MemoryProvider()):
            lock = ReadWriteLock("doc", env_load=False)
            async with lock.read:
                # Another component's store: the lock is rebuilt on it, and the task still reads.
                async with Coordination(MemoryProvider()):
                    with pytest.raises(LockUpgradeError):
                        await lock.write.acquire(timeout=10)
                    with pytest.raises(LockReentrantError):
                        await lock.read.acquire()
            async with Coordination(MemoryProvider()):
                async with lock.write as guard:
                    assert guard.fencing_token == 1, "a task holding nothing asks the store of now"

    run(main())


def test_a_coordination_serves_read_write_locks():
    async def main():
        async with Coordination(MemoryProvider()) as coordination:
            lock = coordination.readwritelock("doc")
            async with lock.write as guard:
                assert guard.fencing_token == 1
            implicit = ReadWriteLock("doc", env_load=False)
            async with implicit.read as guard:
                assert guard.generation == 1
        with pytest.raises(OutOfContextError):
            await implicit.read.acquire()
        async with Coordination(readwritelock=MemoryReadWriteLockAdapter) as coordination:
            async with coordination.readwritelock("doc").write as guard:
                assert guard.fencing_token == 1
        async with MemoryReadWriteLockAdapter() as backend:
            async with ReadWriteLock("doc", backend=backend).read as guard:
                assert guard.generation == 0

    run(main())


def test_config_and_environment(monkeypatch):
    monkeypatch.setenv("GREL_READWRITELOCK_LEASE_DURATION", "12")
    monkeypatch.setenv("GREL_READWRITELOCK_DOC_RETRY_INTERVAL", "0.5")
    lock = ReadWriteLock("doc", backend=MemoryReadWriteLockAdapter())
    assert lock.config.lease_duration == timedelta(seconds=12)
    assert lock.config.retry_interval == 0.5
    config = ReadWriteLockConfig(lease_duration=timedelta(seconds=3))
    built = ReadWriteLock.from_config("doc", config, backend=MemoryReadWriteLockAdapter())
    assert built.config is config
    with pytest.raises(TypeError):
        ReadWriteLock.from_config("doc", object(), backend=MemoryReadWriteLockAdapter())


def test_an_extend_after_a_reconfigure_renews_for_the_new_lease_and_the_guard_says_so():
    async def main():
        backend = MemoryReadWriteLockAdapter()
        lock = ReadWriteLock("doc", backend=backend, env_load=False, worker="w1", lease_duration=60)
        guard = await lock.write.acquire()
        fence = guard.fencing_token
        assert guard.expires_in > 50
        await lock.reconfigure(ReadWriteLockConfig(worker="w1", lease_duration=timedelta(seconds=0.4)))
        await lock.write.extend()
        assert 0.2 < guard.expires_in <= 0.4
        await asyncio.sleep(0.6)
        # The store agrees: the renewed lease was 0.4 s, so another writer gets in.
        assert not guard.valid
        other = ReadWriteLock("doc", backend=backend, env_load=False)
        async with other.write as next_guard:
            assert next_guard.poisoned and next_guard.fencing_token == fence + 1

    run(main())


def test_the_adapter_answers_grelmicros_backend_calls(store):
    async def main():
        async with store() as provider:
            backend = provider.readwritelock_backend()
            assert backend is provider.readwritelock()
            assert await backend.acquire_read(name="rwlock:doc", token="r1", duration=30) == 0
            assert await backend.acquire_write(name="rwlock:doc", token="w1", duration=30) is None
            assert await backend.state(name="rwlock:doc") == ReadWriteLockState(0, False, 1, 1)
            assert await backend.cancel_intent(name="rwlock:doc", token="w1")
            assert await backend.owned_read(name="rwlock:doc", token="r1")
            assert await backend.release_read(name="rwlock:doc", token="r1")
            grant = await backend.acquire_write(name="rwlock:doc", token="w1", duration=30, intent=False)
            assert (grant.fencing_token, grant.poisoned) == (1, False)
            assert await backend.owned_write(name="rwlock:doc", token="w1")
            assert await backend.downgrade(name="rwlock:doc", token="w1", duration=30) == 1
            assert not await backend.release_write(name="rwlock:doc", token="w1")
            with pytest.raises(ValueError):
                await backend.acquire_read(name="rwlock:doc", token="r2", duration=float("nan"))

    run(main())


def test_grelmicros_low_level_calls_on_the_views(store):
    async def main():
        async with store() as provider:
            lock = rw(provider)
            assert await lock.read.do_acquire("r1", duration=30) == 0
            assert await lock.write.do_acquire("w1", duration=30) is None  # an intent kept
            assert (await lock.state()).waiting_writers == 1
            assert await lock.write.do_acquire("w2", duration=30, intent=False) is None
            assert (await lock.state()).waiting_writers == 1
            other = rw(provider, name="page")
            grant = await other.write.do_acquire("w3", duration=30)
            assert (grant.fencing_token, grant.poisoned) == (1, False)
            assert await provider.readwritelock().release_write(name="rwlock:page", token="w3")
            writing = await other.write.acquire()
            assert writing.fencing_token == 2
            await other.write.do_extend(writing)
            reading = await other.write.do_downgrade(writing)
            assert reading.generation == writing._fencing_token
            await other.read.release()

    run(main())
