"""`Coordination`: one component wiring the backends of every primitive.

`Coordination(provider)` resolves the lock, read-write lock, election and schedule backends from
one provider (its `lock_backend()` / `readwritelock_backend()` / `leaderelection_backend()` /
`schedule_backend()` factories, or the API reference's `lock()` / `leaderelection()` /
`schedule()`); a bare backend as `source` fills every slot whose protocol it serves. The `lock=`,
`readwritelock=`, `election=` (0.44: `leaderelection=`) and `schedule=` keywords set each slot
on its own: a provider, a backend object, or a zero-argument
class of either. `requires=` (`process`, `host`, `cluster`; default `cluster`) is the reach the
backends must have: see `tenure._scope`.

`async with Coordination(...)` checks the scopes, opens the providers it was given and enters the
backends that are async context managers; for the code inside the block (and the tasks it
starts) it becomes the backend of every primitive built with `backend=None`; outside any such
block those primitives raise `OutOfContextError`."""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Optional

from tenure import _scope
from tenure._providers import _Provider
from tenure._adapters import _Adapter
from tenure._user_backend import check, fills, native, serves
from tenure.errors import CoordinationBackendError, SettingsValidationError

#: The components of the enclosing `async with` blocks, by name (innermost wins).
_CURRENT: contextvars.ContextVar[dict[str, Coordination]] = contextvars.ContextVar("tenure_coordination", default={})

_SLOTS = ("lock", "readwritelock", "semaphore", "leaderelection", "schedule")
_FACTORIES = {slot: (f"{slot}_backend", slot) for slot in _SLOTS}
_MISSING = {
    "lock": "Coordination has no lock backend. Pass a lock provider as Coordination(provider) or Coordination(lock=...).",
    "leaderelection": (
        "Coordination has no leader election backend. Pass an election provider as Coordination(provider) or "
        "Coordination(leaderelection=...)."
    ),
    "schedule": (
        "Coordination has no schedule backend. Pass a schedule provider as Coordination(provider) or "
        "Coordination(schedule=...)."
    ),
    "readwritelock": (
        "Coordination has no read-write lock backend. Pass a read-write lock provider as Coordination(provider) or "
        "Coordination(readwritelock=...)."
    ),
    "semaphore": (
        "Coordination has no semaphore backend. Pass a provider as Coordination(provider) or "
        "Coordination(semaphore=...)."
    ),
}


def current(name: str = "default") -> Optional[Coordination]:
    """The component named `name` of the enclosing `async with` blocks; for `"default"`, a sole
    component of another name answers too (as in grelmicro)."""
    components = _CURRENT.get()
    found = components.get(name)
    if found is None and name == "default" and len(components) == 1:
        found = next(iter(components.values()))
    return found


