"""`LockConfig`, `TaskLockConfig`, `LeaderElectionConfig`: the settings of a primitive as one
immutable value, for `from_config` and `reconfigure`. `worker` defaults to a fresh
16-hex-character identity per config. As in grelmicro 0.44, lease-like fields are
`timedelta`s and the others float seconds; each is validated by the core when built."""

from __future__ import annotations

import secrets
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Any, ClassVar

from tenure import _tenure
from tenure._durations import seconds


def _worker() -> str:
    """A fresh worker identity: 16 random hex characters, as grelmicro makes them."""
    return secrets.token_hex(8)


def _duration(value: Any) -> timedelta:
    return value if isinstance(value, timedelta) else timedelta(seconds=float(value))


class _Config:
    _native_class: ClassVar[Any]
    _timedeltas: ClassVar[tuple[str, ...]]

    def __post_init__(self) -> None:
        for name in self._timedeltas:
            value = getattr(self, name)
            seconds(name, value)  # a clear error for negatives, NaN and wrong types
            object.__setattr__(self, name, _duration(value))
        object.__setattr__(self, "worker", str(getattr(self, "worker")))
        self._native_class("config", _tenure.memory_backend(), env_load=False, **self._native_kwargs())

    def _native_kwargs(self) -> dict[str, Any]:
        """The fields as the native constructors take them (seconds as floats)."""
        values = asdict(self)  # type: ignore[call-overload]
        return {k: v.total_seconds() if isinstance(v, timedelta) else v for k, v in values.items()}

    @classmethod
    def _from_native(cls, values: dict[str, Any]) -> Any:
        return cls(**values)


@dataclass(frozen=True)
class LockConfig(_Config):
    """Settings of a `Lock`."""

    _native_class: ClassVar[Any] = _tenure.Lock
    _timedeltas: ClassVar[tuple[str, ...]] = ("lease_duration",)

    worker: str = field(default_factory=_worker)
    lease_duration: timedelta = field(default=timedelta(seconds=60))
    retry_interval: float = 0.1
    retry_jitter: float = 0.1
    backend_timeout: float = 5.0


@dataclass(frozen=True)
class ReadWriteLockConfig(LockConfig):
    """Settings of a `ReadWriteLock` (a `LockConfig`'s: one lease for readers, the writer and a
    waiting writer's intent; environment kind `READWRITELOCK`)."""

    _native_class: ClassVar[Any] = _tenure.ReadWriteLock


@dataclass(frozen=True)
class TaskLockConfig(_Config):
    """Settings of a `TaskLock`."""

    _native_class: ClassVar[Any] = _tenure.TaskLock
    _timedeltas: ClassVar[tuple[str, ...]] = ("min_hold_duration", "lease_duration")

    worker: str = field(default_factory=_worker)
    min_hold_duration: timedelta = field(default=timedelta(seconds=1))
    lease_duration: timedelta = field(default=timedelta(seconds=60))
    backend_timeout: float = 5.0


@dataclass(frozen=True)
class LeaderElectionConfig(_Config):
    """Settings of a `LeaderElection`."""

    _native_class: ClassVar[Any] = _tenure.LeaderElection
    _timedeltas: ClassVar[tuple[str, ...]] = ("lease_duration", "renew_deadline")

    worker: str = field(default_factory=_worker)
    lease_duration: timedelta = field(default=timedelta(seconds=15))
    renew_deadline: timedelta = field(default=timedelta(seconds=10))
    retry_interval: float = 2.0
    retry_jitter: float = 0.1
    backend_timeout: float = 5.0
    error_interval: float = 30.0
