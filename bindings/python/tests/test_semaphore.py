"""`Semaphore` on every store (the `store` fixture): at most `permits` holders, a fencing token per
permit, waiters in arrival order, the stored count, `from_thread`, `hold`, the adapter's calls and
`Coordination`, written the way a user of `Lock` writes them."""

import asyncio
import threading

import pytest
from conftest import holders_at_once

from tenure import (
    Coordination,
    LockNotOwnedError,
    LockReentrantError,
    LockTimeoutError,
    MemoryProvider,
    MemorySemaphoreAdapter,
    Semaphore,
    SemaphoreState,
    SettingsValidationError,
    WouldBlockError,
)


def run(coro):
    return asyncio.run(coro)


async def eventually(what, check, within=5.0):
    deadline = asyncio.get_running_loop().time() + within
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


def test_at_most_permits_holders_each_with_a_greater_fencing_token(store):
    async def main():
        async with store() as provider:
            pool = Semaphore("exports", 2, backend=provider.semaphore(), retry_interval=0.01)
            most, fences = await holders_at_once(pool, 6, hold=0.05)
            assert 1 <= most <= 2, f"{most} holders at once"
            assert len(set(fences)) == 6 and min(fences) >= 1, "every permit has a token of its own"

            state = await pool.state()
            assert (state.holders, state.waiting, state.permits) == (0, 0, 0)
            assert state.fence == max(fences)
            # Two permits are two: held together (by two holders), a third is refused.
            others = [Semaphore("exports", 2, backend=provider.semaphore()) for _ in range(3)]
            held = [await others[0].acquire(), await others[1].acquire()]
            with pytest.raises(WouldBlockError):
                await others[2].acquire_nowait()
            assert min(h.fencing_token for h in held) > max(fences)
            await others[0].release()
            await others[1].release()

    run(main())


def test_a_full_semaphore_refuses_nowait_times_out_and_says_it_is_locked(store):
    async def main():
        async with store() as provider:
            pool = Semaphore("pool", 1, backend=provider.semaphore())
            assert not await pool.locked()
            held = await pool.acquire()
            assert held.name == "pool" and held.fencing_token >= 1
            assert await pool.owned() and await pool.locked()
            with pytest.raises(LockReentrantError):
                await pool.acquire()

            async def other(call):
                return await call()

            with pytest.raises(WouldBlockError):
                await asyncio.create_task(other(pool.acquire_nowait))
            with pytest.raises(LockTimeoutError):
                await asyncio.create_task(other(lambda: pool.acquire(timeout=0.2)))
            assert (await pool.state()).waiting == 0, "the timed-out waiter left the line"
            assert (await pool.extend()).fencing_token == held.fencing_token
            await pool.release()
            with pytest.raises(LockNotOwnedError):
                await pool.release()
            assert not await pool.locked()

    run(main())


def test_waiters_are_served_in_arrival_order(store):
    async def main():
        async with store() as provider:
            pool = Semaphore("line", 1, backend=provider.semaphore(), retry_interval=0.01)
            order = []
            await pool.acquire()

            async def waiter(label):
                async with pool:
                    order.append(label)

            tasks = []
            for ahead, label in enumerate(["first", "second", "third"]):
                tasks.append(asyncio.create_task(waiter(label)))

                async def placed(ahead=ahead):
                    return (await pool.state()).waiting == ahead + 1

                await eventually(f"{label} in line", placed)
            await pool.release()
            await asyncio.wait_for(asyncio.gather(*tasks), 20)
            assert order == ["first", "second", "third"]

    run(main())


def test_another_count_is_refused_while_the_name_is_in_use(store):
    async def main():
        async with store() as provider:
            two = Semaphore("jobs", 2, backend=provider.semaphore())
            three = Semaphore("jobs", 3, backend=provider.semaphore())
            await two.acquire()

            async def other():
                return await three.acquire(timeout=1)

            with pytest.raises(SettingsValidationError, match="in use with 2 permits"):
                await asyncio.create_task(other())
            await two.release()
            handle = await three.acquire_nowait()
            assert (await three.state()).permits == 3 and handle.fencing_token >= 2
            await three.release()

    run(main())


def test_permits_and_names_are_checked_at_construction():
    with pytest.raises(SettingsValidationError, match="permit"):
        Semaphore("pool", 0, backend=MemorySemaphoreAdapter())
    with pytest.raises(SettingsValidationError):
        Semaphore("pool", -1, backend=MemorySemaphoreAdapter())
    with pytest.raises(TypeError):
        Semaphore("pool", True, backend=MemorySemaphoreAdapter())
    with pytest.raises(TypeError):
        Semaphore("pool", 2.5, backend=MemorySemaphoreAdapter())
    with pytest.raises(SettingsValidationError):
        Semaphore("", 2, backend=MemorySemaphoreAdapter())
    assert Semaphore("pool", 4, backend=MemorySemaphoreAdapter()).permits == 4


def test_threads_hold_permits_with_from_thread():
    async def main():
        pool = Semaphore("threads", 2, backend=MemorySemaphoreAdapter())
        inside, most, lock = [0], [0], threading.Lock()

        def work():
            with pool.from_thread as permit:
                assert permit.fencing_token >= 1
                with lock:
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                threading.Event().wait(0.05)
                with lock:
                    inside[0] -= 1

        await asyncio.gather(*(asyncio.to_thread(work) for _ in range(5)))
        assert most[0] == 2

    run(main())


def test_a_held_permit_is_kept_alive_past_its_lease():
    async def main():
        pool = Semaphore("kept", 1, backend=MemorySemaphoreAdapter(), lease_duration=0.2)
        async with pool.hold(max_hold=10) as permit:
            await asyncio.sleep(0.6)
            assert await pool.owned()
            assert (await pool.extend()).fencing_token == permit.fencing_token

        assert not await pool.locked()

    run(main())


def test_coordination_hands_out_semaphores():
    async def main():
        async with Coordination(MemoryProvider()) as coordination:
            pool = coordination.semaphore("pool", 3)
            async with pool as permit:
                assert permit.fencing_token == 1
            async with Semaphore("pool", 3) as again:  # the enclosing Coordination's backend
                assert again.fencing_token >= 1

    run(main())


def test_the_adapter_and_low_level_calls():
    async def main():
        async with MemoryProvider() as provider:
            backend = provider.semaphore()
            assert await backend.acquire(name="semaphore:p", token="a", duration=5, permits=1) == (1, 1)
            assert await backend.acquire(name="semaphore:p", token="b", duration=5, permits=1, wait=5) == (None, 1)
            assert await backend.state(name="semaphore:p") == SemaphoreState(1, 1, 1, 1)
            assert await backend.owned(name="semaphore:p", token="a")
            assert await backend.release(name="semaphore:p", token="a")
            pool = Semaphore("q", 2, backend=backend)
            assert await pool.do_acquire("t1", duration=5) == 1
            assert await pool.do_owned("t1") and not await pool.do_owned("t2")
            assert await pool.do_release("t1") and not await pool.do_release("t1")

    run(main())


def test_a_lock_backend_is_no_semaphore_backend_and_says_what_it_lacks():
    class Mine:
        async def acquire(self, name, token, duration):
            return 1

        async def release(self, name, token):
            return True

        async def locked(self, name):
            return False

        async def owned(self, name, token):
            return False

    async def main():
        with pytest.raises(TypeError, match="needs a SemaphoreBackend: Mine has no state method"):
            await Semaphore("pool", 2, backend=Mine()).acquire()

    run(main())
