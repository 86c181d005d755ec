"""What the native module calls on the event loop to finish an awaitable."""

from __future__ import annotations

import asyncio
from typing import Any, Optional


def complete(future: asyncio.Future, error: Optional[BaseException], value: Any) -> None:
    """Sets `future`'s outcome, unless it is already done (cancelled meanwhile)."""
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)
