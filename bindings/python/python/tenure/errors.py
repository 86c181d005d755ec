"""The errors of `tenure`, with grelmicro 0.44's classes and hierarchy.

`except` clauses written for grelmicro catch the same failures here: `LockTimeoutError` is both a
`WouldBlockError` and a builtin `TimeoutError`; `LockNotOwnedError` is a `CoordinationError` (not a
`LockReleaseError`, as in 0.44); `SettingsValidationError` is a `ValueError`; `OutOfContextError`
a `RuntimeError`. The Rust core reports each failure by a stable code, never by its message text;
`_from_rust` turns that code into the class below.
"""

from __future__ import annotations

from typing import Optional

__all__ = [
    "AdmissionError",
    "BackendScopeError",
    "BackendScopeWarning",
    "CoordinationBackendError",
    "CoordinationError",
    "EventLoopDeadlockError",
    "LockAcquireError",
    "LockBackendError",
    "LockExtendError",
    "LockLockedCheckError",
    "LockLostError",
    "LockNotOwnedError",
    "LockOwnedCheckError",
    "LockReentrantError",
    "LockReleaseError",
    "LockTimeoutError",
    "LockUpgradeError",
    "OutOfContextError",
    "SettingsValidationError",
    "TenureConfigWarning",
    "TenureError",
    "UnknownEnvironmentWarning",
    "WouldBlockError",
]


class TenureError(Exception):
    """Base of every `tenure` error (grelmicro's `GrelmicroError`)."""


GrelmicroError = TenureError


class EventLoopDeadlockError(BaseException):
    """A synchronous adapter was called on the thread of the event loop that must serve it."""


class CoordinationError(TenureError):
    """Base of the coordination errors."""

    name: Optional[str] = None


class CoordinationBackendError(CoordinationError):
    """A `Coordination` component has no backend for the primitive asked for."""


class LockReentrantError(CoordinationError):
    """The task (or thread) already holds, or is acquiring, this lock."""

    def __init__(self, *, name: str) -> None:
        super().__init__(f"Lock does not support nested usage: name={name}.")
        self.name = name


class LockUpgradeError(CoordinationError):
    """A read holder asked for the write lock."""

    def __init__(self, *, name: str) -> None:
        super().__init__(f"Lock cannot be upgraded from read to write: name={name}.")
        self.name = name


class LockBackendError(CoordinationError):
    """The backend failed during a lock operation."""


class _BackendCallError(LockBackendError):
    pass


class LockLockedCheckError(_BackendCallError):
    """The backend failed in `locked()`."""

    def __init__(self, *, name: str) -> None:
        super().__init__(f"Failed to check if lock is acquired: name={name}.")
        self.name = name


class LockOwnedCheckError(_BackendCallError):
    """The backend failed in `owned()`."""

    def __init__(self, *, name: str) -> None:
        super().__init__(f"Failed to check if lock is owned: name={name}.")
        self.name = name


class LockAcquireError(_BackendCallError):
    """The backend failed while acquiring."""

    def __init__(self, *, name: str) -> None:
        super().__init__(f"Failed to acquire lock: name={name}.")
        self.name = name


class LockExtendError(_BackendCallError):
    """The backend failed while extending."""

    def __init__(self, *, name: str) -> None:
        super().__init__(f"Failed to extend lock: name={name}.")
        self.name = name


class LockReleaseError(_BackendCallError):
    """The backend failed while releasing."""

    def __init__(self, *, name: str, reason: Optional[str] = None) -> None:
        suffix = f", reason={reason}" if reason else ""
        super().__init__(f"Failed to release lock: name={name}{suffix}.")
        self.name = name
        self.reason = reason


class LockNotOwnedError(CoordinationError):
    """Release or extend of a lease this caller does not hold."""

    def __init__(self, *, name: str) -> None:
        super().__init__(
            f"Lock not held: name={name}. This caller never acquired it, already released it, "
            "or its lease ran out."
        )
        self.name = name


