"""`TaskLock`: a scheduled job runs at most once per `min_hold_duration` window across every
worker. Entering takes the lock or fails at once (`WouldBlockError`); exiting keeps it until the
minimum hold has passed, so another worker's run in the same window is refused."""

from __future__ import annotations

from typing import Optional, Union
from uuid import UUID

from tenure import _tenure
from tenure._durations import Seconds
from tenure._config import TaskLockConfig
from tenure._primitive import Primitive
from tenure._adapters import LockAdapter
from tenure._thread import ThreadTaskLockAdapter
from tenure.errors import LockNotOwnedError


class TaskLock(Primitive):
    """A lock for scheduled tasks (grelmicro's `TaskLock`)."""

    _native_class = _tenure.TaskLock
    _config_class = TaskLockConfig
    _backend_hint = "a MemoryLockAdapter() for a per-process lock, or provider.lock() of an open provider"
    _thread_adapter = ThreadTaskLockAdapter

    def __init__(
        self,
        name: str = "default",
        *,
        backend: Union[LockAdapter, str, None] = None,
        worker: Union[str, UUID, None] = None,
        min_hold_duration: Optional[Seconds] = None,
        lease_duration: Optional[Seconds] = None,
        backend_timeout: Optional[Seconds] = None,
        env_prefix: Optional[str] = None,
        env_load: Optional[bool] = None,
    ) -> None:
        super().__init__(
            name,
            backend,
            worker,
            env_prefix,
            env_load,
            min_hold_duration=min_hold_duration,
            lease_duration=lease_duration,
            backend_timeout=backend_timeout,
        )
        self._guard: Optional[_tenure.TaskGuard] = None

    @property
    def fencing_token(self) -> Optional[int]:
        """The fencing token of the run in progress, if any."""
        return None if self._guard is None else self._guard.fencing_token

    async def __aenter__(self) -> TaskLock:
        self._guard = await self._built().enter()
        return self

    async def __aexit__(self, *exc: object) -> None:
        guard, self._guard = self._own_guard(), None
        await guard.exit()

    async def extend(self) -> None:
        """Renews the lease of the run in progress for another `lease_duration`."""
        await self._own_guard().extend()

    def _own_guard(self) -> _tenure.TaskGuard:
        """The run in progress, if it began in this process (a forked child never renews or
        exits its parent's run)."""
        if self._guard is None or self._own_native() is None:
            raise LockNotOwnedError(name=self._name)
        return self._guard

    refresh = extend

    async def locked(self) -> bool:
        """Whether anyone holds the task lock."""
        return bool(await self._built().locked())
