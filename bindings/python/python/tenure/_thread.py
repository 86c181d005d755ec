"""`from_thread` adapters: the same primitives from plain threads, blocking — the holders of the
async API, waited for on the calling thread, as grelmicro's: each thread is its own holder (a `:thread:` ownership token), and a
thread that holds a lock and acquires it again gets `LockReentrantError` instead of waiting for
itself. A call blocks its thread (without the interpreter lock) while the package's runtime does
the work — no event loop is involved, unless the backend is one a user wrote (its coroutines run
on the loop it was used on). A call made on a thread that runs an asyncio event loop is
refused with `EventLoopDeadlockError` (a `BaseException`, as in grelmicro): it would freeze that
loop; use the async API there."""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
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
    `with lock.from_thread as handle:`. Each thread is its own holder; `Lock.do_thread_*` drive the
    same holders from the event loop, by thread id."""

    def __init__(self, lock: Lock) -> None:
        self._lock = lock
        self._native: Any = None
        #: Each thread's holder, by thread id, with the thread it was made for (a thread id is
        #: reused once its thread ended: a newcomer never inherits a holder; `None` for an id no
        #: live thread had when `do_thread_*` asked for it).
        self._holders: dict[int, tuple[Optional[weakref.ref[threading.Thread]], Any]] = {}
        self._guard = threading.Lock()

    def holder(self, thread_id: Optional[int] = None) -> Any:
        """The holder of thread `thread_id` (default: the calling thread), made on first use."""
        native = self._lock._built()
        if native is not self._native:
            # A rebuilt lock (a new backend, a fork) starts every thread afresh.
            self._native, self._holders = native, {}
        thread = threading.current_thread() if thread_id is None else _thread_of(thread_id)
        ident = threading.get_ident() if thread_id is None else thread_id
        with self._guard:
            known = self._holders.get(ident)
            if known is not None and (None if known[0] is None else known[0]()) is thread:
                return known[1]
            # Threads that ended leave their holders behind: drop them.
            self._holders = {i: h for i, h in self._holders.items() if h[0] is None or h[0]() is not None}
            holder = native.holder(thread=True)
            self._holders[ident] = (None if thread is None else weakref.ref(thread), holder)
            return holder

    def _mine(self, what: str) -> Any:
        _refuse_on_loop(f"Lock.from_thread.{what}")
        return self.holder()

    def acquire(self, timeout: Optional[Seconds] = None) -> LockHandle:
        from tenure._lock import LockHandle

        return LockHandle(*self._mine("acquire").acquire_blocking(seconds("timeout", timeout)))

    def acquire_nowait(self) -> LockHandle:
        from tenure._lock import LockHandle

        return LockHandle(*self._mine("acquire_nowait").acquire_nowait_blocking())

    def extend(self) -> LockHandle:
        from tenure._lock import LockHandle

        return LockHandle(*self._mine("extend").extend_blocking())

    def release(self) -> None:
        self._mine("release").release_blocking()

    def locked(self) -> bool:
        _refuse_on_loop("Lock.from_thread.locked")
        return bool(self._lock._built().locked_blocking())

    def owned(self) -> bool:
        return bool(self._mine("owned").owned_blocking())

    def __enter__(self) -> LockHandle:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _thread_of(thread_id: int) -> Optional[threading.Thread]:
    """The live thread with id `thread_id`, if any."""
    return next((t for t in threading.enumerate() if t.ident == thread_id), None)


class ThreadTaskLockAdapter:
    """`task_lock.from_thread`: `with task_lock.from_thread:` and `locked()`. The run is the task
    lock's (instance-wide, as in grelmicro); `TaskLock.do_thread_enter` / `do_thread_exit` enter
    and exit the same run from the event loop."""

    def __init__(self, lock: TaskLock) -> None:
        self._lock = lock
        self.guard: Any = None
        self._pid, self._generation = os.getpid(), generation()

    def entered(self, guard: Any) -> None:
        """Keeps the run `guard` entered (from a thread or from the loop)."""
        self.guard = guard
        self._pid, self._generation = os.getpid(), generation()

    def take(self) -> Any:
        """The run to exit; `LockNotOwnedError` if none began in this process."""
        guard, self.guard = self.guard, None
        if guard is None or self._generation != generation():
            # A forked child never exits (nor renews) its parent's run.
            raise LockNotOwnedError(name=self._lock.name)
        return guard

    def __enter__(self) -> ThreadTaskLockAdapter:
        _refuse_on_loop("TaskLock.from_thread.__enter__")
        self.entered(self._lock._built().enter_thread_blocking())
        return self

    def __exit__(self, *exc: object) -> None:
        _refuse_on_loop("TaskLock.from_thread.__exit__")
        self.take().exit_blocking()

    def locked(self) -> bool:
        _refuse_on_loop("TaskLock.from_thread.locked")
        return bool(self._lock._built().locked_blocking())
