"""Durations as the API takes them: whole or fractional seconds, or a `timedelta`."""

from __future__ import annotations

from datetime import timedelta
from typing import Optional, Union

from tenure.errors import SettingsValidationError

Seconds = Union[int, float, timedelta]


def seconds(field: str, value: Optional[Seconds]) -> Optional[float]:
    """`value` in seconds; `None` stays `None`. Only the type is checked here (booleans and
    non-numbers are refused): the core judges the value (positive, finite, at most 100 years)."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SettingsValidationError(f"{field} must be a number of seconds or a timedelta, got {type(value).__name__}")
    return float(value)


def positive(field: str, value: Seconds) -> float:
    """`value` in seconds, which must be given and above zero (a lease a backend call asks for)."""
    given = seconds(field, value)
    if given is None or not given > 0:
        raise SettingsValidationError(f"{field} must be a positive number of seconds or a timedelta, got {value!r}")
    return given
