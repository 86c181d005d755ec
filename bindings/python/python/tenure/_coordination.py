"""`Coordination`: one component wiring the backends of every primitive.

`Coordination(provider)` resolves the lock, election and schedule backends from one provider;
the `lock=`, `election=` (0.44: `leaderelection=`) and `schedule=` keywords set each on its own.
`async with Coordination(...)` opens the providers it was given and, for the code inside the
block (and the tasks it starts), becomes the backend of every primitive built with
`backend=None`; outside any such block those primitives raise `OutOfContextError`."""

from __future__ import annotations

import contextvars
from typing import Any, Optional, Union

from tenure._providers import LeaderElectionAdapter, LockAdapter, _Provider
from tenure.errors import CoordinationBackendError, SettingsValidationError

#: The components of the enclosing `async with` blocks, by name (innermost wins).
_CURRENT: contextvars.ContextVar[dict[str, Coordination]] = contextvars.ContextVar("tenure_coordination", default={})

Source = Union[_Provider, LockAdapter, type, None]


def current(name: str = "default") -> Optional[Coordination]:
    """The component named `name` of the enclosing `async with` blocks; for `"default"`, a sole
    component of another name answers too (as in grelmicro)."""
    components = _CURRENT.get()
    found = components.get(name)
    if found is None and name == "default" and len(components) == 1:
        found = next(iter(components.values()))
    return found


class Coordination:
    """Backends for locks, task locks and leader elections, and a scope that makes them the default."""

    kind = "coordination"

    def __init__(
        self,
        source: Source = None,
        *,
        lock: Source = None,
        election: Source = None,
        schedule: Source = None,
        leaderelection: Source = None,
        name: str = "default",
    ) -> None:
        if election is not None and leaderelection is not None:
            raise SettingsValidationError("pass either election= or leaderelection=, not both")
        source = _instance(source)
        self._name = name
        self._lock = _lock_backend(_instance(lock) if lock is not None else source)
        self._election = _election_backend(
            _instance(election if election is not None else leaderelection)
            if election is not None or leaderelection is not None
            else source
        )
        self._schedule = _instance(schedule) if schedule is not None else source
        self._tokens: list[contextvars.Token] = []

    @property
    def name(self) -> str:
        """The registration name."""
        return self._name

    @property
    def lock_backend(self) -> LockAdapter:
        """The lock backend (`CoordinationBackendError` if none is wired)."""
        if self._lock is None:
            raise CoordinationBackendError(_missing("lock", "lock="))
        return self._lock

    @property
    def election_backend(self) -> LeaderElectionAdapter:
        """The leader election backend (`CoordinationBackendError` if none is wired)."""
        if self._election is None:
            raise CoordinationBackendError(_missing("leader election", "election="))
        return self._election

    def lock(self, name: str, **kwargs: Any) -> Any:
        """A `Lock` on this component's lock backend."""
        from tenure._lock import Lock

        return Lock(name, backend=self.lock_backend, **kwargs)

    def tasklock(self, name: str, **kwargs: Any) -> Any:
        """A `TaskLock` on this component's lock backend."""
        from tenure._task_lock import TaskLock

        return TaskLock(name, backend=self.lock_backend, **kwargs)

    def leaderelection(self, name: str, **kwargs: Any) -> Any:
        """A `LeaderElection` on this component's election backend."""
        from tenure._election import LeaderElection

        return LeaderElection(name, backend=self.election_backend, **kwargs)

    def _providers(self) -> list[_Provider]:
        found: list[_Provider] = []
        for adapter in (self._lock, self._election):
            provider = None if adapter is None else adapter.provider
            if provider is not None and all(provider is not p for p in found):
                found.append(provider)
        return found

    async def __aenter__(self) -> Coordination:
        for provider in self._providers():
            await provider.open()
        self._tokens.append(_CURRENT.set({**_CURRENT.get(), self._name: self}))
        return self

    async def __aexit__(self, *exc: object) -> None:
        _CURRENT.reset(self._tokens.pop())
        for provider in self._providers():
            await provider.close()


def _instance(source: Source) -> Any:
    """A zero-argument class is instantiated for you, as in grelmicro."""
    if isinstance(source, type):
        try:
            return source()
        except TypeError as error:
            raise TypeError(f"{source.__name__} needs arguments: pass an instance instead") from error
    return source


def _lock_backend(source: Any) -> Optional[LockAdapter]:
    if source is None or isinstance(source, LeaderElectionAdapter):
        return None
    if isinstance(source, LockAdapter):
        return source
    if isinstance(source, _Provider):
        return source.lock()
    raise TypeError(f"not a provider or lock backend: {source!r}")


def _election_backend(source: Any) -> Optional[LeaderElectionAdapter]:
    if source is None:
        return None
    if isinstance(source, LeaderElectionAdapter):
        return source
    if isinstance(source, LockAdapter):
        return None
    if isinstance(source, _Provider):
        return source.leaderelection()
    raise TypeError(f"not a provider or leader election backend: {source!r}")


def _missing(what: str, keyword: str) -> str:
    return (
        f"Coordination has no {what} backend. Pass a provider that serves it, or set the {what} backend "
        f"explicitly with {keyword}."
    )
