"""Backend scopes (grelmicro 0.44): how far a backend's exclusion reaches — `process` (memory),
`host` (SQLite), `cluster` (Redis, PostgreSQL) — against how far a `Coordination` requires
(`requires=`, default `cluster`). A backend that falls short is an error when `GREL_ENVIRONMENT`
is `staging` or `production`, silent in `development` and `test`, and a warning when it is unset
or unknown. A backend that declares no `scope` is not judged."""

from __future__ import annotations

import os
import warnings
from typing import Any, Optional

from tenure import _tenure
from tenure.errors import BackendScopeError, BackendScopeWarning, SettingsValidationError, UnknownEnvironmentWarning

RANK = {"process": 0, "host": 1, "cluster": 2}


def required(requires: Optional[str]) -> str:
    """`requires` checked (any case), default `cluster`."""
    if requires is None:
        return "cluster"
    value = requires.strip().lower() if isinstance(requires, str) else None
    if value not in RANK:
        raise SettingsValidationError(f"requires= must be one of process, host, cluster, got {requires!r}")
    return value


def check(owner: str, backends: list[Any], requires: str) -> None:
    """Warns or raises, as `GREL_ENVIRONMENT` says, for the backends that fall short (the driver
    judges: `tenure_open::reach`)."""
    judged = [(_label(b), b.scope) for b in backends if isinstance(getattr(b, "scope", None), str) and b.scope in RANK]
    verdict, message, unknown = _tenure.judge_reach(owner, judged, requires, os.environ.get("GREL_ENVIRONMENT"))
    if verdict == "refused":
        raise BackendScopeError(message or "")
    if verdict == "warned":
        if unknown is not None:
            warnings.warn(unknown, UnknownEnvironmentWarning, stacklevel=3)
        warnings.warn(message or "", BackendScopeWarning, stacklevel=3)


def _label(backend: Any) -> str:
    """A provider's backends are named by their provider (`MemoryProvider`)."""
    provider = getattr(backend, "provider", None)
    return type(provider).__name__ if provider is not None and not callable(provider) else type(backend).__name__
