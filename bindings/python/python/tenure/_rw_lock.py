"""`ReadWriteLock`: many readers or one writer per name, grelmicro 0.44's `ReadWriteLock` on
Tenure's core (`lock.read` and `lock.write`, `ReadGuard.generation`, `WriteGuard.fencing_token`,
`poisoned` and `downgrade()`, `state()`).

Each asyncio task is its own reader or writer: a task that reads and asks for the write lock gets
`LockUpgradeError` (it would wait for itself), one that asks again for what it holds
`LockReentrantError`. Writers come first: a writer that waits keeps an intent in the store that
holds new readers out, and withdraws it when it stops waiting (a timeout, a cancel, a failure)."""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass
from typing import Any, Optional, Union
from uuid import UUID

from tenure import _tenure
from tenure._config import ReadWriteLockConfig
from tenure._durations import Seconds, positive, seconds
from tenure._primitive import Primitive
from tenure._process import generation
from tenure.errors import LockAcquireError, LockNotOwnedError


@dataclass(frozen=True)
class ReadWriteLockState:
    """A point-in-time view of a read-write lock."""

    #: The fencing token of the last write (0 for a name never written).
    generation: int
    #: A writer holds a live lease.
    writing: bool
    #: How many readers hold live leases.
    readers: int
    #: How many writers wait with a live intent.
    waiting_writers: int


@dataclass(frozen=True)
class WriteGrant:
    """A write lease granted by a backend: its fencing token, and whether the writer before it
    expired without releasing."""

    fencing_token: int
    poisoned: bool


class _Guard:
    """One lease a task (or thread) holds: its name and ownership token. Its validity is the
    driver's (counted from the request's send, less a drift allowance), read from the holder."""

    __slots__ = ("_holder", "_name", "_released", "_token")

    def __init__(self, holder: Any, name: str, token: str) -> None:
        self._holder, self._name, self._token = holder, name, token
        self._released = False

    @property
    def name(self) -> str:
        """The read-write lock's name."""
        return self._name

    @property
    def token(self) -> str:
        """The ownership token kept in the store for this holder."""
        return self._token

    @property
    def expires_in(self) -> float:
        """Seconds until the lease's validity runs out, as the driver counts it (0 once it has)."""
        return 0.0 if self._released else float(self._holder.valid_for)

    @property
    def valid(self) -> bool:
        """Not released, and the lease's validity has not run out."""
        return not self._released and bool(self._holder.held)

    def _check(self) -> None:
        if not self.valid:
            raise LockNotOwnedError(name=self._name)

    def _renewed(self, fence: int) -> None:
        """An extend answered `fence` (the holder counts the renewed validity)."""

    def _spend(self) -> None:
        self._released = True


class ReadGuard(_Guard):
    """A read lease: `generation` is the fencing token of the last write, what the reader sees."""

    __slots__ = ("_generation", "_mode")

    def __init__(self, mode: Any, holder: Any, name: str, token: str, generation: int) -> None:
        super().__init__(holder, name, token)
        self._mode, self._generation = mode, generation

    @property
    def generation(self) -> int:
        """The fencing token of the last write before this read (`LockNotOwnedError` once the
        guard is spent)."""
        self._check()
        return self._generation

    async def extend(self) -> None:
        """Renews the read lease for another `lease_duration` (`LockNotOwnedError` once spent)."""
        self._check()
        await self._mode._extend(self)

    def __repr__(self) -> str:
        return f"ReadGuard(name={self._name!r}, generation={self._generation}, valid={self.valid})"


class WriteGuard(_Guard):
    """The write lease: send `fencing_token` with every write it protects; `poisoned` says the
    writer before this one let its lease lapse without releasing."""

    __slots__ = ("_fencing_token", "_mode", "_poisoned")

    def __init__(self, mode: Any, holder: Any, name: str, token: str, fence: int) -> None:
        super().__init__(holder, name, token)
        self._mode, self._fencing_token, self._poisoned = mode, fence, bool(holder.poisoned)

    @property
    def fencing_token(self) -> int:
        """Strictly increasing per name across every write (`LockNotOwnedError` once spent)."""
        self._check()
        return self._fencing_token

    def _renewed(self, fence: int) -> None:
        # A write lease granted again carries a new fencing token, and is poisoned.
        if fence != self._fencing_token:
            self._fencing_token, self._poisoned = fence, True
        super()._renewed(fence)

    @property
    def poisoned(self) -> bool:
        """The previous writer's lease ran out without a release (readable after release)."""
        return self._poisoned

    async def extend(self) -> None:
        """Renews the write lease (`LockNotOwnedError` once the guard is spent or its lease ran
        out here); through `lock.write.extend()`, a lease that lapsed and was granted again
        carries a new fencing token and is then `poisoned`."""
        self._check()
        await self._mode._extend(self)

    async def downgrade(self) -> ReadGuard:
        """Turns the write lease into a read lease in one step (no writer gets in between); this
        guard is spent, and the read lease is released when `async with lock.write` ends."""
        return await self._mode._downgrade(self)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return (
            f"WriteGuard(name={self._name!r}, fencing_token={self._fencing_token}, poisoned={self._poisoned}, "
            f"valid={self.valid})"
        )


