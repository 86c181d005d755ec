"""A forked child never renews or releases its parent's leases (DESIGN §4.7), and can still use
Tenure with stores it opens itself."""

import asyncio
import os

import pytest

from tenure import LeaderElection, Lock, MemoryProvider, OutOfContextError, SQLiteProvider

# Runs again on Python 3.14 beside grelmicro (`pytest -m py314`):
# fork() with threads running, which 3.12+ warns about.
pytestmark = pytest.mark.py314


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX")
def test_a_forked_child_cannot_touch_the_parents_leases(tmp_path):
    path = str(tmp_path / "locks.db")
    provider = SQLiteProvider(path)
    asyncio.run(provider.open())
    lock = Lock("cart", backend=provider.lock(), env_load=False)
    handle = lock.from_thread.acquire()
    memory = MemoryProvider()
    election = LeaderElection("svc", backend=memory.leaderelection(), env_load=False, lease_duration=10, renew_deadline=8)

    async def lead():
        task = asyncio.create_task(election())
        await election.wait_for_leader()
        return task

    loop = asyncio.new_event_loop()
    task = loop.run_until_complete(lead())
    assert election.is_leader()

    pid = os.fork()
    if pid == 0:  # the child
        code = 0
        try:
            try:
                lock.from_thread.release()
                code = 10  # released the parent's lease
            except OutOfContextError:
                pass
            if election.is_leader() or election.record is not None:
                code = 11  # believes it leads

            async def own_stores():
                async with SQLiteProvider(path) as mine:
                    assert await Lock("cart", backend=mine.lock(), env_load=False).locked()  # still the parent's
                    async with Lock("other", backend=mine.lock(), env_load=False) as other:
                        assert other.fencing_token == 1

            asyncio.run(own_stores())
        except BaseException:
            code = 12
        os._exit(code)

    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert lock.from_thread.owned(), "the parent still holds its lease"
    assert lock.from_thread.extend().fencing_token == handle.fencing_token
    lock.from_thread.release()
    assert election.is_leader()
    task.cancel()
    loop.run_until_complete(asyncio.gather(task, return_exceptions=True))
    loop.close()
    asyncio.run(provider.close())
