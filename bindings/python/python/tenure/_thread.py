"""`from_thread` adapters: the same primitives from plain threads, blocking.

Each thread is its own holder. A call blocks its thread (without the interpreter lock) while the
package's runtime does the work — no event loop is involved. A call made on a thread that runs an
asyncio event loop is refused with `EventLoopDeadlockError` (a `BaseException`, as in grelmicro):
it would freeze that loop; use the async API there."""

from __future__ import annotations

import asyncio
import os
import threading
from typing import TYPE_CHECKING, Any, Optional

from tenure._process import generation
from tenure._durations import Seconds, seconds
from tenure.errors import EventLoopDeadlockError, LockNotOwnedError

if TYPE_CHECKING:
    from tenure._lock import Lock, LockHandle
    from tenure._task_lock import TaskLock


def _refuse_on_loop(what: str) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise EventLoopDeadlockError(
        f"{what} was called on the thread that runs an event loop, which it would block. Call it from another "
        "thread or use the async API."
    )


class ThreadLockAdapter:
    """`lock.from_thread`: `acquire`, `acquire_nowait`, `extend`, `release`, `locked`, `owned`, and
    `with lock.from_thread as handle:`."""

    def __init__(self, lock: Lock) -> None:
        self._lock = lock
        self._local = threading.local()

    def _holder(self, what: str, create: bool) -> Any:
        _refuse_on_loop(f"Lock.from_thread.{what}")
        native = self._lock._built()
        if getattr(self._local, "native", None) is not native:
            self._local.native, self._local.holder = native, None
        if self._local.holder is None and create:
            self._local.holder = native.holder()
        return self._local.holder

    def acquire(self, timeout: Optional[Seconds] = None) -> LockHandle:
        from tenure._lock import LockHandle

        holder = self._holder("acquire", create=True)
        return LockHandle(*holder.acquire_blocking(seconds("timeout", timeout)))

    def acquire_nowait(self) -> LockHandle:
        from tenure._lock import LockHandle

        return LockHandle(*self._holder("acquire_nowait", create=True).acquire_nowait_blocking())

    def extend(self) -> LockHandle:
        from tenure._lock import LockHandle

        holder = self._holder("extend", create=False)
        if holder is None:
            raise LockNotOwnedError(name=self._lock.name)
        return LockHandle(*holder.extend_blocking())

    def release(self) -> None:
        holder = self._holder("release", create=False)
        if holder is None:
            raise LockNotOwnedError(name=self._lock.name)
        holder.release_blocking()

    def locked(self) -> bool:
        _refuse_on_loop("Lock.from_thread.locked")
        return bool(self._lock._built().locked_blocking())

    def owned(self) -> bool:
        holder = self._holder("owned", create=False)
        return False if holder is None else bool(holder.owned_blocking())

    def __enter__(self) -> LockHandle:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


class ThreadTaskLockAdapter:
    """`task_lock.from_thread`: `with task_lock.from_thread:` and `locked()`."""

    def __init__(self, lock: TaskLock) -> None:
        self._lock = lock
        self._guard: Any = None
        self._pid, self._generation = os.getpid(), generation()

    def __enter__(self) -> ThreadTaskLockAdapter:
        _refuse_on_loop("TaskLock.from_thread.__enter__")
        self._guard = self._lock._built().enter_blocking()
        self._pid, self._generation = os.getpid(), generation()
        return self

    def __exit__(self, *exc: object) -> None:
        guard, self._guard = self._guard, None
        if guard is None or self._generation != generation():
            # A forked child never exits (nor renews) its parent's run.
            raise LockNotOwnedError(name=self._lock.name)
        guard.exit_blocking()

    def locked(self) -> bool:
        _refuse_on_loop("TaskLock.from_thread.locked")
        return bool(self._lock._built().locked_blocking())
