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


class LockState(NamedTuple):
    """A lock as the store holds it now: who holds it, under which fencing token, until when, and
    what the holder told the store (`holder`: `None` when free, or when the holder told nothing, as
    a grelmicro process does). Never the ownership token. Immutable."""

    name: str
    held: bool
    fencing_token: Optional[int]
    worker: Optional[str]
    expires_at: Optional[datetime]
    holder: Optional[HolderInfo]


def _time(micros: Optional[int]) -> Optional[datetime]:
    return None if micros is None else datetime.fromtimestamp(micros / 1_000_000, timezone.utc)


def lock_state(native: Any) -> LockState:
    """The native layer's `(name, fence, worker, expires µs, details)` as a `LockState`."""
    name, fence, worker, expires, details = native
    holder = None
    if details is not None:
        host, pid, program, purpose, acquired = details
        holder = HolderInfo(host, pid, program, purpose, _time(acquired))  # type: ignore[arg-type]
    return LockState(name, worker is not None, fence, worker, _time(expires), holder)
