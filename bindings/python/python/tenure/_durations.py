"""Durations as the API takes them: whole or fractional seconds, or a `timedelta`."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Optional, Union

from tenure.errors import SettingsValidationError

Seconds = Union[int, float, timedelta]


def seconds(field: str, value: Optional[Seconds]) -> Optional[float]:
    """`value` in seconds; `None` stays `None`. Rejects booleans, negatives, NaN and infinities."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        result = value.total_seconds()
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SettingsValidationError(f"{field} must be a number of seconds or a timedelta, got {type(value).__name__}")
    else:
        result = float(value)
    if math.isnan(result) or math.isinf(result) or result < 0:
        raise SettingsValidationError(f"{field} must be a finite, non-negative number of seconds")
    return result
