"""`TaskLock`: a scheduled job runs at most once per `min_hold_duration` window across every
worker. Entering takes the lock or fails at once (`WouldBlockError`); exiting keeps it until the
minimum hold has passed, so another worker's run in the same window is refused."""

from __future__ import annotations

from typing import Optional, Union
from uuid import UUID

from tenure import _tenure
from tenure._durations import Seconds, positive
from tenure._config import TaskLockConfig
from tenure._primitive import Primitive
from tenure._state import LockState, lock_state
from tenure._user_backend import LockBackend
from tenure._thread import ThreadTaskLockAdapter
from tenure.errors import LockAcquireError, LockNotOwnedError, LockReleaseError, SettingsValidationError


class TaskLock(Primitive):
    """A lock for scheduled tasks (grelmicro's `TaskLock`)."""

    _native_class = _tenure.TaskLock
    _config_class = TaskLockConfig
    _backend_hint = "a MemoryLockAdapter() for a per-process lock, or provider.lock() of an open provider"
    _thread_adapter = ThreadTaskLockAdapter
    _key_prefix = "tasklock:"

    def __init__(
        self,
        name: str = "default",
        *,
        backend: Union[LockBackend, str, None] = None,
        worker: Union[str, UUID, None] = None,
        min_hold_duration: Optional[Seconds] = None,
        lease_duration: Optional[Seconds] = None,
        backend_timeout: Optional[Seconds] = None,
        env_prefix: Optional[str] = None,
        env_load: Optional[bool] = None,
        purpose: Optional[str] = None,
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
            purpose=purpose,
        )
        self._guard: Optional[_tenure.TaskGuard] = None

    async def state(self) -> LockState:
        """Who runs the task now (see `Lock.state`). A Tenure extension."""
        return lock_state(await self._built().state())

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

    # grelmicro's low-level calls: "should not be called directly", but public. `do_acquire`,
    # `do_release` and `do_reacquire` are single backend calls for `token`; `do_exit` and the
    # `do_thread_*` calls end or begin the instance's run, the one `async with` and
    # `from_thread` use.

    async def do_acquire(self, token: str, *, duration: Seconds) -> bool:
        """One acquire of the lease for `token`: whether it was granted (`LockAcquireError` if
        the backend fails)."""
        return await self._call(LockAcquireError, "lock_acquire", token, positive("duration", duration)) is not None

    async def do_release(self, token: str) -> bool:
        """Releases `token`'s lease: whether it was released (`LockReleaseError` if the backend
        fails)."""
        return await self._call(LockReleaseError, "lock_release", token)  # type: ignore[no-any-return]

    async def do_reacquire(self, token: str, duration: Seconds) -> bool:
        """Sets `token`'s lease to `duration` (how an exit keeps the minimum hold): whether it
        was granted (`LockReleaseError` if the backend fails, as in grelmicro)."""
        return await self._call(LockReleaseError, "lock_acquire", token, positive("duration", duration)) is not None

    async def do_exit(self, token: str, *, min_hold_duration: Seconds) -> None:
        """Ends the run in progress (begun by `async with` or `do_thread_enter`; this instance
        runs one at a time, named by `token`): released if `min_hold_duration` has passed since
        it began, else kept until then. `min_hold_duration` is the config's, as the caller
        captured it; `LockNotOwnedError` if no run is in progress."""
        wanted = positive("min_hold_duration", min_hold_duration)
        if abs(wanted - float(self._settings["min_hold_duration"])) > 1e-6:
            raise SettingsValidationError(
                f"do_exit ends the run with the task lock's min_hold_duration ({self._settings['min_hold_duration']}s); "
                "reconfigure() the task lock to change it"
            )
        del token  # the run in progress is this instance's only one
        if self._guard is not None:
            guard, self._guard = self._own_guard(), None
            await guard.exit()
            return
        await self.from_thread.take().exit()

    async def do_thread_enter(self) -> None:
        """Begins a thread's run (a `:thread:` token) from the event loop: `WouldBlockError` if
        another worker has the lock, `LockReentrantError` if this instance runs already."""
        self.from_thread.entered(await self._built().enter_thread())

    async def do_thread_exit(self) -> None:
        """Ends the thread's run begun by `do_thread_enter` or `from_thread` (keeping the
        minimum hold)."""
        await self.from_thread.take().exit()

    async def locked(self) -> bool:
        """Whether anyone holds the task lock."""
        return bool(await self._built().locked())
