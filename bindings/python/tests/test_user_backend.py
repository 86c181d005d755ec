"""Backends written by users in pure Python (`dict_backend.py`), used as grelmicro users use them:
`Lock`, `TaskLock`, `LeaderElection`, `from_thread` and `Coordination` on them, and every way such
a backend can fail — it raises, hangs past `backend_timeout`, or answers garbage."""

import asyncio
import gc
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import pytest
from dict_backend import DictBackend, Record, SecondsLocks

from tenure import (
    Coordination,
    LeaderElection,
    LeaderElectionBackend,
    Lock,
    LockAcquireError,
    LockBackend,
    LockLockedCheckError,
    LockReleaseError,
    MemoryScheduleAdapter,
    ScheduleBackend,
    TaskLock,
    WouldBlockError,
)

# Runs again on Python 3.14 beside grelmicro (`pytest -m py314`):
# backends written in Python, whose calls start eagerly on 3.12+.
pytestmark = pytest.mark.py314


def run(coro):
    return asyncio.run(coro)


def test_a_lock_cycle_takes_its_fences_from_the_users_backend():
    async def main():
        async with DictBackend() as backend:
            lock = Lock("cart", backend=backend)
            async with lock as handle:
                assert handle.fencing_token == 1
                assert backend.locks["lock:cart"][2] == 1
                assert await lock.locked() and await lock.owned()
            assert not await lock.locked()
            async with lock as handle:
                assert handle.fencing_token == 2
            assert backend.calls == ["acquire lock:cart", "release lock:cart"] * 2

    run(main())


def test_the_backend_satisfies_the_protocols():
    backend = DictBackend()
    assert isinstance(backend, LockBackend) and isinstance(backend, LeaderElectionBackend)
    assert not isinstance(backend, ScheduleBackend)
    assert isinstance(MemoryScheduleAdapter(), ScheduleBackend)


def test_tasks_exclude_each_other_and_fences_climb():
    async def main():
        backend = DictBackend()
        lock = Lock("cart", backend=backend, retry_interval=0.001)
        inside, most, fences = 0, 0, []

        async def worker():
            nonlocal inside, most
            for _ in range(5):
                async with lock as handle:
                    inside += 1
                    most = max(most, inside)
                    fences.append(handle.fencing_token)
                    await asyncio.sleep(0.001)
                    inside -= 1

        await asyncio.gather(*(worker() for _ in range(6)))
        assert most == 1
        assert fences == sorted(fences) and len(set(fences)) == 30

    run(main())


def test_threads_exclude_each_other_through_the_loop_the_backend_was_entered_on():
    async def main():
        async with DictBackend() as backend:
            lock = Lock("cart", backend=backend, retry_interval=0.001)
            inside, most, fences, tokens = 0, 0, [], []
            guard = threading.Lock()

            def worker():
                nonlocal inside, most
                for _ in range(5):
                    with lock.from_thread as handle:
                        with guard:
                            inside += 1
                            most = max(most, inside)
                            fences.append(handle.fencing_token)
                            tokens.append(handle.token)
                        time.sleep(0.001)
                        with guard:
                            inside -= 1

            await asyncio.gather(*(asyncio.to_thread(worker) for _ in range(4)))
            assert most == 1 and len(set(fences)) == 20
            assert all(":thread:" in token for token in tokens)  # each thread holds as a thread
            assert not backend.locks  # all released

    run(main())


def test_a_task_lock_holds_for_its_minimum():
    async def main():
        backend = DictBackend()
        first = TaskLock("job", backend=backend, min_hold_duration=0.3, lease_duration=5)
        second = TaskLock("job", backend=backend, min_hold_duration=0.3, lease_duration=5)
        async with first:
            assert first.fencing_token == 1
        assert await second.locked()  # kept for the rest of the minimum hold
        with pytest.raises(WouldBlockError):
            async with second:
                pass
        await asyncio.sleep(0.35)
        async with second:
            assert second.fencing_token == 2

    run(main())


