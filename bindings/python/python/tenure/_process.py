"""Which process this is, cheaply: a counter bumped in a child after every `fork()`, compared
instead of calling `getpid()` on every operation."""

from __future__ import annotations

import os

_generation = 0


def _forked() -> None:
    global _generation
    _generation += 1
    from tenure import _tenure

    _tenure.forked()  # the native half makes its runtime anew


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def generation() -> int:
    """Changes in a forked child; the same number for the life of a process otherwise."""
    return _generation
