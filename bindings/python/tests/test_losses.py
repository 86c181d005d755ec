"""A kept lease's losses told by cause, the warning before one, and a loss that never escapes a
background task (a Tenure extension): `Lock.hold(..., warn_below=, on_warning=)`."""

import asyncio
import logging

import pytest
from dict_backend import DictBackend

from tenure import Lock, LockLostError, SettingsValidationError


class Failing(DictBackend):
    """A user-written backend whose renewals fail (raise) while `failing` is set."""

    failing = False

    async def acquire(self, *, name, token, duration):
        if self.failing:
            raise ConnectionError("the store is unreachable")
        return await super().acquire(name=name, token=token, duration=duration)


def run_quietly(main):
    """Runs `main` on a loop that records what would otherwise escape: exceptions no task
    retrieved and callbacks that raised."""
    escaped = []

    async def wrapped():
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: escaped.append(context))
        return await main()

    result = asyncio.run(wrapped())
    assert escaped == [], f"escaped the tasks: {escaped}"
    return result


def test_the_warning_comes_before_the_loss_which_says_the_store_was_unreachable():
    async def main():
        backend = Failing()
        lock = Lock("job", backend=backend, lease_duration=1.5, env_load=False)
        warnings, body = [], []

        async def checkpoint(left):
            await asyncio.sleep(0)  # (a coroutine function is awaited)
            warnings.append(left)

        with pytest.raises(LockLostError) as lost:
            async with lock.hold(max_hold=60, on_warning=checkpoint):
                backend.failing = True
                await asyncio.sleep(30)
                body.append("end")  # never: cancelled by the loss
        assert lost.value.reason == "unreachable", lost.value
        assert "unreachable" in str(lost.value)
        assert len(warnings) == 1, warnings
        left = warnings[0]
        assert 0 < left <= 0.5, f"a third of the lease by default, {left} left"
        assert body == []

    run_quietly(main)


def test_a_threshold_of_the_users_and_a_callback_that_raises_is_logged(caplog):
    caplog.set_level(logging.ERROR, logger="tenure")

    async def main():
        backend = Failing()
        lock = Lock("job", backend=backend, lease_duration=1.5, env_load=False)
        warnings = []

        def checkpoint(left):
            warnings.append(left)
            raise RuntimeError("the checkpoint failed")

        async with lock.hold(max_hold=60, warn_below=0.7, on_warning=checkpoint):
            backend.failing = True
            while not warnings:
                await asyncio.sleep(0.01)
            backend.failing = False  # renewals get through again: kept
            await asyncio.sleep(1.6)
            assert await lock.owned()
        assert 0.3 < warnings[0] <= 0.7, warnings
        assert not await lock.locked()

    run_quietly(main)
    assert any("on_warning of the lock 'job' raised" in r.getMessage() for r in caplog.records)


def test_a_regressed_fence_on_renewal_is_a_loss_by_fence_regression():
    class Regressing(DictBackend):
        regress = False

        async def acquire(self, *, name, token, duration):
            fence = await super().acquire(name=name, token=token, duration=duration)
            return fence - 1 if self.regress and fence is not None else fence

    async def main():
        backend = Regressing()
        lock = Lock("job", backend=backend, lease_duration=0.6, env_load=False)
        backend.fences["lock:job"] = 7
        with pytest.raises(LockLostError) as lost:
            async with lock.hold(max_hold=60):
                backend.regress = True
                await asyncio.sleep(30)
        assert lost.value.reason == "fence_regression", lost.value

    run_quietly(main)


def test_warn_below_not_under_half_the_lease_is_refused_and_the_lock_given_back():
    async def main():
        lock = Lock("job", backend=DictBackend(), lease_duration=2, env_load=False)
        with pytest.raises(SettingsValidationError, match="warn_below must be less than half the lease_duration"):
            async with lock.hold(max_hold=60, warn_below=1.5):
                pass
        assert not await lock.locked()
        for bad in (-1, 0, float("nan")):
            with pytest.raises(SettingsValidationError, match="warn_below must be"):
                async with lock.hold(max_hold=60, warn_below=bad):
                    pass
        assert not await lock.locked()
        with pytest.raises(SettingsValidationError, match="on_warning must be callable"):
            lock.hold(max_hold=60, on_warning="checkpoint")

    run_quietly(main)


def test_a_lease_lost_with_nobody_watching_escapes_no_task():
    """A hold whose body ignores the loss until the end, and a loss while the callback task runs:
    nothing reaches the loop's exception handler."""

    async def main():
        backend = Failing()
        lock = Lock("job", backend=backend, lease_duration=0.6, env_load=False)
        with pytest.raises(LockLostError):
            async with lock.hold(max_hold=60, on_warning=lambda left: asyncio.sleep(5)):
                backend.failing = True
                try:
                    await asyncio.sleep(30)
                finally:
                    await asyncio.sleep(0.2)  # cleanup in the cancelled body
        await asyncio.sleep(0.5)

    run_quietly(main)
