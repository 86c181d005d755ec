"""Backends written by users: the protocols, and how the native layer calls such a backend.

Any object with grelmicro's lock calls (`acquire`, `release`, `locked`, `owned`) is a lock backend,
any object with its election calls (`acquire_or_renew`, `release`, `get`) an election backend, any
object with grelmicro 0.44's nine read-write lock calls a read-write lock backend, and any object
with the semaphore calls (`acquire`, `release`, `owned`, `state`) a semaphore backend: pass it as
`Lock(..., backend=obj)`, `LeaderElection(..., backend=obj)`, `ReadWriteLock(..., backend=obj)`,
`Semaphore(..., backend=obj)` or in a `Coordination` slot. The driver calls it like a built-in store — each call bounded by `backend_timeout`, the
answer checked — on the event loop the primitive runs on (`from_thread` and the driver's own
work use the loop the backend was last used on).

`duration` (and a semaphore's `wait`) reaches the backend as a `datetime.timedelta`, as in
grelmicro 0.44; a backend whose `acquire` (or `acquire_or_renew`, `acquire_read`) annotates
`duration` as `float` or `int` gets float seconds instead, as the API reference describes it.
"""

from __future__ import annotations

import asyncio
import inspect
import numbers
import sys
import threading
import typing
import weakref
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, Optional, Protocol, runtime_checkable

from tenure import _tenure

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MAX_FENCE = 2**63 - 1


@runtime_checkable
class LockBackend(Protocol):
    """A lock store (grelmicro's `LockBackend`). Names arrive with their kind prefix
    (`lock:cart`, `tasklock:job`); `acquire` answers the fencing token — a positive int that
    grows on every change of holder and stays the same when `token` renews its own lease — or
    `None` when another token holds the lock."""

    async def acquire(self, *, name: str, token: str, duration: timedelta) -> Optional[int]: ...
    async def release(self, *, name: str, token: str) -> bool: ...
    async def locked(self, *, name: str) -> bool: ...
    async def owned(self, *, name: str, token: str) -> bool: ...


@runtime_checkable
class LeaderElectionBackend(Protocol):
    """A leader-election store (grelmicro's `LeaderElectionBackend`): one renewable lease per
    name (`leader:svc`) holding a `LeaderRecord`; the caller leads when `record.holder == token`."""

    async def acquire_or_renew(
        self, *, name: str, token: str, duration: timedelta, metadata: Optional[Mapping[str, str]] = None
    ) -> Any: ...
    async def release(self, *, name: str, token: str) -> bool: ...
    async def get(self, *, name: str) -> Any: ...


@runtime_checkable
class ReadWriteLockBackend(Protocol):
    """A read-write lock store (grelmicro 0.44's `ReadWriteLockBackend`). Names arrive with their
    kind prefix (`rwlock:doc`). `acquire_read` answers the generation read (the fencing token of
    the last write, 0 before the first) or `None` while a writer holds or waits with a live
    intent; `acquire_write` a `WriteGrant(fencing_token, poisoned)` or `None`, keeping an intent
    iff `intent`; `downgrade` turns a write lease into a read lease and answers the generation;
    `state` a `ReadWriteLockState(generation, writing, readers, waiting_writers)`."""

    async def acquire_read(self, *, name: str, token: str, duration: timedelta) -> Optional[int]: ...
    async def acquire_write(self, *, name: str, token: str, duration: timedelta, intent: bool = True) -> Any: ...
    async def release_read(self, *, name: str, token: str) -> bool: ...
    async def release_write(self, *, name: str, token: str) -> bool: ...
    async def cancel_intent(self, *, name: str, token: str) -> bool: ...
    async def downgrade(self, *, name: str, token: str, duration: timedelta) -> Optional[int]: ...
    async def state(self, *, name: str) -> Any: ...
    async def owned_read(self, *, name: str, token: str) -> bool: ...
    async def owned_write(self, *, name: str, token: str) -> bool: ...


