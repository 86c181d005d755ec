"""`await lock.state()`: who holds a lock — worker, fencing token, lease end, and what the holder
told the store (host, pid, program, `purpose=`, since when) — on every store; never the token."""

import asyncio
import os
import socket
from datetime import datetime, timezone

import pytest

from tenure import HolderInfo, Lock, LockState, SettingsValidationError, TaskLock, Waiter


def test_state_names_the_holder_its_process_and_its_purpose(store):
    async def main():
        async with store() as provider:
            lock = Lock("export", backend=provider.lock(), worker="batch-1", purpose="nightly export")
            watcher = Lock("export", backend=provider.lock())
            free = await watcher.state()
            assert free == LockState("export", False, None, None, None, None, None)
            async with lock as handle:
                state = await watcher.state()
                assert (state.name, state.held, state.worker) == ("export", True, "batch-1")
                assert state.fencing_token == handle.fencing_token
                holder = state.holder
                assert isinstance(holder, HolderInfo)
                assert (holder.pid, holder.purpose) == (os.getpid(), "nightly export")
                assert holder.host == socket.gethostname()
                assert holder.program.startswith("python")
                now = datetime.now(timezone.utc)
                assert abs((now - holder.acquired_at).total_seconds()) < 60
                assert state.expires_at > holder.acquired_at
                assert handle.token not in repr(state)
            after = await watcher.state()
            assert not after.held and after.holder is None
            # (the last fence stays readable where the store keeps it: not etcd, whose fence is a revision)
            assert after.fencing_token == (None if store.kind == "etcd" else handle.fencing_token)

    asyncio.run(main())


def test_state_lists_who_waits_first_in_line_first(store):
    """Redis and PostgreSQL keep a line of waiters and list it; SQLite, etcd and memory keep none
    (their waiters poll, or are woken by each release) and say `None`."""

    async def main():
        async with store() as provider:
            holder = Lock("export", backend=provider.lock(), worker="batch-1")
            first = Lock("export", backend=provider.lock(), worker="batch-2", purpose="retry export")
            second = Lock("export", backend=provider.lock(), worker="batch-3")
            async def take(lock):
                async with lock:
                    pass

            async with holder as handle:
                waiters = [asyncio.ensure_future(take(first)), None]
                if store.kind in ("sqlite", "etcd", "memory"):
                    await asyncio.sleep(0.3)
                    state = await holder.state()
                    assert state.held and state.waiting is None, state
                else:
                    async def line():
                        while len((state := await holder.state()).waiting) < len([w for w in waiters if w]):
                            await asyncio.sleep(0.02)
                        return state

                    await asyncio.wait_for(line(), 10)
                    waiters[1] = asyncio.ensure_future(take(second))
                    state = await asyncio.wait_for(line(), 10)
                    assert [w.worker for w in state.waiting] == ["batch-2", "batch-3"], state.waiting
                    head = state.waiting[0]
                    assert isinstance(head, Waiter)
                    assert head.details is not None and head.details.purpose == "retry export"
                    assert head.details.pid == os.getpid()
                    assert head.since is not None and head.since <= state.waiting[1].since
                    assert abs((datetime.now(timezone.utc) - head.since).total_seconds()) < 60
                    assert handle.token not in repr(state)
            for waiter in waiters:
                if waiter is not None:
                    await asyncio.wait_for(waiter, 10)

    asyncio.run(main())


def test_a_task_lock_run_is_named_too(store):
    async def main():
        async with store() as provider:
            task = TaskLock("report", backend=provider.lock(), min_hold_duration=0.01, purpose="weekly report")
            async with task:
                state = await task.state()
                assert state.held and state.holder.purpose == "weekly report"
                assert state.fencing_token == task.fencing_token

    asyncio.run(main())


def test_a_bad_purpose_is_refused_when_the_lock_is_made():
    with pytest.raises(SettingsValidationError, match="purpose"):
        Lock("x", purpose="a\nb")
    with pytest.raises(SettingsValidationError, match="256"):
        Lock("x", purpose="p" * 10_000)


def test_readers_writers_permit_holders_and_leaders_name_their_purpose_to_tenure_locks(tmp_path):
    """`ReadWriteLock(..., purpose=)`, `Semaphore(..., purpose=)` and `LeaderElection(...,
    purpose=)`: each holder tells the store who it is and what for, read back as an operator reads
    it (`tenure locks --json`: TENURE_CLI)."""
    import json
    import subprocess

    from tenure import LeaderElection, ReadWriteLock, Semaphore, SQLiteProvider

    cli = os.environ.get("TENURE_CLI")
    assert cli, "set TENURE_CLI to the tenure command (scripts/test.sh python does)"
    path = tmp_path / "locks.db"

    async def main():
        async with SQLiteProvider(str(path)) as provider:
            catalog = ReadWriteLock("catalog", backend=provider.readwritelock(), purpose="rebuild")
            exports = Semaphore("exports", 2, backend=provider.semaphore(), purpose="export")
            election = LeaderElection("scheduler", backend=provider.leaderelection(), worker="s1", purpose="schedule")
            stop = asyncio.Event()
            running = asyncio.create_task(election(stop=stop))
            await asyncio.wait_for(election.wait_for_leader(), 10)
            async with catalog.write, exports:
                listing = [cli, "--backend", f"sqlite://{path}", "locks", "--json"]
                said = await asyncio.to_thread(subprocess.run, listing, check=True, capture_output=True, text=True)
            stop.set()
            await running
            document = json.loads(said.stdout)
            (leader,) = document["elections"]
            assert (leader["leader"], leader["leader_details"]["purpose"]) == ("s1", "schedule"), leader
            assert leader["leader_details"]["pid"] == os.getpid()
            locks = {entry["name"]: entry for entry in document["locks"]}
            for name, side, purpose in [("catalog", "write", "rebuild"), ("exports", "permit", "export")]:
                (holder,) = locks[name]["holders"]
                assert (holder["side"], holder["purpose"], holder["pid"]) == (side, purpose, os.getpid()), holder
                assert holder["host"] == socket.gethostname()

    asyncio.run(main())


def test_a_bad_purpose_is_refused_for_read_write_locks_and_semaphores():
    from tenure import ReadWriteLock, Semaphore

    with pytest.raises(SettingsValidationError, match="purpose"):
        ReadWriteLock("x", purpose="a\nb")
    with pytest.raises(SettingsValidationError, match="256"):
        Semaphore("x", 2, purpose="p" * 10_000)
