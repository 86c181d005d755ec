"""Who holds a lock: `await lock.state()` on a `Lock` or a `TaskLock` (a Tenure extension)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, NamedTuple, Optional


class HolderInfo(NamedTuple):
    """What a holder told the store when it took the lock. Immutable."""

    host: str
    pid: int
    program: str
    purpose: Optional[str]
    acquired_at: datetime


class Waiter(NamedTuple):
    """One in a lock's waiting line: its worker, since when it waits (`None` where the store does
    not keep it), and what it told the store (`None` if nothing). Immutable."""

    worker: str
    since: Optional[datetime]
    details: Optional[HolderInfo]


class LockState(NamedTuple):
    """A lock as the store holds it now: who holds it, under which fencing token, until when, and
    what the holder told the store (`holder`: `None` when free, or when the holder told nothing, as
    a grelmicro process does); `waiting`: who waits for it, first in line first (`None` where the
    store keeps no line: SQLite, etcd, memory, a user-written backend). Never an ownership token.
    Immutable."""

    name: str
    held: bool
    fencing_token: Optional[int]
    worker: Optional[str]
    expires_at: Optional[datetime]
    holder: Optional[HolderInfo]
    waiting: Optional[tuple[Waiter, ...]] = None


def _time(micros: Optional[int]) -> Optional[datetime]:
    return None if micros is None else datetime.fromtimestamp(micros / 1_000_000, timezone.utc)


def _holder(details: Any) -> Optional[HolderInfo]:
    if details is None:
        return None
    host, pid, program, purpose, acquired = details
    return HolderInfo(host, pid, program, purpose, _time(acquired))  # type: ignore[arg-type]


def lock_state(native: Any) -> LockState:
    """The native layer's `(name, fence, worker, expires µs, details, line)` as a `LockState`."""
    name, fence, worker, expires, details, line = native
    waiting = None if line is None else tuple(Waiter(w, _time(since), _holder(d)) for w, since, d in line)
    return LockState(name, worker is not None, fence, worker, _time(expires), _holder(details), waiting)
