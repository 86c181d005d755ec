"""What `Lock`, `TaskLock` and `LeaderElection` share: their settings (checked at construction, by
building the native object once on a scratch memory backend, so a bad name or value fails there
as in grelmicro), the backend they were given, and the native object built on it at first use."""

from __future__ import annotations

import os
from typing import Any, Optional, Union
from uuid import UUID

from tenure import _tenure
from tenure._coordination import current
from tenure._durations import seconds
from tenure._providers import LockAdapter
from tenure.errors import OutOfContextError

_DURATIONS = {"lease_duration", "retry_interval", "backend_timeout", "renew_deadline", "error_interval", "min_hold_duration"}


class Primitive:
    """Base of the coordination primitives."""

    _native_class: Any
    _backend_hint: str
    _slot = "lock"
    _thread_adapter: Any = None

    def __init__(
        self,
        name: str,
        backend: Optional[LockAdapter],
        worker: Union[str, UUID, None],
        env_prefix: Optional[str],
        env_load: Optional[bool],
        **values: Any,
    ) -> None:
        settings: dict[str, Any] = {"worker": None if worker is None else str(worker), "env_prefix": env_prefix, "env_load": env_load}
        for key, value in values.items():
            settings[key] = seconds(key, value) if key in _DURATIONS else value
        probe = self._native_class(name, _tenure.memory_backend(), **settings)
        if settings["worker"] is None:
            settings["worker"] = probe.config()["worker"]
        self._name = name
        self._backend = backend
        self._settings = settings
        self._native: Any = None
        self._native_backend: Optional[_tenure.Backend] = None
        self._native_pid = os.getpid()

    @property
    def name(self) -> str:
        """The name."""
        return self._name

    @property
    def backend(self) -> LockAdapter:
        """The backend given at construction, else the one of the innermost
        `async with Coordination(...)` block, resolved on each call."""
        if self._backend is not None:
            return self._backend
        coordination = current()
        if coordination is not None:
            return coordination.lock_backend if self._slot == "lock" else coordination.election_backend
        raise OutOfContextError(
            f"{type(self).__name__}('{self._name}') resolved no backend. Pass backend= ({self._backend_hint}), "
            "or use it inside `async with Coordination(provider):`."
        )

    @property
    def config(self) -> dict[str, Any]:
        """The resolved settings (seconds as floats)."""
        try:
            return dict(self._built().config())
        except OutOfContextError:
            return dict(self._settings)

    @property
    def from_thread(self) -> Any:
        """The blocking adapter for plain threads (each thread its own holder)."""
        adapter = self.__dict__.get("_from_thread")
        if adapter is None:
            adapter = self.__dict__["_from_thread"] = self._thread_adapter(self)
        return adapter

    def _built(self) -> Any:
        """The native object, built on the backend's open store (again if it was reopened)."""
        native_backend = self.backend._native()
        if self._native is None or self._native_backend is not native_backend or self._native_pid != os.getpid():
            self._native = self._native_class(self._name, native_backend, **self._settings)
            self._native_backend = native_backend
            self._native_pid = os.getpid()
            self._rebuilt()
        return self._native

    def _own_native(self) -> Any:
        """The native object if it was built in this process (a forked child gets `None`)."""
        return self._native if self._native_pid == os.getpid() else None

    def _rebuilt(self) -> None:
        """Called when a new native object replaced the old one."""
