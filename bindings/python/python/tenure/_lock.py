"""`Lock`: a distributed lock with fencing tokens, grelmicro's `Lock` on Tenure's core."""

from __future__ import annotations

import asyncio
import inspect
import logging
import weakref
from typing import Any, Awaitable, Callable, NamedTuple, Optional, Union
from uuid import UUID

from tenure import _tenure
from tenure._durations import Seconds, positive, seconds
from tenure._config import LockConfig
from tenure._primitive import Primitive
from tenure._state import LockState, lock_state
from tenure._adapters import MemoryLockAdapter
from tenure._user_backend import LockBackend
from tenure._thread import ThreadLockAdapter
from tenure.errors import (
    LockAcquireError,
    LockNotOwnedError,
    LockOwnedCheckError,
    LockReleaseError,
    SettingsValidationError,
)


class LockHandle(NamedTuple):
    """One acquisition: the lock name, the ownership token kept in the store for this holder, and
    the fencing token (strictly increasing per name; unchanged by renewals). Immutable."""

    name: str
    token: str
    fencing_token: int


class Lock(Primitive):
    """A distributed lock. Each asyncio task is its own holder: a nested acquire in one task raises
    `LockReentrantError`, other tasks wait. Use `async with lock as handle:` and send
    `handle.fencing_token` with every write the lock protects."""

    _native_class: Any = _tenure.Lock
    _config_class = LockConfig
    _backend_hint = "a MemoryLockAdapter() for a per-process lock, or provider.lock() of an open provider"
    _thread_adapter = ThreadLockAdapter

    def __init__(
        self,
        name: str,
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
        super().__init__(
            name,
            backend,
            worker,
            env_prefix,
            env_load,
            lease_duration=lease_duration,
            retry_interval=retry_interval,
            retry_jitter=retry_jitter,
            backend_timeout=backend_timeout,
            purpose=purpose,
        )
        self._holders: weakref.WeakKeyDictionary[Any, _tenure.Holder] = weakref.WeakKeyDictionary()

    def _rebuilt(self) -> None:
        self._holders = weakref.WeakKeyDictionary()

    def _holder(self, create: bool) -> Optional[_tenure.Holder]:
        lock = self._built()
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("Lock must be used from an asyncio task (use from_thread from other threads)")
        holder = self._holders.get(task)
        if holder is None and create:
            holder = lock.holder()
            self._holders[task] = holder
        return holder

    async def acquire(self, *, timeout: Optional[Seconds] = None) -> LockHandle:
        """Acquires, waiting up to `timeout` (forever by default): `LockTimeoutError` (a
        `TimeoutError`) when it passes, `LockReentrantError` if this task holds it already."""
        holder = self._holder(create=True)
        assert holder is not None
        return LockHandle(*await holder.acquire(seconds("timeout", timeout)))

    async def acquire_nowait(self) -> LockHandle:
        """One attempt: `WouldBlockError` if another holder has it."""
        holder = self._holder(create=True)
        assert holder is not None
        return LockHandle(*await holder.acquire_nowait())

    async def extend(self) -> LockHandle:
        """Renews the lease for another `lease_duration`; the fencing token stays."""
        holder = self._holder(create=False)
        if holder is None:
            raise LockNotOwnedError(name=self._name)
        return LockHandle(*await holder.extend())

    async def release(self) -> None:
        """Releases: `LockNotOwnedError` if this task does not hold it."""
        holder = self._holder(create=False)
        if holder is None:
            raise LockNotOwnedError(name=self._name)
        await holder.release()

    async def locked(self) -> bool:
        """Whether anyone holds the lock."""
        return bool(await self._built().locked())

    async def state(self) -> LockState:
        """Who holds the lock now: worker, fencing token, lease end and what the holder told the
        store (host, pid, program, `purpose`, since when) — never its token. `LockLockedCheckError`
        if the store fails or cannot tell (a user-written backend). A Tenure extension."""
        return lock_state(await self._built().state())

    async def owned(self) -> bool:
        """Whether this task holds a live lease."""
        holder = self._holder(create=False)
        return False if holder is None else bool(await holder.owned())

    def hold(
        self,
        *,
        max_hold: Seconds,
        timeout: Optional[Seconds] = None,
        warn_below: Optional[Seconds] = None,
        on_warning: Optional[WarningCallback] = None,
    ) -> "LockHold":
        """`async with lock.hold(max_hold=3600) as handle:` acquires (waiting up to `timeout`), keeps
        the lease alive while the body runs — renewed every third of the lease, retried while it is
        still valid — and releases at the end. The body is cancelled the moment the lease is lost
        (`LockLostError.reason` says why: `expired`, `unreachable`, `lost`, `fence_regression`,
        `revoked`) or `max_hold` passes; the block then raises `LockLostError` (a
        `LockNotOwnedError`). The block releases the lock itself: do not release it in the body.

        `on_warning(seconds_left)` (a function or a coroutine function) is called when renewals
        keep failing and less than `warn_below` seconds of validity are left (default a third of
        the lease; it must be under half the lease): the work's chance to checkpoint before the
        loss. Once per run of failed renewals; an exception it raises is logged (logger `tenure`)
        and the hold goes on. It runs in a task of its own, cancelled when the block ends: use the
        handle the block was given (its fencing token), not calls on the lock, which belong to the
        block's task. A Tenure extension."""
        if on_warning is not None and not callable(on_warning):
            raise SettingsValidationError(f"on_warning must be callable, got {type(on_warning).__name__}")
        return LockHold(
            self,
            seconds("max_hold", max_hold),
            seconds("timeout", timeout),
            seconds("warn_below", warn_below),
            on_warning,
        )

    # grelmicro's low-level calls: "should not be called directly", but public. `do_acquire`,
    # `do_release` and `do_owned` are single backend calls for `token` (no retry, no holder);
    # the `do_thread_*` calls drive the holder of thread `thread_id` — the one its
    # `from_thread` calls use — from the event loop.

    async def do_acquire(self, token: str, *, duration: Seconds) -> Optional[int]:
        """One acquire of the lease for `token`: the fencing token, or `None` if another token
        holds it (`LockAcquireError` if the backend fails)."""
        return await self._call(LockAcquireError, "lock_acquire", token, positive("duration", duration))  # type: ignore[no-any-return]

    async def do_release(self, token: str) -> bool:
        """Releases `token`'s lease: whether it was released (`LockReleaseError` if the backend fails)."""
        return await self._call(LockReleaseError, "lock_release", token)  # type: ignore[no-any-return]

    async def do_owned(self, token: str) -> bool:
        """Whether `token` holds the lock (`LockOwnedCheckError` if the backend fails)."""
        return await self._call(LockOwnedCheckError, "lock_owned", token)  # type: ignore[no-any-return]

    async def do_thread_acquire(self, thread_id: int, *, timeout: Optional[Seconds] = None) -> LockHandle:
        """Acquires for thread `thread_id`, waiting up to `timeout` (see `acquire`)."""
        return LockHandle(*await self.from_thread.holder(thread_id).acquire(seconds("timeout", timeout)))

    async def do_thread_acquire_nowait(self, thread_id: int) -> LockHandle:
        """One attempt for thread `thread_id` (see `acquire_nowait`)."""
        return LockHandle(*await self.from_thread.holder(thread_id).acquire_nowait())

    async def do_thread_extend(self, thread_id: int) -> LockHandle:
        """Renews thread `thread_id`'s lease (see `extend`)."""
        return LockHandle(*await self.from_thread.holder(thread_id).extend())

    async def do_thread_release(self, thread_id: int) -> None:
        """Releases thread `thread_id`'s lease (see `release`)."""
        await self.from_thread.holder(thread_id).release()

    async def __aenter__(self) -> LockHandle:
        return await self.acquire()

    async def __aexit__(self, *exc: object) -> None:
        await self.release()


WarningCallback = Callable[[float], Union[None, Awaitable[None]]]
"""`on_warning(seconds_left)`: see `Lock.hold`."""

_log = logging.getLogger("tenure")


async def _tell_warnings(name: str, kept: "_tenure.Kept", on_warning: WarningCallback) -> None:
    """Calls `on_warning` at each of the kept lease's warnings until it is released or lost; what
    the callback raises is logged, never let out of this background task."""
    while (left := await kept.next_warning()) is not None:
        try:
            told = on_warning(left)
            if inspect.isawaitable(told):
                await told
        except Exception:
            _log.exception("on_warning of the lock %r raised; the lease is still kept", name)


class LockHold:
    """A lock held with its lease kept alive: see `Lock.hold`."""

    def __init__(
        self,
        lock: Lock,
        max_hold: Optional[float],
        timeout: Optional[float],
        warn_below: Optional[float] = None,
        on_warning: Optional[WarningCallback] = None,
    ) -> None:
        self._lock, self._max_hold, self._timeout = lock, max_hold, timeout
        self._warn_below, self._on_warning = warn_below, on_warning
        self._kept: Optional[_tenure.Kept] = None
        self._watch: Optional[asyncio.Future[None]] = None
        self._warner: Optional[asyncio.Task[None]] = None
        self._task: Optional[asyncio.Task[Any]] = None
        self._cancelled = False

    async def __aenter__(self) -> LockHandle:
        if self._kept is not None:
            raise RuntimeError("a LockHold is entered once; call lock.hold() again")
        handle = await self._lock.acquire(timeout=self._timeout)
        holder = self._lock._holder(create=False)
        assert holder is not None and self._max_hold is not None
        try:
            self._kept = holder.keep_alive(self._max_hold, self._warn_below)
        except BaseException:
            await self._lock.release()
            raise
        if self._on_warning is not None:
            self._warner = asyncio.ensure_future(_tell_warnings(self._lock.name, self._kept, self._on_warning))
        self._task = asyncio.current_task()
        self._watch = asyncio.ensure_future(self._kept.lost())
        self._watch.add_done_callback(self._lost)
        return handle

    def _lost(self, watch: "asyncio.Future[None]") -> None:
        if watch.cancelled() or self._task is None:
            return
        self._cancelled = True
        self._task.cancel()

    async def __aexit__(self, kind: Optional[type], error: Optional[BaseException], trace: object) -> None:
        kept, watch, task = self._kept, self._watch, self._task
        self._task = None
        assert kept is not None and watch is not None and task is not None
        watch.remove_done_callback(self._lost)
        watch.cancel()
        lost = kept.lost_error()
        # The callback ends with the hold: no checkpoint runs on after the lock is given back. The
        # release starts now (the slot gives the lease up at once), whatever the waits below see.
        warner, self._warner = self._warner, None
        if warner is not None:
            warner.cancel()
        released = kept.release()
        if warner is not None:
            await asyncio.wait([warner])
        try:
            await released
        except LockNotOwnedError:
            if not self._cancelled:
                raise
        if not self._cancelled:
            return
        # The loss cancelled the body: report it as a LockLostError, unless the task was also
        # cancelled from outside (Python 3.11+ can tell), which then goes on.
        outside = task.uncancel() > 0 if hasattr(task, "uncancel") else False
        if outside or (kind is not None and not issubclass(kind, asyncio.CancelledError)):
            return
        raise lost from None


__all__ = ["Lock", "LockHandle", "LockHold", "MemoryLockAdapter"]