@runtime_checkable
class SemaphoreBackend(Protocol):
    """A semaphore store (Tenure's; grelmicro has none). Names arrive with their kind prefix
    (`semaphore:pool`). `acquire` answers `(fencing_token or None, stored permit count)`: the
    token's permit renewed (same fencing token) or granted with the next one while fewer than
    `permits` hold, else `None`; `wait`, when given, is how long a refused contender keeps its
    place in line (a backend may keep none). `state` answers a
    `SemaphoreState(permits, holders, waiting, fence)`."""

    async def acquire(
        self, *, name: str, token: str, duration: timedelta, permits: int, wait: Optional[timedelta] = None
    ) -> tuple[Optional[int], int]: ...
    async def release(self, *, name: str, token: str) -> bool: ...
    async def owned(self, *, name: str, token: str) -> bool: ...
    async def state(self, *, name: str) -> Any: ...


@runtime_checkable
class ScheduleBackend(Protocol):
    """A cron schedule store (grelmicro's `ScheduleBackend`): `claim` sets `last_fired` to `due`
    only when nothing is stored or the stored value is lower, and answers whether it did."""

    async def claim(self, name: str, due: float) -> bool: ...
    async def last_fired(self, name: str) -> Optional[float]: ...


#: The methods each slot needs, for messages and for matching a bare backend to a slot.
METHODS = {
    "lock": ("acquire", "release", "locked", "owned"),
    "leaderelection": ("acquire_or_renew", "release", "get"),
    "schedule": ("claim", "last_fired"),
    "readwritelock": (
        "acquire_read",
        "acquire_write",
        "release_read",
        "release_write",
        "cancel_intent",
        "downgrade",
        "state",
        "owned_read",
        "owned_write",
    ),
    "semaphore": ("acquire", "release", "owned", "state"),
}

_PROTOCOL_NAMES = {
    "lock": "LockBackend",
    "leaderelection": "LeaderElectionBackend",
    "schedule": "ScheduleBackend",
    "readwritelock": "ReadWriteLockBackend",
    "semaphore": "SemaphoreBackend",
}


def serves(backend: Any, slot: str) -> bool:
    """Whether `backend` has every method of `slot`'s protocol."""
    return all(callable(getattr(backend, m, None)) for m in METHODS[slot])


def fills(backend: Any, slot: str) -> bool:
    """Whether a bare source fills `slot`: it serves it and, for semaphores, serves no locks (the
    two share `acquire`, `release` and `owned`: a lock's `acquire` would get a semaphore's
    calls; pass such an object as `semaphore=` to mean it)."""
    return serves(backend, slot) and not (slot == "semaphore" and serves(backend, "lock"))


def check(backend: Any, slot: str, owner: str) -> None:
    """A `TypeError` naming what `backend` lacks to serve `slot`."""
    missing = [m for m in METHODS[slot] if not callable(getattr(backend, m, None))]
    if missing:
        raise TypeError(
            f"{owner} needs a {_PROTOCOL_NAMES[slot]}: {type(backend).__name__} has no "
            f"{', '.join(missing)} method{'s' if len(missing) > 1 else ''}"
        )


