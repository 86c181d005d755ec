"""Read-write lock and semaphore backends written by users in pure Python (`dict_rw.py`), used as
grelmicro users use a `ReadWriteLockBackend`: `ReadWriteLock` views, guards, downgrade, poisoning,
`state()`, `from_thread` and `Coordination` on them; `Semaphore` on a user's semaphore backend;
and such a backend that raises, hangs or answers garbage."""

import asyncio
import threading
from datetime import timedelta

import pytest
from conftest import holders_at_once
from dict_backend import DictBackend
from dict_rw import DictReadWrite, DictSemaphore, ReadWriteLockState, WriteGrant

from tenure import (
    Coordination,
    CoordinationBackendError,
    LockAcquireError,
    LockOwnedCheckError,
    LockReleaseError,
    LockTimeoutError,
    ReadWriteLock,
    ReadWriteLockBackend,
    Semaphore,
    SemaphoreBackend,
    SettingsValidationError,
    WouldBlockError,
)

# Runs again on Python 3.14 beside grelmicro (`pytest -m py314`):
# backends written in Python, whose calls start eagerly on 3.12+.
pytestmark = pytest.mark.py314


def run(coro):
    return asyncio.run(coro)


def test_the_backends_satisfy_the_protocols():
    assert isinstance(DictReadWrite(), ReadWriteLockBackend) and not isinstance(DictReadWrite(), SemaphoreBackend)
    assert isinstance(DictSemaphore(), SemaphoreBackend) and not isinstance(DictSemaphore(), ReadWriteLockBackend)


def test_readers_share_a_writer_waits_for_them_and_reads_see_its_generation():
    async def main():
        backend = DictReadWrite()
        lock = ReadWriteLock("doc", backend=backend, env_load=False)
        other = ReadWriteLock("doc", backend=backend, env_load=False)
        async with lock.read as first, other.read as second:
            assert first.generation == second.generation == 0
            state = await lock.state()
            assert (state.generation, state.writing, state.readers, state.waiting_writers) == (0, False, 2, 0)
            writer = ReadWriteLock("doc", backend=backend, env_load=False, retry_interval=0.01)
            with pytest.raises(WouldBlockError):
                await writer.write.acquire_nowait()
            assert "acquire_write rwlock:doc intent=False" in backend.calls, "a nowait writer leaves no intent"
            async def write():
                async with writer.write as guard:
                    assert await writer.write.owned() and (await writer.state()).writing
                    return guard.fencing_token, guard.poisoned

            waiting = asyncio.ensure_future(write())
            deadline = asyncio.get_running_loop().time() + 5
            while (await lock.state()).waiting_writers < 1:
                assert asyncio.get_running_loop().time() < deadline, "the writer never waited"
                await asyncio.sleep(0.01)
            assert not waiting.done()
            # The writer's intent keeps new readers out.
            with pytest.raises(WouldBlockError):
                await ReadWriteLock("doc", backend=backend, env_load=False).read.acquire_nowait()
        assert await asyncio.wait_for(waiting, 5) == (1, False)
        async with lock.read as after:
            assert after.generation == 1

    run(main())


def test_downgrade_poisoning_and_a_timed_out_writer_withdraws_its_intent():
    async def main():
        backend = DictReadWrite()
        lock = ReadWriteLock("doc", backend=backend, env_load=False, lease_duration=0.3)
        guard = await lock.write.acquire()
        await asyncio.sleep(0.5)  # the lease ends without a release
        other = ReadWriteLock("doc", backend=backend, env_load=False)
        async with other.write as second:
            assert second.poisoned and second.fencing_token == 2
            read = await second.downgrade()
            assert read.generation == 2
            assert await other.read.owned() and not await other.write.owned()
        assert not guard.valid
        reader = ReadWriteLock("doc", backend=backend, env_load=False)
        await reader.read.acquire()
        late = ReadWriteLock("doc", backend=backend, env_load=False, retry_interval=0.02)
        with pytest.raises(LockTimeoutError):
            await late.write.acquire(timeout=0.2)
        assert "cancel_intent rwlock:doc" in backend.calls and (await lock.state()).waiting_writers == 0
        await reader.read.release()

    run(main())


