"""The process-wide guard that the processor, the wrappers and hand-written agents share."""

from __future__ import annotations

import threading

from otel_loopguard.guard.hub import LoopGuard

_GUARD: LoopGuard | None = None
_GUARD_LOCK = threading.Lock()


def get_guard() -> LoopGuard:
    """The process-wide guard, created on first use from ``OTEL_LOOPGUARD_*`` variables."""
    global _GUARD
    guard = _GUARD
    if guard is None:
        with _GUARD_LOCK:
            if _GUARD is None:
                _GUARD = LoopGuard()
            guard = _GUARD
    return guard


def set_guard(guard: LoopGuard | None) -> LoopGuard | None:
    """Replace the process-wide guard (tests, or an application with its own settings).

    Returns the previous one. ``None`` makes the next :func:`get_guard` build a new one.
    """
    global _GUARD
    with _GUARD_LOCK:
        previous, _GUARD = _GUARD, guard
    return previous