def test_one_leader_among_several_and_a_clean_hand_over():
    async def main():
        backend = DictBackend()
        elections = [
            LeaderElection("svc", backend=backend, worker=f"w{i}", lease_duration=2, renew_deadline=1.5,
                           retry_interval=0.02, backend_timeout=1)
            for i in range(3)
        ]
        tasks = {e.config.worker: asyncio.create_task(e()) for e in elections}
        await asyncio.wait_for(asyncio.wait([asyncio.create_task(e.wait_for_leader()) for e in elections],
                                            return_when=asyncio.FIRST_COMPLETED), 5)
        await asyncio.sleep(0.1)
        leaders = [e for e in elections if e.is_leader()]
        assert len(leaders) == 1
        leader = leaders[0]
        assert (await backend.get(name="leader:svc")).holder == leader.config.worker
        started = time.monotonic()
        tasks.pop(leader.config.worker).cancel()
        others = [e for e in elections if e is not leader]
        await asyncio.wait_for(asyncio.wait([asyncio.create_task(e.wait_for_leader()) for e in others],
                                            return_when=asyncio.FIRST_COMPLETED), 5)
        assert time.monotonic() - started < 1.0  # released, not left to expire (2 s)
        assert sum(e.is_leader() for e in others) == 1 and not leader.is_leader()
        assert (await backend.get(name="leader:svc")).transitions == 0  # a release deletes the record
        for task in tasks.values():
            task.cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)

    run(main())


def test_coordination_takes_user_backends_in_each_slot_and_as_a_bare_source():
    async def main():
        locks, leaders, schedule = DictBackend(), DictBackend(), MemoryScheduleAdapter()
        async with Coordination(lock=locks, leaderelection=leaders, schedule=schedule) as coordination:
            assert coordination.lock_backend is locks
            assert coordination.leaderelection_backend is leaders
            assert coordination.schedule_backend is schedule
            async with Lock("cart"):
                assert "lock:cart" in locks.locks
            election = coordination.leaderelection("svc", worker="w1", retry_interval=0.02)
            running = asyncio.create_task(election())
            await asyncio.wait_for(election.wait_for_leader(), 5)
            assert "leader:svc" in leaders.leaders
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
            assert await schedule.claim("nightly", 10.0) and not await schedule.claim("nightly", 10.0)
        both = DictBackend()
        async with Coordination(both) as coordination:  # serves locks and elections: both slots
            assert coordination.lock_backend is both and coordination.leaderelection_backend is both
            assert both._loop is asyncio.get_running_loop()  # entered, as grelmicro's app does

    run(main())


class Raising(DictBackend):
    async def acquire(self, *, name, token, duration):
        raise KeyError("the table is gone")

    async def release(self, *, name, token):
        raise OSError("disk full")


def test_a_backend_that_raises_is_the_calls_error_with_its_exception_as_cause():
    async def main():
        lock = Lock("cart", backend=Raising())
        with pytest.raises(LockAcquireError) as caught:
            await lock.acquire()
        assert isinstance(caught.value.__cause__, KeyError)
        assert not await lock.owned()

        class ReleaseRaises(DictBackend):
            release = Raising.release

        backend = ReleaseRaises()
        lock = Lock("cart", backend=backend)
        await lock.acquire()
        with pytest.raises(LockReleaseError) as caught:
            await lock.release()
        assert isinstance(caught.value.__cause__, OSError)

    run(main())


class Slow(DictBackend):
    """Grants, but only after `delay` seconds."""

    def __init__(self, delay):
        super().__init__()
        self.delay = delay

    async def acquire(self, *, name, token, duration):
        await asyncio.sleep(self.delay)
        return await super().acquire(name=name, token=token, duration=duration)


