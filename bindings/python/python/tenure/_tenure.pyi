"""The native half of `tenure` (Rust, pyo3). Checked against the built module by `mypy.stubtest`."""

from typing import Any, Awaitable, Optional, final

__all__ = [
    "Backend",
    "Holder",
    "Kept",
    "LeaderElection",
    "Lock",
    "TaskGuard",
    "TaskLock",
    "ThreadGuard",
    "ThreadTaskGuard",
    "forked",
    "memory_backend",
    "open_backend",
    "shutdown",
    "sqlite_file",
    "store_url",
]

_HandleTuple = tuple[str, str, int]
_RecordTuple = tuple[str, float, int, int, int, dict[str, str]]

@final
class Backend:
    def close(self) -> Awaitable[None]: ...

def memory_backend() -> Backend: ...
def open_backend(url: str) -> Awaitable[Backend]: ...
def store_url(
    kind: str,
    env_prefix: str,
    *,
    url: Optional[str] = None,
    host: Optional[str] = None,
    port: Optional[int] = None,
    db: Optional[int] = None,
    database: Optional[str] = None,
    user: Optional[str] = None,
    password: Optional[str] = None,
    path: Optional[str] = None,
    command_timeout: Optional[float] = None,
) -> str: ...
def sqlite_file(url: str) -> Optional[str]: ...
def shutdown() -> None: ...
def forked() -> None: ...

@final
class Lock:
    def __new__(
        cls,
        name: str,
        backend: Backend,
        *,
        worker: Optional[str] = None,
        lease_duration: Optional[float] = None,
        retry_interval: Optional[float] = None,
        retry_jitter: Optional[float] = None,
        backend_timeout: Optional[float] = None,
        env_prefix: Optional[str] = None,
        env_load: Optional[bool] = None,
    ) -> Lock: ...
    @property
    def name(self) -> str: ...
    def config(self) -> dict[str, Any]: ...
    def reconfigure(
        self,
        *,
        lease_duration: Optional[float] = None,
        retry_interval: Optional[float] = None,
        retry_jitter: Optional[float] = None,
        backend_timeout: Optional[float] = None,
    ) -> None: ...
    def holder(self) -> Holder: ...
    def acquire_thread(self, timeout: Optional[float] = None) -> tuple[ThreadGuard, _HandleTuple]: ...
    def acquire_nowait_thread(self) -> tuple[ThreadGuard, _HandleTuple]: ...
    def locked_blocking(self) -> bool: ...
    def locked(self) -> Awaitable[bool]: ...

@final
class Holder:
    def acquire(self, timeout: Optional[float] = None) -> Awaitable[_HandleTuple]: ...
    def acquire_nowait(self) -> Awaitable[_HandleTuple]: ...
    def extend(self) -> Awaitable[_HandleTuple]: ...
    def release(self) -> Awaitable[None]: ...
    def owned(self) -> Awaitable[bool]: ...
    def keep_alive(self, max_hold: float) -> Kept: ...

@final
class Kept:
    def lost(self) -> Awaitable[None]: ...
    @property
    def ended(self) -> Optional[str]: ...
    def release(self) -> Awaitable[None]: ...

@final
class ThreadGuard:
    def extend(self) -> _HandleTuple: ...
    def release(self) -> None: ...
    def owned(self) -> bool: ...

@final
class TaskLock:
    def __new__(
        cls,
        name: str,
        backend: Backend,
        *,
        worker: Optional[str] = None,
        min_hold_duration: Optional[float] = None,
        lease_duration: Optional[float] = None,
        backend_timeout: Optional[float] = None,
        env_prefix: Optional[str] = None,
        env_load: Optional[bool] = None,
    ) -> TaskLock: ...
    def config(self) -> dict[str, Any]: ...
    def reconfigure(
        self,
        *,
        min_hold_duration: Optional[float] = None,
        lease_duration: Optional[float] = None,
        backend_timeout: Optional[float] = None,
    ) -> None: ...
    def enter(self) -> Awaitable[TaskGuard]: ...
    def enter_thread(self) -> ThreadTaskGuard: ...
    def locked_blocking(self) -> bool: ...
    def locked(self) -> Awaitable[bool]: ...

@final
class TaskGuard:
    @property
    def fencing_token(self) -> int: ...
    def extend(self) -> Awaitable[None]: ...
    def exit(self) -> Awaitable[None]: ...

@final
class ThreadTaskGuard:
    def exit(self) -> None: ...

@final
class LeaderElection:
    def __new__(
        cls,
        name: str,
        backend: Backend,
        *,
        worker: Optional[str] = None,
        lease_duration: Optional[float] = None,
        renew_deadline: Optional[float] = None,
        retry_interval: Optional[float] = None,
        retry_jitter: Optional[float] = None,
        backend_timeout: Optional[float] = None,
        error_interval: Optional[float] = None,
        env_prefix: Optional[str] = None,
        env_load: Optional[bool] = None,
        metadata: Optional[dict[str, str]] = None,
    ) -> LeaderElection: ...
    def config(self) -> dict[str, Any]: ...
    def reconfigure(
        self,
        *,
        lease_duration: Optional[float] = None,
        renew_deadline: Optional[float] = None,
        retry_interval: Optional[float] = None,
        retry_jitter: Optional[float] = None,
        backend_timeout: Optional[float] = None,
        error_interval: Optional[float] = None,
    ) -> None: ...
    def run(self) -> Awaitable[None]: ...
    def stop(self) -> Awaitable[None]: ...
    def is_running(self) -> bool: ...
    def is_leader(self) -> bool: ...
    def last_confirmation_age(self) -> Optional[float]: ...
    def is_leader_confirmed_within(self, max_age: float) -> bool: ...
    def wait_for_leader(self) -> Awaitable[None]: ...
    def wait_lose_leader(self) -> Awaitable[None]: ...
    def record(self) -> Optional[_RecordTuple]: ...