def test_threads_read_and_write_through_from_thread():
    async def main():
        backend = DictReadWrite()
        lock = ReadWriteLock("doc", backend=backend, env_load=False, retry_interval=0.01)
        await lock.state()  # the backend's loop is this one
        seen = []

        def worker():
            with lock.write.from_thread as guard:
                seen.append(("write", guard.fencing_token))
            with lock.read.from_thread as guard:
                seen.append(("read", guard.generation))

        thread = threading.Thread(target=worker)
        thread.start()
        await asyncio.to_thread(thread.join, 10)
        assert seen == [("write", 1), ("read", 1)]

    run(main())


def test_coordination_takes_user_rw_and_semaphore_backends_in_their_slots_and_as_a_bare_source():
    async def main():
        coordination = Coordination(readwritelock=DictReadWrite(), semaphore=DictSemaphore())
        async with coordination.readwritelock("doc").write as guard:
            assert guard.fencing_token == 1
        async with coordination.semaphore("pool", 2) as permit:
            assert permit.fencing_token == 1
        bare = Coordination(DictReadWrite())
        async with bare.readwritelock("doc").read as guard:
            assert guard.generation == 0
        # An object serving locks and read-write locks has a semaphore's four methods too (the
        # lock's acquire, release, owned and the read-write state): as a bare source it fills
        # no semaphore slot; passed as semaphore= it would be meant.
        both = type("Both", (DictBackend, DictReadWrite), {})()
        wired = Coordination(both)
        assert wired.lock_backend is both and wired.readwritelock_backend is both
        with pytest.raises(CoordinationBackendError):
            wired.semaphore_backend

    run(main())


def test_a_users_semaphore_admits_up_to_its_permits_each_with_a_token_of_its_own():
    async def main():
        backend = DictSemaphore()
        pool = Semaphore("exports", 2, backend=backend, retry_interval=0.01)
        most, fences = await holders_at_once(pool, 6, hold=0.2)
        assert most == 2 and backend.most_at_once == 2
        assert sorted(fences) == [1, 2, 3, 4, 5, 6]
        held = await pool.acquire()
        state = await pool.state()
        assert (state.permits, state.holders, state.fence) == (2, 1, 7) and held.fencing_token == 7
        with pytest.raises(SettingsValidationError, match="in use with 2 permits"):
            await Semaphore("exports", 3, backend=backend).acquire_nowait()
        await pool.release()
        assert (await pool.state()).holders == 0

    run(main())


TOKEN = object()  # answer the call's own token


class Garbage(DictReadWrite):
    """Answers what `answer` says for one method, correctly otherwise."""

    def __init__(self, method, answer):
        super().__init__()
        self.method, self.answer, self.tokens = method, answer, []

    def __getattribute__(self, name):
        if name != "method" and name == object.__getattribute__(self, "method"):
            answer = object.__getattribute__(self, "answer")

            async def garbage(**call):
                self.tokens.append(call.get("token"))
                if isinstance(answer, BaseException):
                    raise answer
                return call["token"] if answer is TOKEN else answer

            return garbage
        return object.__getattribute__(self, name)


@pytest.mark.parametrize(
    ("method", "answer", "words"),
    [
        ("acquire_write", 3, "Garbage.acquire_write answered a int, not a WriteGrant"),
        ("acquire_write", WriteGrant(0, False), "fencing token 0"),
        ("acquire_write", WriteGrant(2, "no"), "poisoned is a str, not a bool"),
        ("acquire_read", -1, "a generation that is -1"),
        ("acquire_read", "1", "a str: a generation is an int >= 0"),
        ("acquire_read", TOKEN, "a str: a generation is an int >= 0"),
    ],
)
def test_a_rw_backend_that_answers_garbage_or_raises_is_an_acquire_error_naming_the_call(method, answer, words):
    async def main():
        backend = Garbage(method, answer)
        lock = ReadWriteLock("doc", backend=backend, env_load=False)
        view = lock.write if method == "acquire_write" else lock.read
        with pytest.raises(LockAcquireError) as caught:
            await view.acquire_nowait()
        assert words in str(caught.value.__cause__), caught.value.__cause__
        assert backend.tokens and not any(t in str(caught.value.__cause__) for t in backend.tokens)

    run(main())


