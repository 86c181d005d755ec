"""`LeaderElection` on memory, SQLite and Redis (the `store` fixture): one leader, hand-over on
stop, guards, `lead`, records (spec §1.6, §3.5, §8.6)."""

import asyncio
from datetime import datetime, timedelta

import pytest

from tenure import LeaderElection, LeaderRecord, MemoryProvider, OutOfContextError, SettingsValidationError, WouldBlockError

FAST = {"lease_duration": 1, "renew_deadline": 0.7, "retry_interval": 0.05, "backend_timeout": 0.3, "env_load": False}


def run(coro):
    return asyncio.run(coro)


def election(provider, worker, **kwargs):
    settings = {**FAST, **kwargs}
    return LeaderElection("svc", backend=provider.leaderelection(), worker=worker, **settings)


def test_one_of_two_leads_and_a_stop_hands_over_at_once(store):
    async def main():
        async with store() as provider:
            a, b = election(provider, "a", metadata={"pod": "p1"}), election(provider, "b", lease_duration=60, renew_deadline=45, retry_interval=20)
            stop_a = asyncio.Event()
            task_a = asyncio.create_task(a(stop=stop_a))
            await asyncio.wait_for(a.wait_for_leader(), 5)
            task_b = asyncio.create_task(b())
            await asyncio.sleep(0.1)
            assert a.is_leader() and not b.is_leader()
            record = a.record
            assert isinstance(record, LeaderRecord)
            assert (record.holder, record.transitions, dict(record.metadata)) == ("a", 0, {"pod": "p1"})
            assert record.lease_duration == timedelta(seconds=1)
            assert isinstance(record.renewed_at, datetime) and record.renewed_at.tzinfo is not None
            assert a.last_confirmation_age() is not None and a.is_leader_confirmed_within(1.0)
            assert not a.is_leader_confirmed_within(-1)
            stop_a.set()
            await task_a
            assert not a.is_leader() and not a.is_running()
            # b retries only every 20 s: the release's wake-up hands over.
            await asyncio.wait_for(b.wait_for_leader(), 5)
            task_b.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task_b
            assert not b.is_leader()

    run(main())


def test_each_term_has_a_fencing_token_above_the_last(store):
    async def main():
        async with store() as provider:
            a, b = election(provider, "a"), election(provider, "b")
            assert a.fencing_token is None
            stop_a = asyncio.Event()
            task_a = asyncio.create_task(a(stop=stop_a))
            await asyncio.wait_for(a.wait_for_leader(), 5)
            first = a.fencing_token
            assert isinstance(first, int) and first >= 1
            task_b = asyncio.create_task(b())
            await asyncio.sleep(0.2)
            assert b.fencing_token is None and a.fencing_token == first, "a renewal keeps the term's token"
            stop_a.set()
            await task_a
            assert a.fencing_token is None
            await asyncio.wait_for(b.wait_for_leader(), 5)
            assert b.fencing_token > first
            task_b.cancel()
            await asyncio.gather(task_b, return_exceptions=True)

    run(main())


def test_the_guard_admits_only_the_leader(store):
    async def main():
        async with store() as provider:
            e = election(provider, "a")
            with pytest.raises(WouldBlockError, match="Not leader: svc"):
                async with e.guard():
                    pass
            task = asyncio.create_task(e())
            async with e:  # waits for leadership
                async with e.guard():
                    pass
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    run(main())


def test_lead_runs_work_while_leading_and_drops_it_on_loss(store):
    async def main():
        async with store() as provider:
            e = election(provider, "a")
            task = asyncio.create_task(e())

            async def work(x):
                return x * 2

            assert await asyncio.wait_for(e.lead(work, 21), 5) == 42

            started = asyncio.Event()

            async def forever():
                started.set()
                await asyncio.sleep(3600)

            leading = asyncio.create_task(e.lead(forever))
            await started.wait()
            task.cancel()  # stopping the election ends leadership: the work is dropped
            await asyncio.gather(task, return_exceptions=True)
            assert await asyncio.wait_for(leading, 5) is None

    run(main())


def test_settings_are_validated_and_a_backend_is_required():
    with pytest.raises(SettingsValidationError):
        LeaderElection("svc", backend=MemoryProvider().leaderelection(), lease_duration=1, renew_deadline=2)

    async def main():
        with pytest.raises(OutOfContextError):
            await LeaderElection("svc", env_load=False).wait_for_leader()

    run(main())


def test_lead_with_repeat_runs_the_work_again_until_it_raises(store):
    async def main():
        async with store() as provider:
            e = election(provider, "a")
            task = asyncio.create_task(e())
            runs = []

            async def work():
                runs.append(len(runs))
                if len(runs) == 3:
                    raise RuntimeError("done")

            with pytest.raises(RuntimeError, match="done"):
                await asyncio.wait_for(e.lead(work, repeat=True), 5)
            assert runs == [0, 1, 2]
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    run(main())