class Coordination:
    """Backends for locks, task locks, leader elections and cron schedules, and a scope that makes
    them the default."""

    kind = "coordination"
    default_requires = "cluster"

    def __init__(
        self,
        source: Any = None,
        *,
        lock: Any = None,
        election: Any = None,
        leaderelection: Any = None,
        readwritelock: Any = None,
        semaphore: Any = None,
        schedule: Any = None,
        requires: Optional[str] = None,
        name: str = "default",
    ) -> None:
        if election is not None and leaderelection is not None:
            raise SettingsValidationError("pass either election= or leaderelection=, not both")
        self._name = name
        self._requires = _scope.required(requires)
        self._sources: list[Any] = []
        self._slots: dict[str, Any] = dict.fromkeys(_SLOTS)
        if source is not None:
            self._fill(_instance(source))
        given = {
            "lock": lock,
            "readwritelock": readwritelock,
            "semaphore": semaphore,
            "leaderelection": election if election is not None else leaderelection,
            "schedule": schedule,
        }
        for slot, value in given.items():
            if value is not None:
                self._slots[slot] = self._keyword(slot, _instance(value))
        self._stacks: list[contextlib.AsyncExitStack] = []
        self._natives: list[Any] = []
        self._tokens: list[contextvars.Token[dict[str, Coordination]]] = []

    def _fill(self, source: Any) -> None:
        """A provider fills every slot it has a factory for; a backend the slots it serves."""
        if not isinstance(source, _Provider) and any(serves(source, slot) for slot in _SLOTS):
            for slot in _SLOTS:
                if fills(source, slot):
                    self._slots[slot] = source
            return
        if not _is_provider(source):
            raise TypeError(f"Coordination expects a provider or a coordination backend, got {type(source).__name__}.")
        self._sources.append(source)
        for slot in _SLOTS:
            try:
                self._slots[slot] = _factory(source, slot)
            except NotImplementedError:
                self._slots[slot] = None

    def _keyword(self, slot: str, value: Any) -> Any:
        if _is_provider(value) and not serves(value, slot):
            if all(value is not s for s in self._sources):
                self._sources.append(value)
            return _factory(value, slot)
        check(value, slot, f"Coordination({slot}=...)")
        return value

    @property
    def name(self) -> str:
        """The registration name."""
        return self._name

    @property
    def requires(self) -> str:
        """The reach the backends must have: `process`, `host` or `cluster`."""
        return self._requires

    def _slot(self, slot: str) -> Any:
        backend = self._slots[slot]
        if backend is None:
            raise CoordinationBackendError(_MISSING[slot])
        return backend

    @property
    def lock_backend(self) -> Any:
        """The lock backend (`CoordinationBackendError` if none is wired)."""
        return self._slot("lock")

    @property
    def leaderelection_backend(self) -> Any:
        """The leader election backend (`CoordinationBackendError` if none is wired)."""
        return self._slot("leaderelection")

    election_backend = leaderelection_backend

    @property
    def readwritelock_backend(self) -> Any:
        """The read-write lock backend (`CoordinationBackendError` if none is wired)."""
        return self._slot("readwritelock")

    @property
    def semaphore_backend(self) -> Any:
        """The semaphore backend (`CoordinationBackendError` if none is wired)."""
        return self._slot("semaphore")

    @property
    def schedule_backend(self) -> Any:
        """The cron schedule backend (`CoordinationBackendError` if none is wired)."""
        return self._slot("schedule")

    def lock(self, name: str, **kwargs: Any) -> Any:
        """A `Lock` on this component's lock backend."""
        from tenure._lock import Lock

        return Lock(name, backend=self.lock_backend, **kwargs)

    def tasklock(self, name: str, **kwargs: Any) -> Any:
        """A `TaskLock` on this component's lock backend."""
        from tenure._task_lock import TaskLock

        return TaskLock(name, backend=self.lock_backend, **kwargs)

    def readwritelock(self, name: str, **kwargs: Any) -> Any:
        """A `ReadWriteLock` on this component's read-write lock backend."""
        from tenure._rw_lock import ReadWriteLock

        return ReadWriteLock(name, backend=self.readwritelock_backend, **kwargs)

    def semaphore(self, name: str, permits: int, **kwargs: Any) -> Any:
        """A `Semaphore` of `permits` permits on this component's semaphore backend."""
        from tenure._semaphore import Semaphore

        return Semaphore(name, permits, backend=self.semaphore_backend, **kwargs)

    def leaderelection(self, name: str, **kwargs: Any) -> Any:
        """A `LeaderElection` on this component's election backend."""
        from tenure._election import LeaderElection

        return LeaderElection(name, backend=self.leaderelection_backend, **kwargs)

    def _contexts(self) -> list[Any]:
        """What `async with` enters, in order: the providers, then each backend once (slot order
        lock, leader election, schedule) that is an async context manager."""
        found: list[Any] = []
        for candidate in [*self._sources, *(getattr(b, "provider", None) for b in self._slots.values()), *self._slots.values()]:
            if candidate is None or any(candidate is f for f in found):
                continue
            if callable(getattr(candidate, "__aenter__", None)) and callable(getattr(candidate, "__aexit__", None)):
                found.append(candidate)
        return found

    async def __aenter__(self) -> Coordination:
        _scope.check(f"Coordination({self._name!r})", [b for b in self._slots.values() if b is not None], self._requires)
        async with contextlib.AsyncExitStack() as opening:
            for context in self._contexts():
                await opening.enter_async_context(context)
            # All entered: keep them for __aexit__ (a failure above exits those already entered).
            self._stacks.append(opening.pop_all())
        # A backend written by a user runs its calls off any loop (from_thread) on this one; the
        # component keeps its native store while it is entered.
        self._natives = [
            native(backend, slot, "Coordination")
            for slot, backend in self._slots.items()
            if slot in ("lock", "leaderelection") and backend is not None and not isinstance(backend, _Adapter)
        ]
        self._tokens.append(_CURRENT.set({**_CURRENT.get(), self._name: self}))
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Leaves the scope and exits what it entered (in reverse), even when one exit raises."""
        if not self._tokens:
            return
        token, stack = self._tokens.pop(), self._stacks.pop()
        try:
            _CURRENT.reset(token)
        except ValueError:
            # Exited in another context than it was entered in (a fixture's teardown): leave
            # this component's name out of the current one.
            _CURRENT.set({k: v for k, v in _CURRENT.get().items() if v is not self})
        finally:
            if not self._tokens:
                self._natives = []
            await stack.aclose()


def _is_provider(value: Any) -> bool:
    if isinstance(value, _Provider):
        return True
    return any(callable(getattr(value, f, None)) for factories in _FACTORIES.values() for f in factories)


def _factory(provider: Any, slot: str) -> Any:
    """The provider's backend for `slot`, through its 0.44 name or the reference's."""
    for name in _FACTORIES[slot]:
        make = getattr(provider, name, None)
        if callable(make):
            return make()
    raise NotImplementedError(f"{type(provider).__name__} has no {slot} backend")


def _instance(source: Any) -> Any:
    """A zero-argument class is instantiated for you, as in grelmicro."""
    if isinstance(source, type):
        try:
            return source()
        except TypeError as error:
            raise TypeError(
                f"{source.__name__} needs constructor arguments, so it cannot be passed as a bare class. "
                f"Instantiate it first, for example {source.__name__}(...)"
            ) from error
    return source