class UserBackend:
    """A user's backend as the native layer calls it: `run` starts one call on this thread's
    event loop and hands its checked answer to `done`."""

    def __init__(self, backend: Any) -> None:
        # Held strongly: the driver may still call it (a late grant to give back) after every
        # primitive built on it is gone.
        self.backend = backend
        self.label = type(backend).__name__
        self.seconds = _wants_seconds(backend)

    def run(self, method: str, name: str, args: dict[str, Any], done: Any) -> Optional[asyncio.Future[Any]]:
        """Calls `method` (unique across the protocols: `leader_release`, `rw_state`,
        `sem_acquire`, ...) as the user's `name`; returns the task still running it, if any (the
        native layer cancels it when the driver gives up)."""
        label = f"{self.label}.{name}"
        lease_us = args.pop("lease_us", None)
        if lease_us is not None:
            args["duration"] = self._duration(lease_us)
        if "wait_us" in args:
            wait_us = args.pop("wait_us")
            args["wait"] = None if wait_us is None else self._duration(wait_us)
        if method == "acquire_or_renew" and not args.get("metadata"):
            args["metadata"] = None
        try:
            answer = getattr(self.backend, name)(**args)
        except Exception as error:
            done.fail(f"{label} raised {type(error).__name__}", error)  # its text could hold a token
            return None
        if not inspect.isawaitable(answer):
            _finish(answer, method, label, done)
            return None
        task = _start(_answered(answer, method, label, done))
        return None if task.done() else task

    def _duration(self, micros: int) -> Any:
        return micros / 1e6 if self.seconds else timedelta(microseconds=micros)


async def _answered(answer: Any, method: str, label: str, done: Any) -> None:
    """Awaits the user's coroutine and hands its outcome to `done` from inside the task (no
    further turn of the loop for a done callback)."""
    try:
        value = await answer
    except asyncio.CancelledError:
        done.fail(f"{label} was cancelled", asyncio.CancelledError())
        raise
    except Exception as error:
        done.fail(f"{label} raised {type(error).__name__}", error)  # its text could hold a token
        return
    except BaseException as error:
        done.fail(f"{label} raised {type(error).__name__}", error)
        raise
    _finish(value, method, label, done)


def _start(call: Any) -> asyncio.Future[Any]:
    """A task running `call`; on Python 3.12+ its first step runs now (a backend that answers
    without waiting is done before this returns)."""
    if sys.version_info >= (3, 12):
        return asyncio.Task(call, loop=asyncio.get_running_loop(), eager_start=True)  # type: ignore[call-arg,unused-ignore]
    return asyncio.get_running_loop().create_task(call)


def _finish(value: Any, method: str, label: str, done: Any) -> None:
    """Hands `value` to `done` in the shape the driver reads, or fails naming what was wrong (the
    value's type, never its text, which could be a token)."""
    try:
        shaped = _SHAPES[method](value)
    except Exception as error:
        wrong = (type(error) if isinstance(error, (TypeError, ValueError)) else ValueError)(f"{label} answered {error}")
        done.fail(str(wrong), wrong)
        return
    done.ok(shaped)


def _fence(value: Any) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"a {type(value).__name__}: a fencing token is a positive int, or None when another token holds the lock")
    if not 0 < int(value) <= _MAX_FENCE:
        raise ValueError(f"the fencing token {int(value)}: a fencing token is a positive int below 2**63")
    return int(value)


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral) and int(value) in (0, 1):
        return bool(value)
    raise TypeError(f"a {type(value).__name__}: the answer is a bool")