def test_a_backend_that_hangs_fails_at_backend_timeout_and_a_late_grant_is_given_back():
    async def main():
        backend = Slow(1.0)
        lock = Lock("cart", backend=backend, backend_timeout=0.2)
        started = time.monotonic()
        with pytest.raises(LockAcquireError) as caught:
            await lock.acquire()
        assert 0.15 < time.monotonic() - started < 0.9  # failed before the grant (at 1 s)
        assert isinstance(caught.value.__cause__, TimeoutError)
        assert not await lock.owned()
        await asyncio.sleep(1.5)  # the grant lands late: the driver releases it
        assert not backend.locks and backend.calls[-1] == "release lock:cart"

    run(main())


class Garbage(DictBackend):
    def __init__(self, answer):
        super().__init__()
        self.answer = answer

    async def acquire(self, *, name, token, duration):
        return self.answer(token)


@pytest.mark.parametrize(
    "answer, words",
    [
        (lambda token: token, "a str"),
        (lambda token: True, "a bool"),
        (lambda token: 0, "fencing token 0"),
        (lambda token: -3, "fencing token -3"),
        (lambda token: 2**70, "below 2**63"),
        (lambda token: 1.5, "a float"),
    ],
)
def test_a_backend_that_answers_garbage_is_an_error_naming_the_call(answer, words):
    async def main():
        lock = Lock("cart", backend=Garbage(answer))
        with pytest.raises(LockAcquireError) as caught:
            await lock.acquire()
        cause = caught.value.__cause__
        assert isinstance(cause, (TypeError, ValueError))
        assert str(cause).startswith("Garbage.acquire answered ") and words in str(cause)
        assert lock.config.worker not in f"{caught.value} {cause}"  # never the token
        assert not await lock.owned()

    run(main())


def test_an_election_on_a_backend_that_answers_garbage_never_leads(caplog):
    class NotARecord(DictBackend):
        async def acquire_or_renew(self, *, name, token, duration, metadata=None):
            self.calls.append("acquire_or_renew")
            return {"holder": token}

    async def main():
        backend = NotARecord()
        election = LeaderElection("svc", backend=backend, worker="w1", retry_interval=0.02)
        running = asyncio.create_task(election())
        await asyncio.sleep(0.3)
        assert not election.is_leader() and election.record is None
        assert backend.calls.count("acquire_or_renew") >= 2  # asked, refused, asked again
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)

    with caplog.at_level("WARNING", logger="tenure"):
        run(main())
    assert "NotARecord.acquire_or_renew answered a dict, not a LeaderRecord" in caplog.text


def test_a_placeholder_record_with_no_lease_means_another_leads(caplog):
    class Placeholder(DictBackend):
        """grelmicro's Kubernetes adapter answers a lost race with a zero-lease record."""

        async def acquire_or_renew(self, *, name, token, duration, metadata=None):
            epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
            return Record("someone-else", timedelta(0), epoch, epoch, 0)

    async def main():
        election = LeaderElection("svc", backend=Placeholder(), worker="w1", retry_interval=0.02)
        running = asyncio.create_task(election())
        await asyncio.sleep(0.2)
        assert not election.is_leader() and election.record.holder == "someone-else"
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)

    with caplog.at_level("WARNING", logger="tenure"):
        run(main())
    assert "answered" not in caplog.text


class Forwarding:
    """A backend of dataclass fields that forwards to a `DictBackend` (not compared)."""

    async def acquire(self, **call):
        return await self.inner.acquire(**call)

    async def release(self, **call):
        return await self.inner.release(**call)

    async def locked(self, **call):
        return await self.inner.locked(**call)

    async def owned(self, **call):
        return await self.inner.owned(**call)


@dataclass(frozen=True)
class FrozenBackend(Forwarding):
    table: str = "locks"
    inner: DictBackend = field(default_factory=DictBackend, compare=False)


@dataclass
class MutableBackend(Forwarding):  # unhashable: eq without frozen
    table: str = "locks"
    inner: DictBackend = field(default_factory=DictBackend, compare=False)


