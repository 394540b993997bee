"""The ADK agents of this suite: real ``LlmAgent`` loops on our google_adk suite's scripted
``BaseLlm`` (``instrumentation/google_adk/tests/scripted_models.py``), as ``start()``
callables for ``otel_loopguard_testing.compat_checks``."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from google.adk.agents import LlmAgent
from scripted_models import CountingSearch, ScriptedModel, new_runner, run

#: a looping agent's turns before its model gives up (observe mode lets it run to its end)
LOOPING_TURNS = 6


def looping_agent(search: CountingSearch, turns: int | None = None) -> LlmAgent:
    """The model asks for the same search on every turn (``turns`` times, then gives up;
    forever when ``None``); the tool answers ``"no results"`` every time."""

    def script(n: int) -> Any:
        if turns is None or n <= turns:
            return [("search", {"query": "pricing"})]
        return "gave up"

    return LlmAgent(name="researcher", model=ScriptedModel(script=script), tools=[search.tool])


_SESSIONS = itertools.count(1)


def looping_start(turns: int | None = None) -> Callable[[], tuple[Any, Any]]:
    """``start()`` of a fresh looping agent in a session of its own (the session is ADK's
    conversation, so our run: a stopped session stays stopped): ``(run, executed)``."""

    def start() -> tuple[Any, Any]:
        search = CountingSearch()
        runner = new_runner(looping_agent(search, turns))
        session = f"looping-{next(_SESSIONS)}"
        return (lambda: run(runner, session)), (lambda: len(search.executions))

    return start