def _count(value: Any, what: str) -> int:
    """A count or counter from 0 to 2**63 - 1; `what` names it ("a ReadWriteLockState whose readers")."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} is a {type(value).__name__}, not an int")
    if not 0 <= int(value) <= _MAX_FENCE:
        raise ValueError(f"{what} is {int(value)}, not an int from 0 to 2**63 - 1")
    return int(value)


def _generation(value: Any) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"a {type(value).__name__}: a generation is an int >= 0, or None when refused")
    return _count(value, "a generation that")


def _fields(value: Any, kind: str, fields: tuple[str, ...]) -> list[Any]:
    missing = [f for f in fields if not hasattr(value, f)]
    if missing:
        raise TypeError(f"a {type(value).__name__}, not a {kind} (no {', '.join(missing)})")
    return [getattr(value, f) for f in fields]


def _write_grant(value: Any) -> Optional[tuple[int, bool]]:
    """`(fencing_token, poisoned)` from a `WriteGrant` (tenure's or grelmicro's), or `None`."""
    if value is None:
        return None
    fence, poisoned = _fields(value, "WriteGrant", ("fencing_token", "poisoned"))
    if not isinstance(poisoned, bool):
        raise TypeError(f"a WriteGrant whose poisoned is a {type(poisoned).__name__}, not a bool")
    shaped = _fence(fence)
    if shaped is None:
        raise TypeError("a WriteGrant whose fencing_token is None")
    return shaped, poisoned


def _rw_state(value: Any) -> tuple[int, bool, int, int]:
    """`(generation, writing, readers, waiting_writers)` from a `ReadWriteLockState`."""
    generation, writing, readers, waiting = _fields(
        value, "ReadWriteLockState", ("generation", "writing", "readers", "waiting_writers")
    )
    if not isinstance(writing, bool):
        raise TypeError(f"a ReadWriteLockState whose writing is a {type(writing).__name__}, not a bool")
    whose = "a ReadWriteLockState whose"
    return (
        _count(generation, f"{whose} generation"),
        writing,
        _count(readers, f"{whose} readers"),
        _count(waiting, f"{whose} waiting_writers"),
    )


def _permit(value: Any) -> tuple[Optional[int], int]:
    """`(fencing_token or None, permits)` from a semaphore's `acquire`."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != 2:
        raise TypeError(f"a {type(value).__name__}: a permit is (fencing_token or None, permits)")
    fence, permits = value
    count = _count(permits, "a permit whose permits")
    if not 0 < count < 2**32:
        raise ValueError(f"a permit whose permits is {count}, not an int from 1 to 2**32 - 1")
    return _fence(fence), count


def _sem_state(value: Any) -> tuple[int, int, int, int]:
    """`(permits, holders, waiting, fence)` from a `SemaphoreState`."""
    fields = ("permits", "holders", "waiting", "fence")
    permits, holders, waiting, fence = (
        _count(v, f"a SemaphoreState whose {f}") for v, f in zip(_fields(value, "SemaphoreState", fields), fields)
    )
    if permits >= 2**32:
        raise ValueError(f"a SemaphoreState whose permits is {permits}, above 2**32 - 1")
    return permits, holders, waiting, fence


def _maybe_record(value: Any) -> Optional[tuple[str, int, int, int, int, dict[str, str]]]:
    return None if value is None else _record(value)


