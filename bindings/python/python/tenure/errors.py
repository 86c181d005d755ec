"""The errors of `tenure`, with grelmicro 0.44's classes and hierarchy.

`except` clauses written for grelmicro catch the same failures here: `LockTimeoutError` is both a
`WouldBlockError` and a builtin `TimeoutError`; `LockNotOwnedError` is a `CoordinationError` (not a
`LockReleaseError`, as in 0.44); `SettingsValidationError` is a `ValueError`; `OutOfContextError`
a `RuntimeError`. Tenure's own classes sit under the reference class a grelmicro user catches:
`LockBusyError` under `LockReentrantError`, `LockLostError` under `LockNotOwnedError`,
`BackendNotOpenError` under `OutOfContextError`, `ConfigTypeError` is a `TypeError`.

The classes are those of the core's error table (`tenure_core::error::table`): the Rust core
reports each failure by its class there and a stable `code`, never by its message text, and
`_from_table` raises the class of that name. A cross-binding test checks every class, its parents
and its fields against the table.
"""

from __future__ import annotations

from typing import Any, Optional

__all__ = [
    "AdmissionError",
    "BackendNotOpenError",
    "BackendScopeError",
    "BackendScopeWarning",
    "CoordinationBackendError",
    "CoordinationError",
    "ConfigTypeError",
    "EventLoopDeadlockError",
    "LockAcquireError",
    "LockBackendError",
    "LockBusyError",
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


class LockBusyError(LockReentrantError):
    """Another acquire, extend or release of this holder is still in progress (a Tenure class)."""


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
    Tenure extension). `reason`: `"expired"` (the lease's validity ran out before a renewal was
    even tried: the process was paused), `"unreachable"` (renewals failed or went unanswered until
    it ran out), `"lost"` (another holder has it), `"fence_regression"` (a renewal was answered
    with a lower fencing token: the store lost its grants), `"max_hold"` (the maximum hold was
    reached and the lease released) or `"revoked"` (an operator revoked it with `tenure revoke`;
    the message gives the reason)."""

    reason: str

    def __init__(self, *, name: str, reason: str) -> None:
        super().__init__(name=name)
        self.args = (f"Lock lost while held: name={name}, reason={reason}.",)
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


class BackendNotOpenError(OutOfContextError):
    """A backend was used before it was opened or after it was closed (a Tenure class)."""


class SettingsValidationError(TenureError, ValueError):
    """A setting, a name or an environment variable is invalid."""


class ConfigTypeError(TenureError, TypeError):
    """`reconfigure` was given the configuration of another primitive (grelmicro's `TypeError`)."""


class BackendScopeError(TenureError, RuntimeError):
    """A backend reaches less far than its `Coordination` requires, in a `staging` or
    `production` environment (`GREL_ENVIRONMENT`)."""

    code = "BACKEND_SCOPE"


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


def _from_table(class_name: str, code: str, message: str, fields: "dict[str, object]") -> BaseException:
    """The exception for a failure the core reported as `class_name` (its error table's class),
    with the core's message, its `code` and the class's fields (`name`, `timeout`, `field`,
    `reason`)."""
    cls = globals().get(f"{class_name}Error")
    if not (isinstance(cls, type) and issubclass(cls, BaseException)):
        raise RuntimeError(
            f"tenure's native module reported {code} as {class_name}Error, which tenure.errors does not "
            "define: the native module and the Python files come from different versions; reinstall tenure"
        )
    keywords = _keywords(cls)
    make: Any = cls  # grelmicro's constructors take keywords (`name=`, `timeout=`), the rest the message
    error: BaseException = make(**{k: v for k, v in fields.items() if k in keywords}) if keywords else make(message)
    error.args = (message,)
    error.code = code  # type: ignore[attr-defined]
    for key, value in fields.items():
        setattr(error, key, value)
    return error


_KEYWORDS: "dict[type, frozenset[str]]" = {}


def _keywords(cls: type) -> "frozenset[str]":
    """The keyword-only parameters of `cls`'s constructor (grelmicro's `name=`, `timeout=`…)."""
    if cls not in _KEYWORDS:
        import inspect

        try:
            parameters = list(inspect.signature(cls).parameters.values())
        except ValueError:  # a builtin's constructor without a signature: it takes the message
            parameters = []
        _KEYWORDS[cls] = frozenset(p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY)
    return _KEYWORDS[cls]


_CLASS_OF_CODE: "dict[str, str]" = {}


def _from_rust(code: str, message: str, name: Optional[str] = None, timeout: Optional[float] = None) -> BaseException:
    """The exception for a failure the core reported by `code` (its class read from the core's
    error table), carrying `message`, the lock `name` and a timeout's seconds."""
    if not _CLASS_OF_CODE:
        import json

        from tenure import _tenure

        _CLASS_OF_CODE.update({row["code"]: row["class"] for row in json.loads(_tenure._error_table()) if row["code"]})
    fields: "dict[str, object]" = {}
    if name is not None:
        fields["name"] = name
    if timeout is not None and code == "LOCK_TIMEOUT":
        fields["timeout"] = timeout
    return _from_table(_CLASS_OF_CODE.get(code, "Tenure"), code, message, fields)
