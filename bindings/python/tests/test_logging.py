"""The driver's events reach Python's `logging` under the logger `tenure`, at the levels a Python
user expects."""

import asyncio
import logging
import time

from conftest import memory_election


def wait_for(records, text, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [r for r in records if text in r.getMessage()]
        if found:
            return found[0]
        time.sleep(0.01)
    raise AssertionError(f"no log record with {text!r} in {[r.getMessage() for r in records]}")


def test_leadership_changes_are_logged_under_tenure(caplog):
    caplog.set_level(logging.DEBUG, logger="tenure")

    async def main():
        election = memory_election("svc")
        task = asyncio.create_task(election())
        await asyncio.wait_for(election.wait_for_leader(), 5)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())
    gained = wait_for(caplog.records, "acquired leadership")
    assert (gained.name, gained.levelno) == ("tenure", logging.INFO)
    assert "svc" in gained.getMessage()
    lost = wait_for(caplog.records, "lost leadership")
    assert lost.levelno == logging.WARNING
