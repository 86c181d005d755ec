"""`from_thread` adapters: the same primitives from plain threads, blocking — the driver's blocking
adapters, as grelmicro's: each thread is its own holder (a `:thread:` ownership token), and a
thread that holds a lock and acquires it again gets `LockReentrantError` instead of waiting for
itself. A call blocks its thread (without the interpreter lock) while the package's runtime does
the work — no event loop is involved. A call made on a thread that runs an asyncio event loop is
refused with `EventLoopDeadlockError` (a `BaseException`, as in grelmicro): it would freeze that
loop; use the async API there."""

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

    def _native(self, what: str) -> Any:
        _refuse_on_loop(f"Lock.from_thread.{what}")
        native = self._lock._built()
        if getattr(self._local, "native", None) is not native:
            # A rebuilt lock (a new backend, a fork) starts the thread afresh.
            self._local.native, self._local.guard = native, None
        return native

    def _guard(self, what: str) -> Any:
        """This thread's hold of the lock, if it has one."""
        self._native(what)
        return self._local.guard

    def _took(self, taken: tuple[Any, tuple[str, str, int]]) -> LockHandle:
        from tenure._lock import LockHandle

        self._local.guard, handle = taken
        return LockHandle(*handle)

    def acquire(self, timeout: Optional[Seconds] = None) -> LockHandle:
        return self._took(self._native("acquire").acquire_thread(seconds("timeout", timeout)))

    def acquire_nowait(self) -> LockHandle:
        return self._took(self._native("acquire_nowait").acquire_nowait_thread())

    def extend(self) -> LockHandle:
        from tenure._lock import LockHandle

        guard = self._guard("extend")
        if guard is None:
            raise LockNotOwnedError(name=self._lock.name)
        return LockHandle(*guard.extend())

    def release(self) -> None:
        guard = self._guard("release")
        if guard is None:
            raise LockNotOwnedError(name=self._lock.name)
        self._local.guard = None
        guard.release()

    def locked(self) -> bool:
        return bool(self._native("locked").locked_blocking())

    def owned(self) -> bool:
        guard = self._guard("owned")
        return False if guard is None else bool(guard.owned())

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
        self._guard = self._lock._built().enter_thread()
        self._pid, self._generation = os.getpid(), generation()
        return self

    def __exit__(self, *exc: object) -> None:
        guard, self._guard = self._guard, None
        if guard is None or self._generation != generation():
            # A forked child never exits (nor renews) its parent's run.
            raise LockNotOwnedError(name=self._lock.name)
        guard.exit()

    def locked(self) -> bool:
        _refuse_on_loop("TaskLock.from_thread.locked")
        return bool(self._lock._built().locked_blocking())
