"""Backends written the way users write them for grelmicro: plain classes with async methods, no
import from tenure needed. `DictBackend` keeps locks and leader records in dicts (durations as
`timedelta`, grelmicro 0.44's form); `SecondsLocks` takes `duration` as float seconds (the API
reference's form). Both are per-process, like grelmicro's memory adapters."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Mapping, Optional


@dataclass(frozen=True)
class Record:
    """A leader record of the user's own (grelmicro's `LeaderRecord` has these fields)."""

    holder: str
    lease_duration: timedelta
    acquired_at: datetime
    renewed_at: datetime
    transitions: int
    metadata: Mapping[str, str] = field(default_factory=dict)


class DictBackend:
    """Locks with fencing tokens and leader records in two dicts."""

    scope = "process"

    def __init__(self) -> None:
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self.locks: dict[str, tuple[str, float, int]] = {}  # name -> (token, expires, fence)
        self.fences: dict[str, int] = {}
        self.leaders: dict[str, Record] = {}
        self.calls: list[str] = []

    async def __aenter__(self) -> DictBackend:
        self._loop = asyncio.get_running_loop()
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    def _live(self, name: str) -> Optional[tuple[str, float, int]]:
        held = self.locks.get(name)
        return held if held is not None and held[1] > time.monotonic() else None

    async def acquire(self, *, name: str, token: str, duration: timedelta) -> Optional[int]:
        self.calls.append(f"acquire {name}")
        assert isinstance(duration, timedelta)
        held = self._live(name)
        if held is not None and held[0] != token:
            return None
        fence = held[2] if held is not None else self.fences.get(name, 0) + 1
        self.fences[name] = fence
        self.locks[name] = (token, time.monotonic() + duration.total_seconds(), fence)
        return fence

    async def release(self, *, name: str, token: str) -> bool:
        self.calls.append(f"release {name}")
        if name.startswith("leader:"):
            record = self.leaders.get(name)
            if record is None or record.holder != token or self._expired(record):
                return False
            del self.leaders[name]
            return True
        held = self._live(name)
        if held is None or held[0] != token:
            return False
        del self.locks[name]
        return True

    async def locked(self, *, name: str) -> bool:
        return self._live(name) is not None

    async def owned(self, *, name: str, token: str) -> bool:
        held = self._live(name)
        return held is not None and held[0] == token

    @staticmethod
    def _expired(record: Record) -> bool:
        return datetime.now(timezone.utc) >= record.renewed_at + record.lease_duration

    async def acquire_or_renew(
        self, *, name: str, token: str, duration: timedelta, metadata: Optional[Mapping[str, str]] = None
    ) -> Record:
        now = datetime.now(timezone.utc)
        current = self.leaders.get(name)
        if current is not None and current.holder != token and not self._expired(current):
            return current
        if current is not None and current.holder == token and not self._expired(current):
            record = Record(token, duration, current.acquired_at, now, current.transitions, dict(metadata or {}))
        else:
            transitions = 0 if current is None else current.transitions + 1
            record = Record(token, duration, now, now, transitions, dict(metadata or {}))
        self.leaders[name] = record
        return record

    async def get(self, *, name: str) -> Optional[Record]:
        current = self.leaders.get(name)
        return None if current is None or self._expired(current) else current


class SecondsLocks:
    """A lock backend taking `duration` as float seconds, as the API reference writes it."""

    def __init__(self) -> None:
        self.inner = DictBackend()
        self.durations: list[object] = []

    async def acquire(self, *, name: str, token: str, duration: float) -> Optional[int]:
        self.durations.append(duration)
        return await self.inner.acquire(name=name, token=token, duration=timedelta(seconds=duration))

    async def release(self, *, name: str, token: str) -> bool:
        return await self.inner.release(name=name, token=token)

    async def locked(self, *, name: str) -> bool:
        return await self.inner.locked(name=name)

    async def owned(self, *, name: str, token: str) -> bool:
        return await self.inner.owned(name=name, token=token)
