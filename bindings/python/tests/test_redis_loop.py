"""The Redis connection runs on the event loop's own thread (its socket watched by the loop's
selector): tasks of one loop take turns through pushed releases, plain threads are served while
the loop runs, a provider opened on one loop serves the next one, and a killed and restarted
server is reached again. (test_lock.py runs the Lock behaviours, cancellation among them, on
Redis too.)"""

import asyncio
import gc
import os
import shutil
import socket
import subprocess
import threading
import time
import uuid

import pytest

from tenure import Lock, LockAcquireError, RedisProvider
from tenure.errors import LockLockedCheckError

# Runs again on Python 3.14 beside grelmicro (`pytest -m py314`):
# sockets in the event loop, whose policy 3.14 changed.
pytestmark = pytest.mark.py314

REDIS_URL = os.environ.get("TENURE_REDIS_URL", "redis://127.0.0.1:6379")


def url() -> str:
    return f"{REDIS_URL}/?prefix=pytest-{uuid.uuid4().hex}:"


def test_tasks_of_one_loop_take_turns_through_pushed_releases():
    async def main():
        async with RedisProvider(url()) as store:
            # Waiters retry only once a minute: only pushed releases can finish this in time.
            lock = Lock("turns", backend=store.lock(), retry_interval=60, env_load=False)
            fences, inside = [], []

            async def worker():
                for _ in range(10):
                    async with lock as handle:
                        assert not inside, "two holders at once"
                        inside.append(1)
                        fences.append(handle.fencing_token)
                        await asyncio.sleep(0)
                        inside.pop()

            await asyncio.wait_for(asyncio.gather(*(worker() for _ in range(5))), 30)
            assert len(fences) == 50 and fences == sorted(set(fences))

    asyncio.run(main())


def test_threads_are_served_while_the_loop_runs():
    async def main():
        async with RedisProvider(url()) as store:
            lock = Lock("threads", backend=store.lock(), retry_interval=60, env_load=False)
            fences, inside = [], []

            def worker():
                for _ in range(5):
                    with lock.from_thread as handle:
                        assert not inside, "two holders at once"
                        inside.append(1)
                        fences.append(handle.fencing_token)
                        time.sleep(0.001)
                        inside.pop()

            await asyncio.wait_for(asyncio.gather(*(asyncio.to_thread(worker) for _ in range(3))), 30)
            assert len(fences) == 15 and len(set(fences)) == 15

    asyncio.run(main())


def test_a_provider_opened_on_one_loop_serves_the_next():
    provider = RedisProvider(url())
    asyncio.run(provider.open())

    async def use():
        async with Lock("loops", backend=provider.lock(), env_load=False) as handle:
            return handle.fencing_token

    first = asyncio.run(use())  # the loop that opened it is closed: the connection is dialed anew
    second = asyncio.run(use())
    assert 0 < first < second
    asyncio.run(provider.close())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, directory) -> subprocess.Popen:
    server = subprocess.Popen(
        [shutil.which("redis-server") or "redis-server", "--port", str(port), "--bind", "127.0.0.1",
         "--dir", str(directory), "--save", "", "--appendonly", "yes", "--appendfsync", "always"],
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return server
        except OSError:
            time.sleep(0.05)
    server.kill()
    raise RuntimeError("redis-server did not start")


def test_a_killed_and_restarted_server_is_reached_again(tmp_path):
    port = free_port()
    server = start_server(port, tmp_path)
    try:

        async def main():
            nonlocal server
            async with RedisProvider(f"redis://127.0.0.1:{port}/?command_timeout=0.5") as store:
                lock = Lock("crash", backend=store.lock(), backend_timeout=0.5, env_load=False)
                async with lock as handle:
                    before = handle.fencing_token
                server.kill()
                server.wait()
                with pytest.raises((LockAcquireError, LockLockedCheckError)):
                    async with lock:
                        pass
                server = start_server(port, tmp_path)
                deadline = time.monotonic() + 10
                while True:
                    try:
                        async with lock as handle:
                            assert handle.fencing_token == before + 1, "the fence survived the crash"
                        break
                    except LockAcquireError:
                        assert time.monotonic() < deadline, "the server was not reached again"
                        await asyncio.sleep(0.05)

        asyncio.run(main())
    finally:
        server.kill()
        server.wait()


# The abandoned tasks' coroutines are closed when collected, after the provider: their exits fail.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_wait_left_on_a_closed_loop_is_dropped_when_the_connection_is_dialed_anew():
    provider = RedisProvider(url())
    first = asyncio.new_event_loop()
    first.run_until_complete(provider.open())
    lock = Lock("abandoned", backend=provider.lock(), lease_duration=0.5, retry_interval=60, env_load=False)

    async def abandon():
        holding = asyncio.Event()

        async def holder():
            async with lock:
                holding.set()
                await asyncio.sleep(3600)

        async def waiter():
            async with lock:
                pass

        tasks = [asyncio.create_task(holder())]
        await holding.wait()
        tasks.append(asyncio.create_task(waiter()))
        await asyncio.sleep(0.1)  # the waiter is queued for the release's wake-up
        return tasks

    tasks = first.run_until_complete(abandon())
    first.close()  # neither task is cancelled: the loop is simply gone

    async def use():
        # A new connection on this loop: the redial wakes every queued waiter, the abandoned one
        # included, whose loop is closed: its wait is dropped (not run, not deadlocked).
        assert await asyncio.wait_for(lock.locked(), 5)
        await asyncio.sleep(0.6)  # the abandoned holder's lease runs out

        async def take():
            async with lock as handle:
                return handle.fencing_token

        # The abandoned waiter's place in the store's queue lapses within 2 s (or the store
        # hands it the lock, whose 0.5 s lease then runs out): the new acquire gets its turn.
        return await asyncio.wait_for(take(), 10)

    assert asyncio.run(use()) >= 2
    assert all(not t.done() for t in tasks)
    asyncio.run(provider.close())
    del tasks
    gc.collect()  # here, where the warning filter applies
