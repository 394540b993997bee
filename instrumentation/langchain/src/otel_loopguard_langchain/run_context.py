"""Which LangGraph agent is running in this context.

A contextvar, because LangGraph runs nodes in worker threads (sync) or tasks (async) with a
copy of the caller's context: the agent name set around a graph step is seen by every tool
that step runs, without passing anything through LangGraph.
"""

from __future__ import annotations

import contextlib
import contextvars

_AGENT: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "otel_loopguard_langchain_agent", default=None
)
# set while the outermost graph run of this context is open: nested graphs make no span
_RUN_OPEN: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "otel_loopguard_langchain_run_open", default=False
)


def current_agent() -> str | None:
    return _AGENT.get()


def run_open() -> bool:
    return _RUN_OPEN.get()


def enter(agent: str, *, outermost: bool) -> list[contextvars.Token]:  # type: ignore[type-arg]
    tokens: list[contextvars.Token] = [_AGENT.set(agent)]  # type: ignore[type-arg]
    if outermost:
        tokens.append(_RUN_OPEN.set(True))
    return tokens


def leave(tokens: list[contextvars.Token]) -> None:  # type: ignore[type-arg]
    for token in reversed(tokens):
        # ValueError: a generator finished in another context (closed by the GC)
        with contextlib.suppress(ValueError):
            token.var.reset(token)