class ReadWriteLock(Primitive):
    """A distributed read-write lock: `async with lock.read as guard:` for readers (many at once),
    `async with lock.write as guard:` for the writer (alone)."""

    _native_class = _tenure.ReadWriteLock
    _config_class = ReadWriteLockConfig
    _slot = "readwritelock"
    _key_prefix = "rwlock:"
    _backend_hint = "a MemoryReadWriteLockAdapter() for a per-process lock, or provider.readwritelock() of an open provider"

    def __init__(
        self,
        name: str,
        *,
        backend: Any = None,
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
        #: What each task holds (in this process), and its pair of holders (one per side, which
        #: refuse an upgrade and a second lease) with the native lock it was made on.
        self._held: weakref.WeakKeyDictionary[Any, _Guard] = weakref.WeakKeyDictionary()
        self._held_in = generation()
        self._holders: weakref.WeakKeyDictionary[Any, tuple[Any, Any]] = weakref.WeakKeyDictionary()
        self.read = ReadMode(self)
        self.write = WriteMode(self)

    def _rebuilt(self) -> None:
        # A task keeps its pair of holders while it holds a lease (a new backend resolved meanwhile
        # does not let it ask again); after a fork, never (a child never releases its parent's
        # leases).
        if self._held_in != generation():
            self._held, self._held_in = weakref.WeakKeyDictionary(), generation()
            self._holders = weakref.WeakKeyDictionary()

    @property
    def from_thread(self) -> Any:
        raise AttributeError("ReadWriteLock has from_thread on its views: lock.read.from_thread, lock.write.from_thread")

    async def state(self) -> ReadWriteLockState:
        """The lock's state now (`LockOwnedCheckError` if the backend fails)."""
        return ReadWriteLockState(*await self._built().state())


def downgraded(mode: Any, guard: WriteGuard, answer: tuple[str, str, int]) -> ReadGuard:
    """The read guard a downgrade of `guard` answered (`guard` spent)."""
    guard._spend()
    _, token, generation_read = answer
    return ReadGuard(mode._lock.read, guard._holder, guard.name, token, generation_read)


class _Mode:
    """One side of a read-write lock, per asyncio task."""

    _write = False

    def __init__(self, lock: ReadWriteLock) -> None:
        self._lock = lock

    @property
    def name(self) -> str:
        """The read-write lock's name."""
        return self._lock.name

    @property
    def backend(self) -> Any:
        """The backend in force."""
        return self._lock.backend

    @property
    def from_thread(self) -> Any:
        """The blocking adapter of this side for plain threads (each thread its own holder)."""
        adapter = self.__dict__.get("_from_thread")
        if adapter is None:
            from tenure._rw_thread import ThreadReadAdapter, ThreadWriteAdapter

            adapter = self.__dict__["_from_thread"] = (ThreadWriteAdapter if self._write else ThreadReadAdapter)(self)
        return adapter

    def _task(self) -> Any:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("ReadWriteLock must be used from an asyncio task (use from_thread from other threads)")
        return task

    def _holder(self, task: Any) -> Any:
        """The task's holder of this side, after the driver's check that the task may ask for it."""
        native = self._lock._built()
        known = self._lock._holders.get(task)
        if known is None or (known[0] is not native and task not in self._lock._held):
            # A task holding nothing takes its holders from the lock of now (a new backend).
            known = self._lock._holders[task] = (native, native.holders())
        known[1].check(write=self._write)
        return known[1].holder(write=self._write)

    def _granted(self, holder: Any, answer: tuple[str, str, int]) -> _Guard:
        name, token, fence = answer
        if self._write:
            return WriteGuard(self, holder, self.name, token, fence)
        return ReadGuard(self, holder, self.name, token, fence)

    async def _acquire(self, nowait: bool, timeout: Optional[float]) -> Any:
        task = self._task()
        holder = self._holder(task)
        answer = await (holder.acquire_nowait() if nowait else holder.acquire(timeout))
        guard = self._lock._held[task] = self._granted(holder, answer)
        return guard

    async def acquire(self, *, timeout: Optional[Seconds] = None) -> Any:
        """Acquires this side, waiting up to `timeout` (forever by default): `LockTimeoutError`
        (a `TimeoutError`) when it passes."""
        return await self._acquire(False, seconds("timeout", timeout))

    async def acquire_nowait(self) -> Any:
        """One attempt: `WouldBlockError` if refused (a writer records no intent)."""
        return await self._acquire(True, None)

    def _mine(self) -> _Guard:
        """The lease of this side the calling task holds, else `LockNotOwnedError`."""
        held = self._lock._held.get(self._task())
        if not isinstance(held, WriteGuard if self._write else ReadGuard):
            raise LockNotOwnedError(name=self.name)
        return held

    async def extend(self) -> None:
        """Renews the lease this task holds on this side."""
        await self._extend(self._mine())

    async def _extend(self, guard: _Guard) -> None:
        if guard._released:
            raise LockNotOwnedError(name=self.name)
        try:
            _, _, fence = await guard._holder.extend()
        except LockNotOwnedError:
            guard._spend()
            raise
        guard._renewed(fence)

    async def _downgrade(self, guard: WriteGuard) -> ReadGuard:
        guard._check()
        task = self._task()
        try:
            answer = await guard._holder.downgrade()
        except LockNotOwnedError:
            guard._spend()
            if self._lock._held.get(task) is guard:
                del self._lock._held[task]
            raise
        read = self._lock._held[task] = downgraded(self, guard, answer)
        return read

    async def release(self) -> None:
        """Releases the lease this task holds on this side: `LockNotOwnedError` if none."""
        task = self._task()
        guard = self._mine()
        try:
            await guard._holder.release()
        except (LockNotOwnedError, asyncio.CancelledError):
            # Not held any more; or cancelled, and the driver finishes the release in flight (the
            # task then asks with new holders: the old one may end up stale).
            guard._spend()
            self._lock._held.pop(task, None)
            self._lock._holders.pop(task, None)
            raise
        guard._spend()
        self._lock._held.pop(task, None)

    async def owned(self) -> bool:
        """Whether this task holds a live lease of this side in the store."""
        held = self._lock._held.get(self._task())
        if not isinstance(held, WriteGuard if self._write else ReadGuard) or held._released:
            return False
        return bool(await held._holder.owned())

    def hold(self, *, timeout: Optional[Seconds] = None) -> _Hold:
        """`async with lock.write.hold(timeout=5) as guard:`: acquires waiting up to `timeout`,
        releases at the end."""
        return _Hold(self, seconds("timeout", timeout))

    async def __aenter__(self) -> Any:
        return await self.acquire()

    # grelmicro's low-level calls ("should not be called directly", but public): one backend call
    # for `token`, or the guard's own extend and downgrade.

    async def do_extend(self, guard: _Guard) -> None:
        """Renews `guard`'s lease (see `extend`)."""
        await self._extend(guard)


class ReadMode(_Mode):
    """`lock.read`: readers, many at once."""

    async def do_acquire(self, token: str, *, duration: Seconds) -> Optional[int]:
        """One read acquire for `token`: the generation, or `None` if refused
        (`LockAcquireError` if the backend fails)."""
        return await self._lock._call(LockAcquireError, "rw_acquire_read", token, positive("duration", duration))  # type: ignore[no-any-return]

    async def __aexit__(self, *exc: object) -> None:
        await self.release()


class WriteMode(_Mode):
    """`lock.write`: the writer, alone."""

    _write = True

    async def do_acquire(self, token: str, *, duration: Seconds, intent: bool = True) -> Optional[WriteGrant]:
        """One write acquire for `token`: the grant, or `None` if refused, keeping an intent iff
        `intent` (`LockAcquireError` if the backend fails)."""
        granted = await self._lock._call(
            LockAcquireError, "rw_acquire_write", token, positive("duration", duration), bool(intent)
        )
        return None if granted is None else WriteGrant(*granted)

    async def do_downgrade(self, guard: WriteGuard) -> ReadGuard:
        """Turns `guard`'s write lease into a read lease (see `WriteGuard.downgrade`)."""
        return await self._downgrade(guard)

    async def __aexit__(self, *exc: object) -> None:
        # After a downgrade the task holds a read lease: that is what the block releases.
        if isinstance(self._lock._held.get(self._task()), ReadGuard):
            await self._lock.read.release()
        else:
            await self.release()


class _Hold:
    """`mode.hold(timeout=...)`: acquire with a timeout, release at the end."""

    def __init__(self, mode: _Mode, timeout: Optional[float]) -> None:
        self._mode, self._timeout = mode, timeout

    async def __aenter__(self) -> Any:
        return await self._mode._acquire(False, self._timeout)

    async def __aexit__(self, *exc: object) -> None:
        await self._mode.__aexit__(*exc)  # type: ignore[attr-defined]


__all__ = ["ReadGuard", "ReadMode", "ReadWriteLock", "ReadWriteLockState", "WriteGrant", "WriteGuard", "WriteMode"]
