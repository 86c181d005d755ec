"""`LeaderRecord`: the state of a leader-election lease, as stores report it."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from types import MappingProxyType
from typing import Any, NamedTuple

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class LeaderRecord(NamedTuple):
    """The lease as the store reports it (shaped like Kubernetes' `LeaderElectionRecord`):
    `lease_duration` is a `timedelta` and the times are aware UTC datetimes, as in grelmicro 0.44.
    A backend you write returns one from `acquire_or_renew` and `get`."""

    holder: str
    lease_duration: timedelta
    acquired_at: datetime
    renewed_at: datetime
    transitions: int
    metadata: Mapping[str, str] = MappingProxyType({})


def record(raw: Any) -> LeaderRecord:
    """A record from the native tuple `(holder, lease seconds, acquired_at µs, renewed_at µs,
    transitions, metadata)`."""
    holder, lease, acquired_us, renewed_us, transitions, metadata = raw
    return LeaderRecord(
        holder,
        timedelta(seconds=lease),
        _EPOCH + timedelta(microseconds=acquired_us),
        _EPOCH + timedelta(microseconds=renewed_us),
        transitions,
        metadata,
    )
