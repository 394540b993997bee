"""The run a piece of code belongs to: a context variable set by ``agent_run``."""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Any

from otel_loopguard.engine.decisions import RunEndState


@dataclass(slots=True)
class RunHandle:
    """The run a piece of code belongs to (what :meth:`LoopGuard.agent_run` yields)."""

    run_id: str
    keyed_by: str
    agent: str | None
    span: Any = None
    outermost: bool = True
    state: RunEndState | None = None

    def set_state(self, state: RunEndState) -> None:
        """Override the end state (e.g. ``max_steps`` when the framework hit its own limit)."""
        self.state = state


_CURRENT_RUN: contextvars.ContextVar[RunHandle | None] = contextvars.ContextVar(
    "otel_loopguard_run", default=None
)


def current_run() -> RunHandle | None:
    return _CURRENT_RUN.get()