def test_a_rw_backend_that_raises_is_the_calls_error_with_its_exception_as_cause():
    async def main():
        lock = ReadWriteLock("doc", backend=Garbage("release_read", OSError("secret-token down")), env_load=False)
        await lock.read.acquire()
        with pytest.raises(LockReleaseError) as caught:
            await lock.read.release()
        assert isinstance(caught.value.__cause__, OSError) and "secret-token" not in str(caught.value)

    run(main())


def test_a_garbage_state_is_an_owned_check_error():
    async def main():
        bad = ReadWriteLockState(1, True, 2, 0)
        lock = ReadWriteLock("doc", backend=Garbage("state", bad), env_load=False)
        with pytest.raises(LockOwnedCheckError) as caught:
            await lock.state()
        assert "a writer and readers at once" in str(caught.value.__cause__)
        wrong = ReadWriteLock("doc", backend=Garbage("state", {"generation": 1}), env_load=False)
        with pytest.raises(LockOwnedCheckError) as caught:
            await wrong.state()
        assert "not a ReadWriteLockState" in str(caught.value.__cause__)

    run(main())


def test_a_writers_fence_that_goes_backwards_is_refused():
    async def main():
        backend = DictReadWrite()
        lock = ReadWriteLock("doc", backend=backend, env_load=False)
        async with lock.write as guard:
            assert guard.fencing_token == 1
        async with lock.write:
            pass
        backend.entries["rwlock:doc"].generation = 0  # the backend lost its counter
        with pytest.raises(LockAcquireError) as caught:
            await lock.write.acquire()
        assert "DictReadWrite.acquire_write answered fencing token 1 after 2 for rwlock:doc" in str(caught.value.__cause__)

    run(main())


def test_a_semaphore_backend_that_hangs_fails_at_backend_timeout_and_garbage_names_the_call():
    class Hangs(DictSemaphore):
        async def acquire(self, **_):
            await asyncio.sleep(30)

    class Unreadable(DictSemaphore):
        async def acquire(self, **_):
            return 5

    async def main():
        started = asyncio.get_running_loop().time()
        with pytest.raises(LockAcquireError):
            await Semaphore("pool", 2, backend=Hangs(), backend_timeout=0.2).acquire_nowait()
        assert asyncio.get_running_loop().time() - started < 5
        with pytest.raises(LockAcquireError) as caught:
            await Semaphore("pool", 2, backend=Unreadable()).acquire_nowait()
        assert "Unreadable.acquire answered a int: a permit is (fencing_token or None, permits)" in str(
            caught.value.__cause__
        )

    run(main())


def test_a_semaphore_backend_gets_its_wait_as_a_timedelta():
    class Seen(DictSemaphore):
        def __init__(self):
            super().__init__()
            self.waits = []

        async def acquire(self, *, wait=None, **kwargs):
            self.waits.append(wait)
            return await super().acquire(wait=wait, **kwargs)

    async def main():
        backend = Seen()
        async with Semaphore("pool", 1, backend=backend):
            with pytest.raises(LockTimeoutError):
                await Semaphore("pool", 1, backend=backend, retry_interval=0.02).acquire(timeout=0.1)
        assert any(isinstance(w, timedelta) and w > timedelta(0) for w in backend.waits), backend.waits

    run(main())


def test_a_rw_backend_annotating_seconds_gets_float_seconds():
    class SecondsReadWrite(DictReadWrite):
        def __init__(self):
            super().__init__()
            self.durations = []

        async def acquire_read(self, *, name: str, token: str, duration: float):
            self.durations.append(duration)
            return await super().acquire_read(name=name, token=token, duration=timedelta(seconds=duration))

        async def acquire_write(self, *, name: str, token: str, duration: float, intent: bool = True):
            self.durations.append(duration)
            return await super().acquire_write(name=name, token=token, duration=timedelta(seconds=duration), intent=intent)

    async def main():
        backend = SecondsReadWrite()
        lock = ReadWriteLock("doc", backend=backend, env_load=False, lease_duration=timedelta(milliseconds=1500))
        async with lock.read:
            pass
        async with lock.write as guard:
            assert guard.fencing_token == 1
        assert backend.durations == [1.5, 1.5]

    run(main())
