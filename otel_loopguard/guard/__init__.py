"""Enforcement: the hub (:class:`LoopGuard`), the current run, ``agent_run``, the tool gate
and the decorators for hand-written agents."""

from otel_loopguard.guard.global_guard import get_guard, set_guard
from otel_loopguard.guard.hub import LoopGuard
from otel_loopguard.guard.run_context import RunHandle, current_run

__all__ = ["LoopGuard", "RunHandle", "current_run", "get_guard", "set_guard"]