def test_equal_backends_are_two_stores_and_unhashable_ones_work():
    async def main():
        first, second = FrozenBackend(), FrozenBackend()
        assert first == second and hash(first) == hash(second)
        async with Lock("cart", backend=first):
            async with Lock("cart", backend=second) as handle:  # another store: not contended
                assert handle.fencing_token == 1
        assert "lock:cart" not in first.inner.locks and first.inner.fences["lock:cart"] == 1
        mutable = MutableBackend()
        async with Lock("cart", backend=mutable) as handle:
            assert handle.fencing_token == 1 and "lock:cart" in mutable.inner.locks

    run(main())


def test_a_late_grant_is_given_back_after_the_lock_and_backend_are_dropped():
    async def attempt(backend):
        with pytest.raises(LockAcquireError):
            await Lock("cart", backend=backend, backend_timeout=0.2).acquire()

    async def main():
        backend = Slow(0.5)
        await attempt(backend)
        locks = backend.locks
        calls = backend.calls
        del backend  # nothing of the caller keeps the backend now
        gc.collect()
        await asyncio.sleep(1.5)
        assert not locks and calls[-1] == "release lock:cart"

    run(main())


def test_a_backend_annotating_seconds_gets_float_seconds():
    async def main():
        backend = SecondsLocks()
        async with Lock("cart", backend=backend, lease_duration=timedelta(milliseconds=1500)):
            pass
        assert backend.durations == [1.5]

    run(main())


def test_fences_that_go_backwards_are_refused():
    class Regressing(DictBackend):
        answers = iter([5, 3])

        async def acquire(self, *, name, token, duration):
            await super().acquire(name=name, token=token, duration=duration)
            return next(self.answers)

    async def main():
        backend = Regressing()
        async with Lock("cart", backend=backend) as handle:
            assert handle.fencing_token == 5
        with pytest.raises(LockAcquireError) as caught:
            await Lock("cart", backend=backend).acquire()  # another instance, another holder
        assert "Regressing.acquire answered fencing token 3 after 5 for lock:cart" in str(caught.value.__cause__)

    run(main())


def test_an_object_that_is_no_backend_is_refused_with_what_it_lacks():
    async def main():
        with pytest.raises(TypeError, match="has no acquire, release, locked, owned"):
            await Lock("cart", backend=object()).acquire()

    run(main())


def test_plain_methods_work_and_a_garbage_flag_is_the_checks_error():
    class Plain:
        """Methods that answer at once, without a coroutine."""

        def __init__(self):
            self.inner = DictBackend()

        def acquire(self, *, name, token, duration):
            return 7

        def release(self, *, name, token):
            return True

        def locked(self, *, name):
            return "yes"

        def owned(self, *, name, token):
            return 1

    async def main():
        lock = Lock("cart", backend=Plain())
        async with lock as handle:
            assert handle.fencing_token == 7
            assert await lock.owned() is True
        with pytest.raises(LockLockedCheckError) as caught:
            await lock.locked()
        assert str(caught.value.__cause__) == "Plain.locked answered a str: the answer is a bool"

    run(main())


def test_a_backend_no_primitive_uses_is_collected():
    import gc
    import weakref

    async def main():
        backend = DictBackend()
        async with Lock("cart", backend=backend):
            pass
        return weakref.ref(backend)

    gone = run(main())
    gc.collect()
    assert gone() is None


def test_from_thread_finds_the_loop_of_the_coordination_that_holds_the_backend():
    class NoLoop(DictBackend):
        async def __aenter__(self):  # captures nothing
            return self

    async def main():
        backend = NoLoop()
        async with Coordination(lock=backend, requires="process"):
            lock = Lock("cart", backend=backend)  # never used on the loop before the thread

            def in_thread():
                with lock.from_thread as handle:
                    return handle.fencing_token

            assert await asyncio.to_thread(in_thread) == 1

    run(main())


def test_from_thread_without_any_loop_says_so():
    lock = Lock("cart", backend=DictBackend())
    with pytest.raises(LockAcquireError) as caught:
        lock.from_thread.acquire(timeout=1)
    assert "has no event loop to run on" in str(caught.value.__cause__)
