"""`TaskLock`: a scheduled job runs at most once per `min_hold_duration` window across every
worker. Entering takes the lock or fails at once (`WouldBlockError`); exiting keeps it until the
minimum hold has passed, so another worker's run in the same window is refused."""

from __future__ import annotations

from typing import Any, Optional, Union
from uuid import UUID

from tenure import _tenure
from tenure._durations import Seconds, seconds
from tenure._providers import LockAdapter
from tenure.errors import LockNotOwnedError, OutOfContextError


class TaskLock:
    """A lock for scheduled tasks (grelmicro's `TaskLock`)."""

    def __init__(
        self,
        name: str = "default",
        *,
        backend: Optional[LockAdapter] = None,
        worker: Union[str, UUID, None] = None,
        min_hold_duration: Optional[Seconds] = None,
        lease_duration: Optional[Seconds] = None,
        backend_timeout: Optional[Seconds] = None,
        env_prefix: Optional[str] = None,
        env_load: Optional[bool] = None,
    ) -> None:
        self._settings: dict[str, Any] = {
            "worker": None if worker is None else str(worker),
            "min_hold_duration": seconds("min_hold_duration", min_hold_duration),
            "lease_duration": seconds("lease_duration", lease_duration),
            "backend_timeout": seconds("backend_timeout", backend_timeout),
            "env_prefix": env_prefix,
            "env_load": env_load,
        }
        self._name = name
        self._backend = backend
        probe = _tenure.TaskLock(name, _tenure.memory_backend(), **self._settings)
        if self._settings["worker"] is None:
            self._settings["worker"] = probe.config()["worker"]
        self._native: Optional[_tenure.TaskLock] = None
        self._native_backend: Optional[_tenure.Backend] = None
        self._guard: Optional[_tenure.TaskGuard] = None

    @property
    def name(self) -> str:
        """The lock name."""
        return self._name

    @property
    def config(self) -> dict[str, Any]:
        """The resolved settings (seconds as floats)."""
        return dict(self._lock().config()) if self._backend is not None else dict(self._settings)

    @property
    def fencing_token(self) -> Optional[int]:
        """The fencing token of the run in progress, if any."""
        return None if self._guard is None else self._guard.fencing_token

    def _lock(self) -> _tenure.TaskLock:
        if self._backend is None:
            raise OutOfContextError(
                f"TaskLock('{self._name}') resolved no backend. Pass backend= (a MemoryLockAdapter() for a "
                "per-process lock, or provider.lock() of an open provider)."
            )
        native = self._backend._native()
        if self._native is None or self._native_backend is not native:
            self._native = _tenure.TaskLock(self._name, native, **self._settings)
            self._native_backend = native
        return self._native

    async def __aenter__(self) -> TaskLock:
        self._guard = await self._lock().enter()
        return self

    async def __aexit__(self, *exc: object) -> None:
        guard, self._guard = self._guard, None
        if guard is None:
            raise LockNotOwnedError(name=self._name)
        await guard.exit()

    async def extend(self) -> None:
        """Renews the lease of the run in progress for another `lease_duration`."""
        if self._guard is None:
            raise LockNotOwnedError(name=self._name)
        await self._guard.extend()

    refresh = extend

    async def locked(self) -> bool:
        """Whether anyone holds the task lock."""
        return bool(await self._lock().locked())
