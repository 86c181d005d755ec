"""Backend scopes (grelmicro 0.44): how far a backend's exclusion reaches — `process` (memory),
`host` (SQLite), `cluster` (Redis, PostgreSQL) — against how far a `Coordination` requires
(`requires=`, default `cluster`). A backend that falls short is an error when `GREL_ENVIRONMENT`
is `staging` or `production`, silent in `development` and `test`, and a warning when it is unset
or unknown. A backend that declares no `scope` is not judged."""

from __future__ import annotations

import os
import warnings
from typing import Any, Optional

from tenure.errors import BackendScopeError, BackendScopeWarning, SettingsValidationError, UnknownEnvironmentWarning

RANK = {"process": 0, "host": 1, "cluster": 2}
_STRICT = ("staging", "production")
_QUIET = ("development", "test")
_KNOWN = ("development", "test", "staging", "production")


def required(requires: Optional[str]) -> str:
    """`requires` checked (any case), default `cluster`."""
    if requires is None:
        return "cluster"
    value = requires.strip().lower() if isinstance(requires, str) else None
    if value not in RANK:
        raise SettingsValidationError(f"requires= must be one of process, host, cluster, got {requires!r}")
    return value


def falls_short(backend: Any, requires: str) -> Optional[str]:
    """The backend's scope if it reaches less far than `requires`."""
    scope = getattr(backend, "scope", None)
    if not isinstance(scope, str) or scope not in RANK:
        return None
    return scope if RANK[scope] < RANK[requires] else None


def check(owner: str, backends: list[Any], requires: str) -> None:
    """Warns or raises, as `GREL_ENVIRONMENT` says, for the backends that fall short."""
    short = [(_label(b), s) for b in backends if (s := falls_short(b, requires)) is not None]
    if not short:
        return
    environment = os.environ.get("GREL_ENVIRONMENT", "").strip().lower()
    if environment in _QUIET:
        return
    names = _and([name for name, _ in short])
    scopes = sorted({s for _, s in short}, key=RANK.__getitem__)
    provide = " and ".join(f"'{s}'" for s in scopes)
    bound = f"{owner} requires scope '{requires}', but {names} reach{'es' if len(set(short)) == 1 else ''} only scope {provide}"
    if environment in _STRICT:
        reach = "a Redis or PostgreSQL backend" if requires == "cluster" else "an SQLite, Redis or PostgreSQL backend"
        raise BackendScopeError(
            f"{bound} in environment '{environment}'. Use {reach}, or pass requires= to say what reach you want."
        )
    if environment:
        warnings.warn(
            f"GREL_ENVIRONMENT is set to {environment!r}, which is not one of {', '.join(_KNOWN)}, so the backend "
            "check runs as if it were undeclared.",
            UnknownEnvironmentWarning,
            stacklevel=3,
        )
    warnings.warn(
        f"{bound}. Set GREL_ENVIRONMENT to declare where this runs, or pass requires='{scopes[0]}' to say that is "
        "the reach you want.",
        BackendScopeWarning,
        stacklevel=3,
    )


def _label(backend: Any) -> str:
    """A provider's backends are named by their provider (`MemoryProvider`)."""
    provider = getattr(backend, "provider", None)
    return type(provider).__name__ if provider is not None and not callable(provider) else type(backend).__name__


def _and(names: list[str]) -> str:
    unique = list(dict.fromkeys(names))
    return unique[0] if len(unique) == 1 else ", ".join(unique[:-1]) + " and " + unique[-1]
