"""What `Lock`, `TaskLock` and `LeaderElection` share: their settings (checked at construction, by
building the native object once on a scratch memory backend, so a bad name or value fails there
as in grelmicro), the backend they were given, and the native object built on it at first use."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any, Optional, Union
from uuid import UUID

from tenure import _tenure
from tenure._process import generation
from tenure._coordination import current
from tenure._durations import seconds
from tenure._adapters import _Adapter, native_of
from tenure.errors import OutOfContextError, SettingsValidationError

_DURATIONS = {"lease_duration", "retry_interval", "backend_timeout", "renew_deadline", "error_interval", "min_hold_duration"}


#: The `Coordination` property serving each slot.
_SLOT_BACKENDS = {
    "lock": "lock_backend",
    "leaderelection": "leaderelection_backend",
    "readwritelock": "readwritelock_backend",
    "semaphore": "semaphore_backend",
}


class Primitive:
    """Base of the coordination primitives."""

    _native_class: Any
    _backend_hint: str
    _slot = "lock"
    _key_prefix = "lock:"
    _thread_adapter: Any = None
    _config_class: Any = None

    def __init__(
        self,
        name: str,
        backend: Any,
        worker: Union[str, UUID, None],
        env_prefix: Optional[str],
        env_load: Optional[bool],
        **values: Any,
    ) -> None:
        settings: dict[str, Any] = {"worker": None if worker is None else str(worker), "env_prefix": env_prefix, "env_load": env_load}
        for key, value in values.items():
            settings[key] = seconds(key, value) if key in _DURATIONS else value
        probe = self._native_class(name, _tenure.memory_backend(), **settings)
        # The environment is read once, here: later builds use the values it resolved.
        settings.update(probe.config())
        self._name = name
        self._backend = backend
        self._settings = settings
        self._native: Any = None
        self._native_backend: Optional[_tenure.Backend] = None
        self._native_generation = generation()
        self._building = threading.Lock()
        self._config: Any = None

    @property
    def name(self) -> str:
        """The name."""
        return self._name

    @property
    def backend(self) -> Any:
        """The backend given at construction, else the one of the innermost
        `async with Coordination(...)` block, resolved on each call."""
        if self._backend is not None and not isinstance(self._backend, str):
            return self._backend
        component = "default" if self._backend is None else self._backend
        coordination = current(component)
        if coordination is not None:
            return getattr(coordination, _SLOT_BACKENDS[self._slot])
        if component != "default":
            raise OutOfContextError(
                f"{type(self).__name__}('{self._name}') asked for the Coordination component '{component}', and no "
                f"`async with Coordination(..., name='{component}'):` block encloses this call."
            )
        raise OutOfContextError(
            f"{type(self).__name__}('{self._name}') resolved no backend. Pass backend= ({self._backend_hint}), "
            "or use it inside `async with Coordination(provider):`."
        )

    @property
    def config(self) -> Any:
        """The settings in force (the object given to `from_config` or `reconfigure`, if any)."""
        if self._config is None:
            names = [f.name for f in dataclasses.fields(self._config_class)]
            self._config = self._config_class._from_native({k: self._settings[k] for k in names})
        return self._config

    @classmethod
    def from_config(cls, name: str, config: Any, *, backend: Any = None, **extra: Any) -> Any:
        """Builds it from a config object, reading no environment (`config` is kept as is)."""
        if not isinstance(config, cls._config_class):
            raise TypeError(f"from_config requires {cls._config_class.__name__}, got {type(config).__name__}")
        primitive = cls(name, backend=backend, env_load=False, **config._native_kwargs(), **extra)
        primitive._config = config
        return primitive

    async def reconfigure(self, config: Any) -> None:
        """Applies `config` from the next call on (a running election at its next turn). The
        worker cannot change."""
        if not isinstance(config, self._config_class):
            raise TypeError(f"reconfigure requires {self._config_class.__name__}, got {type(config).__name__}")
        if config == self.config:
            return
        if config.worker != self._settings["worker"]:
            raise SettingsValidationError(
                f"the worker is immutable and cannot change ({self._settings['worker']!r} -> {config.worker!r})"
            )
        values = config._native_kwargs()
        values.pop("worker")
        native = self._own_native()
        if native is not None:
            native.reconfigure(**values)
        self._settings.update(values)
        self._config = config

    @property
    def from_thread(self) -> Any:
        """The blocking adapter for plain threads (each thread its own holder)."""
        adapter = self.__dict__.get("_from_thread")
        if adapter is None:
            adapter = self.__dict__["_from_thread"] = self._thread_adapter(self)
        return adapter

    def _built(self) -> Any:
        """The native object, built on the backend's open store (again if it was reopened)."""
        backend = self.backend
        # A built-in store's adapter answers directly (the common case, kept to one call).
        native_backend = backend._native() if isinstance(backend, _Adapter) else self._backend_native()
        stale = self._native_backend is not native_backend or self._native_generation != generation()
        if self._native is None or stale:
            with self._building:  # threads using it first at once build it once
                stale = self._native_backend is not native_backend or self._native_generation != generation()
                if self._native is None or stale:
                    self._native = self._native_class(self._name, native_backend, **self._settings)
                    self._native_backend = native_backend
                    self._native_generation = generation()
                    self._rebuilt()
        return self._native

    def _backend_native(self) -> _tenure.Backend:
        """The native backend of the backend in force (an adapter's store, or a user's backend)."""
        return native_of(self.backend, self._slot, type(self).__name__)

    async def _call(self, error: type, call: str, *args: Any) -> Any:
        """One backend call of grelmicro's low-level API (`do_*`), bounded by `backend_timeout`:
        a failure is `error` (`LockAcquireError`, ...) with the store's exception as its cause."""
        native = self._backend_native()
        try:
            return await getattr(_tenure, call)(native, f"{self._key_prefix}{self._name}", *args, self._settings["backend_timeout"])
        except Exception as failure:
            raise error(name=self._name) from failure

    def _own_native(self) -> Any:
        """The native object if it was built in this process (a forked child gets `None`)."""
        return self._native if self._native_generation == generation() else None

    def _rebuilt(self) -> None:
        """Called when a new native object replaced the old one."""
