"""`lock.read.from_thread` and `lock.write.from_thread`: a read-write lock's sides from plain
threads, blocking (see `tenure._thread`). Each thread is its own reader or writer: a thread that
reads and asks to write gets `LockUpgradeError`, one that asks again for what it holds
`LockReentrantError`."""

from __future__ import annotations

import threading
import weakref
from typing import Any, Optional

from tenure._durations import Seconds, seconds
from tenure._process import generation
from tenure._rw_lock import ReadGuard, WriteGuard, _Guard, _Mode, downgraded
from tenure._thread import _refuse_on_loop
from tenure.errors import LockNotOwnedError


class _Threads:
    """What the threads of one read-write lock hold (in this process: a forked child starts
    afresh), and their pairs of holders (one per side, which refuse an upgrade and a second
    lease) with the native lock each was made on (a thread holding nothing takes new ones from
    a rebuilt lock — a new backend; a thread holding a lease keeps its own). Keyed by thread id with the thread
    itself, as `_thread.ThreadLockAdapter` does: a thread id is reused once its thread ended, and
    a newcomer never inherits what a thread that ended held."""

    def __init__(self) -> None:
        self.native: Any = None
        self.generation = generation()
        self.held: dict[int, tuple[weakref.ref[threading.Thread], _Guard]] = {}
        self.holders: dict[int, tuple[weakref.ref[threading.Thread], Any, Any]] = {}
        self.guard = threading.Lock()

    def mine(self) -> Optional[_Guard]:
        """What the calling thread holds."""
        known = self.held.get(threading.get_ident())
        return known[1] if known is not None and known[0]() is threading.current_thread() else None

    def keep(self, guard: _Guard) -> None:
        with self.guard:
            self.held = {i: h for i, h in self.held.items() if h[0]() is not None}
            self.held[threading.get_ident()] = (weakref.ref(threading.current_thread()), guard)

    def drop(self) -> None:
        self.held.pop(threading.get_ident(), None)


def _threads(mode: _Mode) -> _Threads:
    lock = mode._lock
    threads = lock.__dict__.get("_threads")
    if threads is None:
        threads = lock.__dict__.setdefault("_threads", _Threads())
    native = lock._built()
    with threads.guard:
        threads.native = native
        if threads.generation != generation():
            threads.held, threads.holders, threads.generation = {}, {}, generation()
    return threads  # type: ignore[no-any-return]


class _ThreadSide:
    """One side of a read-write lock for plain threads."""

    def __init__(self, mode: _Mode) -> None:
        self._mode = mode

    def _label(self, what: str) -> str:
        return f"ReadWriteLock.{'write' if self._mode._write else 'read'}.from_thread.{what}"

    def _holder(self, threads: _Threads) -> Any:
        """The thread's holder of this side, after the driver's check that it may ask for it."""
        me, key = threading.current_thread(), threading.get_ident()
        with threads.guard:
            known = threads.holders.get(key)
            if known is None or known[0]() is not me or (known[1] is not threads.native and threads.mine() is None):
                # Threads that ended leave their holders behind: drop them.
                threads.holders = {k: h for k, h in threads.holders.items() if h[0]() is not None}
                native = threads.native
                known = threads.holders[key] = (weakref.ref(me), native, native.holders(thread=True))
        known[2].check(write=self._mode._write)
        return known[2].holder(write=self._mode._write)

    def _acquire(self, what: str, nowait: bool, timeout: Optional[float]) -> Any:
        _refuse_on_loop(self._label(what))
        threads = _threads(self._mode)
        holder = self._holder(threads)
        answer = holder.acquire_nowait_blocking() if nowait else holder.acquire_blocking(timeout)
        guard = self._mode._granted(holder, answer)
        threads.keep(guard)
        return guard

    def acquire(self, *, timeout: Optional[Seconds] = None) -> Any:
        """Acquires this side, blocking up to `timeout` (forever by default)."""
        return self._acquire("acquire", False, seconds("timeout", timeout))

    def acquire_nowait(self) -> Any:
        """One attempt: `WouldBlockError` if refused."""
        return self._acquire("acquire_nowait", True, None)

    def _mine(self, what: str) -> tuple[_Threads, _Guard]:
        _refuse_on_loop(self._label(what))
        threads = _threads(self._mode)
        held = threads.mine()
        if not isinstance(held, WriteGuard if self._mode._write else ReadGuard):
            raise LockNotOwnedError(name=self._mode.name)
        return threads, held

    def extend(self) -> None:
        """Renews the lease this thread holds on this side."""
        _, guard = self._mine("extend")
        try:
            _, _, fence = guard._holder.extend_blocking()
        except LockNotOwnedError:
            guard._spend()
            raise
        guard._renewed(fence)

    def release(self) -> None:
        """Releases the lease this thread holds on this side: `LockNotOwnedError` if none."""
        threads, guard = self._mine("release")
        try:
            guard._holder.release_blocking()
        except LockNotOwnedError:
            guard._spend()
            threads.drop()
            raise
        # (Any other failure keeps the guard: the release can be tried again.)
        guard._spend()
        threads.drop()

    def owned(self) -> bool:
        """Whether this thread holds a live lease of this side in the store."""
        _refuse_on_loop(self._label("owned"))
        held = _threads(self._mode).mine()
        if not isinstance(held, WriteGuard if self._mode._write else ReadGuard) or held._released:
            return False
        return bool(held._holder.owned_blocking())

    def hold(self, *, timeout: Optional[Seconds] = None) -> _ThreadHold:
        """`with lock.write.from_thread.hold(timeout=5) as guard:`."""
        return _ThreadHold(self, seconds("timeout", timeout))

    def __enter__(self) -> Any:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


class ThreadReadAdapter(_ThreadSide):
    """`lock.read.from_thread`: readers from plain threads."""


class ThreadWriteAdapter(_ThreadSide):
    """`lock.write.from_thread`: the writer from a plain thread; `downgrade()` turns this
    thread's write lease into a read lease, which `__exit__` then releases."""

    def downgrade(self) -> ReadGuard:
        """Turns this thread's write lease into a read lease in one step."""
        threads, guard = self._mine("downgrade")
        assert isinstance(guard, WriteGuard)  # the write side's
        guard._check()
        try:
            answer = guard._holder.downgrade_blocking()
        except LockNotOwnedError:
            guard._spend()
            threads.drop()
            raise
        read = downgraded(self._mode, guard, answer)
        threads.keep(read)
        return read

    def __exit__(self, *exc: object) -> None:
        if isinstance(_threads(self._mode).mine(), ReadGuard):
            self._mode._lock.read.from_thread.release()
        else:
            self.release()


class _ThreadHold:
    def __init__(self, side: _ThreadSide, timeout: Optional[float]) -> None:
        self._side, self._timeout = side, timeout

    def __enter__(self) -> Any:
        return self._side._acquire("hold", False, self._timeout)

    def __exit__(self, *exc: object) -> None:
        self._side.__exit__(*exc)
