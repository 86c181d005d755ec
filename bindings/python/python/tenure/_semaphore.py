"""`Semaphore`: at most `permits` holders of a name at once, each with its own lease and a fencing
token that strictly increases per name across every permit. A Tenure primitive (grelmicro has
none), with a `Lock`'s surface: each asyncio task is its own holder."""

from __future__ import annotations

from typing import Any, NamedTuple, Optional, Union
from uuid import UUID

from tenure import _tenure
from tenure._durations import Seconds, positive, seconds
from tenure._lock import Lock
from tenure._user_backend import LockBackend
from tenure.errors import LockAcquireError, LockOwnedCheckError, LockReleaseError


class SemaphoreState(NamedTuple):
    """A point-in-time view of a semaphore: the stored permit count (0 while nobody holds or
    waits, when the next holder may set another), how many hold, how many wait in line, and the
    last fencing token issued."""

    permits: int
    holders: int
    waiting: int
    fence: int


class Semaphore(Lock):
    """A distributed counting semaphore with leases and fencing tokens. `async with semaphore as
    handle:` takes one of its `permits` (waiting in line, served in arrival order), keeps it for
    the block and gives it back; send `handle.fencing_token` with every write it protects — each
    permit has its own, greater than every earlier permit's on the name. Every process using the
    name must ask for the same `permits`: another count while the name is in use raises
    `SettingsValidationError`, never a second semaphore. `acquire`, `acquire_nowait`, `extend`,
    `release`, `owned`, `hold(max_hold=...)` and `from_thread` are a `Lock`'s."""

    _native_class = _tenure.Semaphore
    _slot = "semaphore"
    _key_prefix = "semaphore:"
    _backend_hint = "a MemorySemaphoreAdapter() for a per-process semaphore, or provider.semaphore() of an open provider"

    def __init__(
        self,
        name: str,
        permits: int,
        *,
        backend: Union[LockBackend, str, None] = None,
        worker: Union[str, UUID, None] = None,
        lease_duration: Optional[Seconds] = None,
        retry_interval: Optional[Seconds] = None,
        retry_jitter: Optional[float] = None,
        backend_timeout: Optional[Seconds] = None,
        env_prefix: Optional[str] = None,
        env_load: Optional[bool] = None,
        purpose: Optional[str] = None,
    ) -> None:
        if isinstance(permits, bool) or not isinstance(permits, int):
            raise TypeError(f"permits must be a whole number, got {type(permits).__name__}")
        # (Lock's settings, and the count, checked by building the native semaphore once.)
        super(Lock, self).__init__(
            name,
            backend,
            worker,
            env_prefix,
            env_load,
            permits=permits,
            lease_duration=lease_duration,
            retry_interval=retry_interval,
            retry_jitter=retry_jitter,
            backend_timeout=backend_timeout,
            purpose=purpose,
        )
        self._rebuilt()

    @property
    def permits(self) -> int:
        """How many holders it admits at once."""
        return int(self._settings["permits"])

    async def locked(self) -> bool:
        """Whether no permit is free now: every one is held, or the waiters in line take the free
        ones (asyncio's `Semaphore.locked`)."""
        return bool(await self._built().locked())

    # (a semaphore's state is its count and leases, not a lock's one holder)
    async def state(self) -> SemaphoreState:  # type: ignore[override]
        """The stored count, the holders, the waiters and the last fencing token."""
        return SemaphoreState(*await self._built().state())

    # The store calls, made directly for `token` (no retry, no holder), as `Lock.do_*` are.

    async def do_acquire(self, token: str, *, duration: Seconds, wait: Optional[Seconds] = None) -> Optional[int]:
        """One acquire of a permit for `token`: its fencing token, or `None` if no permit is free
        for it (keeping its place in line for `wait` seconds if given); `SettingsValidationError`
        if the store keeps another count (`LockAcquireError` if the backend fails)."""
        fence, stored = await self._call(
            LockAcquireError, "sem_acquire", token, positive("duration", duration), self.permits, seconds("wait", wait)
        )
        if stored != self.permits:
            from tenure.errors import SettingsValidationError

            raise SettingsValidationError(
                f"semaphore '{self._name}' is in use with {stored} permits in the store, and this one asks for {self.permits}"
            )
        return fence  # type: ignore[no-any-return]

    async def do_release(self, token: str) -> bool:
        """Gives `token`'s permit back and leaves the line: whether it held one."""
        return await self._call(LockReleaseError, "sem_release", token)  # type: ignore[no-any-return]

    async def do_owned(self, token: str) -> bool:
        """Whether `token` holds a live permit (`LockOwnedCheckError` if the backend fails)."""
        return await self._call(LockOwnedCheckError, "sem_owned", token)  # type: ignore[no-any-return]


__all__ = ["Semaphore", "SemaphoreState"]