def _record(value: Any) -> tuple[str, int, int, int, int, dict[str, str]]:
    """`(holder, lease_us, acquired_at_us, renewed_at_us, transitions, metadata)` from a
    `LeaderRecord` (tenure's or grelmicro's, or any object with its fields)."""
    fields = ("holder", "lease_duration", "acquired_at", "renewed_at", "transitions")
    missing = [f for f in fields if not hasattr(value, f)]
    if missing:
        raise TypeError(f"a {type(value).__name__}, not a LeaderRecord (no {', '.join(missing)})")
    holder, lease, acquired, renewed, transitions = (getattr(value, f) for f in fields)
    if not isinstance(holder, str):
        raise TypeError(f"a LeaderRecord whose holder is a {type(holder).__name__}, not a str")
    if isinstance(lease, timedelta):
        lease_us = lease // timedelta(microseconds=1)
    elif isinstance(lease, (int, float)) and not isinstance(lease, bool):
        lease_us = round(lease * 1e6)
    else:
        raise TypeError(f"a LeaderRecord whose lease_duration is a {type(lease).__name__}, not a timedelta")
    if lease_us < 0:
        raise ValueError("a LeaderRecord whose lease_duration is negative")
    if isinstance(transitions, bool) or not isinstance(transitions, numbers.Integral) or transitions < 0:
        raise TypeError("a LeaderRecord whose transitions is not an int >= 0")
    metadata = getattr(value, "metadata", None) or {}
    if not isinstance(metadata, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise TypeError("a LeaderRecord whose metadata is not a mapping of str to str")
    return holder, lease_us, _micros(acquired, "acquired_at"), _micros(renewed, "renewed_at"), int(transitions), dict(metadata)


def _micros(moment: Any, field: str) -> int:
    """Microseconds since the epoch; a naive datetime is read as UTC."""
    if not isinstance(moment, datetime):
        raise TypeError(f"a LeaderRecord whose {field} is a {type(moment).__name__}, not a datetime")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return (moment - _EPOCH) // timedelta(microseconds=1)


#: How each method's answer is checked and shaped, by its unique name.
_SHAPES: dict[str, Any] = {
    "acquire": _fence,
    "acquire_or_renew": _record,
    "get": _maybe_record,
    "acquire_read": _generation,
    "downgrade": _generation,
    "acquire_write": _write_grant,
    "rw_state": _rw_state,
    "sem_acquire": _permit,
    "sem_state": _sem_state,
    **dict.fromkeys(
        (
            "release",
            "leader_release",
            "locked",
            "owned",
            "release_read",
            "release_write",
            "cancel_intent",
            "owned_read",
            "owned_write",
            "sem_release",
            "sem_owned",
        ),
        _flag,
    ),
}


def _wants_seconds(backend: Any) -> bool:
    """Whether the backend annotates `duration` as float or int seconds (the API reference's
    form) rather than as a `timedelta` (grelmicro 0.44's, the default)."""
    for name in ("acquire", "acquire_or_renew", "acquire_read"):
        method = getattr(backend, name, None)
        if method is None:
            continue
        try:
            hint = typing.get_type_hints(method).get("duration")
        except Exception:
            hint = getattr(method, "__annotations__", {}).get("duration")
        if hint is not None:
            return hint in (float, int, "float", "int") or getattr(hint, "__name__", None) in ("float", "Seconds")
    return False


#: The native backend running each user's object, by the object's identity (never its `==`: two
#: equal backends are two stores). An entry lives while a primitive holds its native backend;
#: the native backend holds the object, so its id cannot be reused meanwhile.
_NATIVE: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
_MAKING = threading.Lock()


def native(backend: Any, slot: str, owner: str) -> _tenure.Backend:
    """The native backend running `backend` (one per object at a time), attached to this
    thread's running loop if there is one."""
    check(backend, slot, owner)
    made = _NATIVE.get(id(backend))
    if made is None:
        with _MAKING:
            made = _NATIVE.get(id(backend))
            if made is None:
                wrapper = UserBackend(backend)
                made = _NATIVE[id(backend)] = _tenure.user_backend(wrapper, wrapper.label, _fences_of(backend))
    event_loop = asyncio._get_running_loop()
    if event_loop is not None:
        made.attach_loop(event_loop)
    elif not made.has_loop():
        _attach_from_thread(backend, made)
    return made


#: The fencing tokens each user's object answered, by identity, while the object lives (a fence
#: lower than one it answered before is refused, whichever native store asked).
_FENCES: dict[int, Any] = {}


def _fences_of(backend: Any) -> Any:
    fences = _FENCES.get(id(backend))
    if fences is None:
        fences = _tenure.Fences()
        try:
            weakref.finalize(backend, _FENCES.pop, id(backend), None)
        except TypeError:
            return fences  # not weakly referenceable: remembered by this native store only
        _FENCES[id(backend)] = fences
    return fences


def _attach_from_thread(backend: Any, made: Any) -> None:
    """Off any loop, before the backend was used on one: the loop a grelmicro-style backend
    captured on `__aenter__` (its `_loop`) becomes its home, if that loop runs."""
    event_loop = getattr(backend, "_loop", None)
    if not isinstance(event_loop, asyncio.AbstractEventLoop) or event_loop.is_closed() or not event_loop.is_running():
        return

    async def attach() -> None:
        made.attach_loop(asyncio.get_running_loop())

    try:
        asyncio.run_coroutine_threadsafe(attach(), event_loop).result(timeout=5)
    except Exception:
        return  # the call then fails, saying the backend has no loop
