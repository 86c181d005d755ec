"""The backends a provider hands out — `LockAdapter`, `LeaderElectionAdapter`, `ScheduleAdapter` —
and the memory ones that carry a store of their own.

Each is an async context manager, as grelmicro's adapters are: `async with MemoryLockAdapter() as
backend:` captures the running loop (`backend._loop`) and gives the backend back. An adapter
handed out by a provider borrows it: entering checks the provider is open, exiting never closes
it. Entering twice, or exiting without entering, does nothing more. Exiting keeps the leases and
the fencing counters: unlike grelmicro's memory adapters, fencing tokens never restart at 1.

`scope` says how far a backend's exclusion reaches: `"process"` (memory), `"host"` (SQLite) or
`"cluster"` (Redis, PostgreSQL); `Coordination(requires=...)` checks it.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional

from tenure import _tenure
from tenure._durations import Seconds, positive
from tenure._record import record

if TYPE_CHECKING:
    from tenure._providers import _Provider


#: How long a backend call made directly on an adapter may take, in seconds.
CALL_TIMEOUT = 5.0


class _Adapter:
    """One kind of backend of a provider's store."""

    _slot = "lock"

    def __init__(self, provider: _Provider) -> None:
        self._provider = provider
        #: The event loop captured by `__aenter__` (grelmicro's attribute), else `None`.
        self._loop: Optional[asyncio.AbstractEventLoop] = None

    def _native(self) -> _tenure.Backend:
        return self._provider._native(self._slot)

    @property
    def provider(self) -> _Provider:
        """The provider it belongs to."""
        return self._provider

    @property
    def scope(self) -> str:
        """How far its exclusion reaches: `process`, `host` or `cluster`."""
        return self._provider.scope

    async def __aenter__(self) -> Any:
        """Captures the running loop; `OutOfContextError` if the provider is not open."""
        self._native()
        self._loop = asyncio.get_running_loop()
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Nothing to undo: the provider (if borrowed) stays open, the leases stay."""


class LockAdapter(_Adapter):
    """A lock backend: pass it as `Lock(..., backend=...)` or `TaskLock(..., backend=...)`. Its
    `LockBackend` calls can be made directly too (names with their prefix, `lock:cart`); each is
    bounded by `CALL_TIMEOUT` seconds and fails with the store's error (`ConnectionError`,
    `TimeoutError`, ...)."""

    async def acquire(self, *, name: str, token: str, duration: Seconds) -> Optional[int]:
        """The fencing token if `token` now holds `name` for `duration`, else `None`."""
        return await _tenure.lock_acquire(self._native(), name, token, positive("duration", duration), CALL_TIMEOUT)  # type: ignore[no-any-return]

    async def release(self, *, name: str, token: str) -> bool:
        """Frees `name` if `token` holds it; whether it did."""
        return await _tenure.lock_release(self._native(), name, token, CALL_TIMEOUT)  # type: ignore[no-any-return]

    async def locked(self, *, name: str) -> bool:
        """Whether any token holds `name`."""
        return await _tenure.lock_locked(self._native(), name, CALL_TIMEOUT)  # type: ignore[no-any-return]

    async def owned(self, *, name: str, token: str) -> bool:
        """Whether `token` holds `name`."""
        return await _tenure.lock_owned(self._native(), name, token, CALL_TIMEOUT)  # type: ignore[no-any-return]


class LeaderElectionAdapter(_Adapter):
    """A leader-election backend: pass it as `LeaderElection(..., backend=...)`. Its
    `LeaderElectionBackend` calls can be made directly too (see `LockAdapter`)."""

    _slot = "leaderelection"

    async def acquire_or_renew(
        self, *, name: str, token: str, duration: Seconds, metadata: Optional[Mapping[str, str]] = None
    ) -> Any:
        """The `LeaderRecord` after trying to take or renew `name` for `token`."""
        raw = await _tenure.leader_acquire_or_renew(
            self._native(), name, token, positive("duration", duration), dict(metadata or {}), CALL_TIMEOUT
        )
        return record(raw)

    async def release(self, *, name: str, token: str) -> bool:
        """Deletes the record if `token` holds it; whether it did."""
        return await _tenure.leader_release(self._native(), name, token, CALL_TIMEOUT)  # type: ignore[no-any-return]

    async def get(self, *, name: str) -> Any:
        """The live `LeaderRecord` of `name`, if any."""
        raw = await _tenure.leader_get(self._native(), name, CALL_TIMEOUT)
        return None if raw is None else record(raw)


class ScheduleAdapter(_Adapter):
    """A cron schedule backend (grelmicro's `ScheduleBackend`): one claim per task and fire time
    across every worker, on the provider's store (grelmicro 0.44's layout)."""

    _slot = "schedule"

    async def claim(self, name: str, due: float) -> bool:
        """Stores `due` (epoch seconds) as the last fire time of `name` if nothing is stored or
        the stored time is earlier; true iff this call stored it (one winner per time)."""
        if isinstance(due, bool) or not isinstance(due, (int, float)) or not math.isfinite(due):
            raise ValueError(f"due must be a finite number of epoch seconds, got {due!r}")
        return bool(await self._native().claim(str(name), float(due)))

    async def last_fired(self, name: str) -> Optional[float]:
        """The last claimed fire time of `name`, if any."""
        fired = await self._native().last_fired(str(name))
        return None if fired is None else float(fired)


class ReadWriteLockAdapter(_Adapter):
    """A read-write lock backend: pass it as `ReadWriteLock(..., backend=...)`. Tenure's stores
    serve read-write locks on memory, SQLite, Redis and PostgreSQL (grelmicro 0.44's layouts)."""

    _slot = "readwritelock"

    async def __aenter__(self) -> Any:
        """As other adapters; `CoordinationBackendError` if the store serves no read-write locks."""
        if not self._native().serves_read_write:
            from tenure.errors import CoordinationBackendError

            raise CoordinationBackendError(f"{type(self._provider).__name__} serves no read-write locks")
        return await super().__aenter__()

    # grelmicro 0.44's `ReadWriteLockBackend` calls, made directly (see `LockAdapter`).

    async def acquire_read(self, *, name: str, token: str, duration: Seconds) -> Optional[int]:
        """The generation read if `token` now reads `name` for `duration`, else `None`."""
        return await _tenure.rw_acquire_read(self._native(), name, token, positive("duration", duration), CALL_TIMEOUT)  # type: ignore[no-any-return]

    async def acquire_write(self, *, name: str, token: str, duration: Seconds, intent: bool = True) -> Any:
        """A `WriteGrant` if `token` now writes `name`, else `None` (keeping an intent iff `intent`)."""
        from tenure._rw_lock import WriteGrant

        granted = await _tenure.rw_acquire_write(
            self._native(), name, token, positive("duration", duration), bool(intent), CALL_TIMEOUT
        )
        return None if granted is None else WriteGrant(*granted)

    async def release_read(self, *, name: str, token: str) -> bool:
        """Drops `token`'s live read lease; whether it had one."""
        return await _tenure.rw_flag(self._native(), "release_read", name, token, CALL_TIMEOUT)  # type: ignore[no-any-return]

    async def release_write(self, *, name: str, token: str) -> bool:
        """Drops `token`'s live write lease, leaving the lock clean; whether it had it."""
        return await _tenure.rw_flag(self._native(), "release_write", name, token, CALL_TIMEOUT)  # type: ignore[no-any-return]

    async def cancel_intent(self, *, name: str, token: str) -> bool:
        """Withdraws `token`'s live intent; whether it had one."""
        return await _tenure.rw_flag(self._native(), "cancel_intent", name, token, CALL_TIMEOUT)  # type: ignore[no-any-return]

    async def downgrade(self, *, name: str, token: str, duration: Seconds) -> Optional[int]:
        """Turns `token`'s write lease into a read lease; the generation, or `None`."""
        return await _tenure.rw_downgrade(self._native(), name, token, positive("duration", duration), CALL_TIMEOUT)  # type: ignore[no-any-return]

    async def state(self, *, name: str) -> Any:
        """The `ReadWriteLockState` of `name`."""
        from tenure._rw_lock import ReadWriteLockState

        return ReadWriteLockState(*await _tenure.rw_state(self._native(), name, CALL_TIMEOUT))

    async def owned_read(self, *, name: str, token: str) -> bool:
        """Whether `token` holds a live read lease."""
        return await _tenure.rw_flag(self._native(), "owned_read", name, token, CALL_TIMEOUT)  # type: ignore[no-any-return]

    async def owned_write(self, *, name: str, token: str) -> bool:
        """Whether `token` holds the live write lease."""
        return await _tenure.rw_flag(self._native(), "owned_write", name, token, CALL_TIMEOUT)  # type: ignore[no-any-return]


class SemaphoreAdapter(_Adapter):
    """A semaphore backend: pass it as `Semaphore(..., backend=...)`. Every one of Tenure's stores
    serves semaphores (in Tenure's own layouts: grelmicro has no semaphore)."""

    _slot = "semaphore"

    async def __aenter__(self) -> Any:
        """As other adapters; `CoordinationBackendError` if the store serves no semaphores."""
        if not self._native().serves_semaphores:
            from tenure.errors import CoordinationBackendError

            raise CoordinationBackendError(f"{type(self._provider).__name__} serves no semaphores")
        return await super().__aenter__()

    # The store's semaphore calls, made directly (see `LockAdapter`).

    async def acquire(
        self, *, name: str, token: str, duration: Seconds, permits: int, wait: Optional[Seconds] = None
    ) -> tuple[Optional[int], int]:
        """A permit of `name` for `token`: `(fencing token or None, the stored permit count)`,
        keeping a place in line for `wait` seconds if refused and `wait` is given."""
        wait = None if wait is None else positive("wait", wait)
        return await _tenure.sem_acquire(  # type: ignore[no-any-return]
            self._native(), name, token, positive("duration", duration), int(permits), wait, CALL_TIMEOUT
        )

    async def release(self, *, name: str, token: str) -> bool:
        """Gives `token`'s permit back and leaves the line; whether it held a live permit."""
        return await _tenure.sem_release(self._native(), name, token, CALL_TIMEOUT)  # type: ignore[no-any-return]

    async def owned(self, *, name: str, token: str) -> bool:
        """Whether `token` holds a live permit of `name`."""
        return await _tenure.sem_owned(self._native(), name, token, CALL_TIMEOUT)  # type: ignore[no-any-return]

    async def state(self, *, name: str) -> Any:
        """The `SemaphoreState` of `name`."""
        from tenure._semaphore import SemaphoreState

        return SemaphoreState(*await _tenure.sem_state(self._native(), name, CALL_TIMEOUT))


class _OwnMemory:
    """An adapter with a private memory store of its own."""

    def _own_provider(self) -> Any:
        from tenure._providers import MemoryProvider

        return MemoryProvider()


class MemoryLockAdapter(LockAdapter, _OwnMemory):
    """An in-process lock backend of its own (`scope = "process"`)."""

    def __init__(self) -> None:
        super().__init__(self._own_provider())


class MemoryLeaderElectionAdapter(LeaderElectionAdapter, _OwnMemory):
    """An in-process leader-election backend of its own (`scope = "process"`)."""

    def __init__(self) -> None:
        super().__init__(self._own_provider())


class MemoryReadWriteLockAdapter(ReadWriteLockAdapter, _OwnMemory):
    """An in-process read-write lock backend of its own (`scope = "process"`)."""

    def __init__(self) -> None:
        super().__init__(self._own_provider())


class MemorySemaphoreAdapter(SemaphoreAdapter, _OwnMemory):
    """An in-process semaphore backend of its own (`scope = "process"`)."""

    def __init__(self) -> None:
        super().__init__(self._own_provider())


class MemoryScheduleAdapter(ScheduleAdapter, _OwnMemory):
    """An in-process schedule backend of its own (`scope = "process"`)."""

    def __init__(self) -> None:
        super().__init__(self._own_provider())


def native_of(backend: Any, slot: str, owner: str) -> _tenure.Backend:
    """The native backend behind `backend`: an adapter's store, or a user's backend run natively."""
    if isinstance(backend, _Adapter):
        return backend._native()
    from tenure import _user_backend

    return _user_backend.native(backend, slot, owner)