class LockLostError(LockNotOwnedError):
    """The lease of a `Lock.hold()` was lost while its body ran, and the body was cancelled (a
    Tenure extension). `reason`: `"expired"` (renewals did not get through before the lease's
    validity ran out), `"lost"` (another holder has it) or `"max_hold"` (the maximum hold was
    reached and the lease released)."""

    def __init__(self, *, name: str, reason: str) -> None:
        super().__init__(name=name)
        self.args = (f"Lock lost while held: name={name}, reason={reason}. The body was cancelled.",)
        self.reason = reason


class AdmissionError(TenureError):
    """The caller was turned away."""


class WouldBlockError(AdmissionError, RuntimeError):
    """A non-blocking acquire was refused."""

    name: Optional[str] = None


class LockTimeoutError(WouldBlockError, TimeoutError):
    """A bounded acquire did not succeed in time."""

    def __init__(self, *, name: str, timeout: float) -> None:
        super().__init__(f"Lock '{name}' not acquired within {timeout}s")
        self.name = name
        self.timeout = timeout


class OutOfContextError(TenureError, RuntimeError):
    """Something was used while it is not open, or no backend could be resolved."""


class SettingsValidationError(TenureError, ValueError):
    """A setting, a name or an environment variable is invalid."""


class BackendScopeError(TenureError, RuntimeError):
    """A backend reaches less far than its `Coordination` requires, in a `staging` or
    `production` environment (`GREL_ENVIRONMENT`)."""

    code = "backend-scope"


class TenureConfigWarning(UserWarning):
    """Base of the configuration warnings (grelmicro's `GrelmicroConfigWarning`)."""


GrelmicroConfigWarning = TenureConfigWarning


class BackendScopeWarning(TenureConfigWarning):
    """A backend reaches less far than its `Coordination` requires, and `GREL_ENVIRONMENT` does
    not say where this runs."""

    code = "backend-scope"


class UnknownEnvironmentWarning(TenureConfigWarning):
    """`GREL_ENVIRONMENT` is not one of development, test, staging, production."""

    code = "unknown-environment"


_BY_CODE = {
    "COORDINATION_BACKEND_MISSING": CoordinationBackendError,
    "LOCK_REENTRANT": LockReentrantError,
    "LOCK_UPGRADE": LockUpgradeError,
    "LOCK_NOT_OWNED": LockNotOwnedError,
    "LOCK_ACQUIRE_FAILED": LockAcquireError,
    "LOCK_EXTEND_FAILED": LockExtendError,
    "LOCK_RELEASE_FAILED": LockReleaseError,
    "LOCK_LOCKED_CHECK_FAILED": LockLockedCheckError,
    "LOCK_OWNED_CHECK_FAILED": LockOwnedCheckError,
    "WOULD_BLOCK": WouldBlockError,
    "LOCK_TIMEOUT": LockTimeoutError,
    "OUT_OF_CONTEXT": OutOfContextError,
    "BACKEND_NOT_OPEN": OutOfContextError,
    "SETTINGS_INVALID": SettingsValidationError,
    "CONFIG_TYPE": TypeError,
    "EVENT_LOOP_DEADLOCK": EventLoopDeadlockError,
    "LOCK_BUSY": LockReentrantError,
}


_NAMED = (
    LockReentrantError,
    LockUpgradeError,
    LockLockedCheckError,
    LockOwnedCheckError,
    LockAcquireError,
    LockExtendError,
    LockReleaseError,
    LockNotOwnedError,
)


def _from_rust(code: str, message: str, name: Optional[str], timeout: Optional[float]) -> BaseException:
    """The exception for a failure the core reported by `code`, carrying the core's message."""
    cls = _BY_CODE.get(code, TenureError)
    error: BaseException
    if cls is LockTimeoutError:
        error = LockTimeoutError(name=name or "", timeout=timeout if timeout is not None else 0.0)
    elif issubclass(cls, _NAMED) and name is not None:
        error = cls(name=name)
    else:
        error = cls(message)
        if name is not None:
            error.name = name  # type: ignore[attr-defined]
    error.args = (message,)
    return error
