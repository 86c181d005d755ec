"""A read-write lock backend and a semaphore backend written the way users write them: plain
classes with async methods and no import from tenure. `DictReadWrite` follows grelmicro 0.44's
memory adapter (spec §5.4, §6.1): per name a generation, a writer with its expiry and whether it
expired, readers and writers' intents with theirs, reaped before every call; it answers its own
`WriteGrant` and `ReadWriteLockState` dataclasses. `DictSemaphore` keeps holders with their
fencing tokens, and keeps no line (a backend may ignore `wait`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Optional


@dataclass(frozen=True)
class WriteGrant:
    fencing_token: int
    poisoned: bool


@dataclass(frozen=True)
class ReadWriteLockState:
    generation: int
    writing: bool
    readers: int
    waiting_writers: int


@dataclass
class _Entry:
    generation: int = 0
    writer: Optional[str] = None
    writer_expire_at: float = 0.0
    writer_expired: bool = False
    readers: dict[str, float] = field(default_factory=dict)
    intents: dict[str, float] = field(default_factory=dict)


class DictReadWrite:
    """grelmicro 0.44's read-write lock semantics in a dict."""

    def __init__(self) -> None:
        self.entries: dict[str, _Entry] = {}
        self.calls: list[str] = []

    def _reap(self, name: str) -> _Entry:
        entry = self.entries.setdefault(name, _Entry())
        now = time.monotonic()
        entry.readers = {t: at for t, at in entry.readers.items() if at >= now}
        entry.intents = {t: at for t, at in entry.intents.items() if at >= now}
        if entry.writer is not None and entry.writer_expire_at < now:
            entry.writer, entry.writer_expired = None, True
        return entry

    async def acquire_read(self, *, name: str, token: str, duration: timedelta) -> Optional[int]:
        self.calls.append(f"acquire_read {name}")
        assert isinstance(duration, timedelta)
        entry = self._reap(name)
        if token not in entry.readers and (entry.writer is not None or entry.intents):
            return None
        entry.readers[token] = time.monotonic() + duration.total_seconds()
        return entry.generation

    async def acquire_write(
        self, *, name: str, token: str, duration: timedelta, intent: bool = True
    ) -> Optional[WriteGrant]:
        self.calls.append(f"acquire_write {name} intent={intent}")
        entry = self._reap(name)
        until = time.monotonic() + duration.total_seconds()
        if entry.writer == token:
            entry.writer_expire_at = until
            return WriteGrant(entry.generation, False)
        if entry.writer is not None or entry.readers:
            if intent:
                entry.intents[token] = until
            return None
        entry.intents.pop(token, None)
        poisoned, entry.writer_expired = entry.writer_expired, False
        entry.generation += 1
        entry.writer, entry.writer_expire_at = token, until
        return WriteGrant(entry.generation, poisoned)

    async def release_read(self, *, name: str, token: str) -> bool:
        return self._reap(name).readers.pop(token, None) is not None

    async def release_write(self, *, name: str, token: str) -> bool:
        entry = self._reap(name)
        if entry.writer != token:
            return False
        entry.writer, entry.writer_expired = None, False
        return True

    async def cancel_intent(self, *, name: str, token: str) -> bool:
        self.calls.append(f"cancel_intent {name}")
        return self._reap(name).intents.pop(token, None) is not None

    async def downgrade(self, *, name: str, token: str, duration: timedelta) -> Optional[int]:
        entry = self._reap(name)
        if entry.writer != token:
            return None
        entry.writer = None
        entry.readers[token] = time.monotonic() + duration.total_seconds()
        return entry.generation

    async def state(self, *, name: str) -> ReadWriteLockState:
        entry = self._reap(name)
        return ReadWriteLockState(entry.generation, entry.writer is not None, len(entry.readers), len(entry.intents))

    async def owned_read(self, *, name: str, token: str) -> bool:
        return token in self._reap(name).readers

    async def owned_write(self, *, name: str, token: str) -> bool:
        return self._reap(name).writer == token


@dataclass(frozen=True)
class SemaphoreState:
    permits: int
    holders: int
    waiting: int
    fence: int


class DictSemaphore:
    """Permits with leases and fencing tokens in a dict; no line (`wait` is ignored)."""

    def __init__(self) -> None:
        self.holders: dict[str, dict[str, tuple[float, int]]] = {}  # name -> token -> (expires, fence)
        self.counts: dict[str, int] = {}
        self.fences: dict[str, int] = {}
        self.most_at_once = 0

    def _live(self, name: str) -> dict[str, tuple[float, int]]:
        now = time.monotonic()
        live = {t: h for t, h in self.holders.get(name, {}).items() if h[0] >= now}
        self.holders[name] = live
        if not live:
            self.counts.pop(name, None)
        return live

    async def acquire(
        self, *, name: str, token: str, duration: timedelta, permits: int, wait: Optional[timedelta] = None
    ) -> tuple[Optional[int], int]:
        live = self._live(name)
        count = self.counts.setdefault(name, permits)
        if count != permits:
            return None, count
        until = time.monotonic() + duration.total_seconds()
        if token in live:
            live[token] = (until, live[token][1])
            return live[token][1], count
        if len(live) >= count:
            return None, count
        fence = self.fences[name] = self.fences.get(name, 0) + 1
        live[token] = (until, fence)
        self.most_at_once = max(self.most_at_once, len(live))
        return fence, count

    async def release(self, *, name: str, token: str) -> bool:
        return self._live(name).pop(token, None) is not None

    async def owned(self, *, name: str, token: str) -> bool:
        return token in self._live(name)

    async def state(self, *, name: str) -> SemaphoreState:
        live = self._live(name)
        return SemaphoreState(self.counts.get(name, 0), len(live), 0, self.fences.get(name, 0))
