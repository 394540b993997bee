"""Our google_adk package beside OpenInference's Google ADK instrumentation, in both
instrumentation orders.

Theirs applied first (as ``opentelemetry-instrument`` may do: ``beside_ours``), our
``Runner.run_async`` wrapper gets their ``wrapt`` proxy of the generator, an async iterable
whose ``__aiter__`` is an async generator and which has no ``__anext__``: read with
``anext()`` it raised ``TypeError: '_AsyncGenerator' object is not an async iterator`` in
every ``Runner.run``, observe mode too (issue 29). Ours applied first (``ours_inside``),
their proxy iterates our generator.
"""

from __future__ import annotations

import asyncio

import pytest
from adk_agents import looping_agent, looping_start
from google.adk.runners import Runner
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import assert_interrupted, openinference_spans
from scripted_models import (
    CountingSearch,
    final_text,
    message,
    new_runner,
    productive_agent,
    run,
)

from otel_loopguard import LoopGuardInterrupt

ORDERS = ["theirs first", "ours first"]
MODES = ["observe", "enforce"]


def _installed(request, order: str, mode: str):
    """Ours and theirs in ``order`` (only that order's fixture is set up: ``ours_inside``
    instruments again), ``mode``; checks which wrapper of ``Runner.run_async`` is outside."""
    from google.adk.runners import Runner

    fixture = "beside_ours" if order == "theirs first" else "ours_inside"
    harness = request.getfixturevalue(fixture)(mode=mode)
    outer = Runner.__dict__["run_async"]._self_wrapper
    ours_outside = "run_async_wrapper" in getattr(outer, "__qualname__", "")
    assert ours_outside == (order == "theirs first")  # ours outside: we get their proxy
    return harness


def _sync_run(runner: Runner) -> list:
    """``Runner.run``: the plain generator that drives ``run_async`` on a thread."""

    async def session() -> None:
        await runner.session_service.create_session(
            app_name="tests", user_id="user", session_id="session-sync"
        )

    asyncio.run(session())
    return list(runner.run(user_id="user", session_id="session-sync", new_message=message()))


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("entry", ["run_async", "run"])
def test_a_productive_run_is_untouched_in_either_order(request, order, mode, entry) -> None:
    harness = _installed(request, order, mode)
    count = metric_counter(harness)
    search = CountingSearch()
    runner = new_runner(productive_agent(search))
    events = run(runner) if entry == "run_async" else _sync_run(runner)
    assert final_text(events) == "found after 3 searches"
    assert len(search.executions) == 3
    assert harness.run_state("researcher") == "completed"
    assert harness.decision_events("stop") == []
    # their spans are made as without us: their proxy was iterated, not bypassed
    assert len(openinference_spans(harness, "TOOL")) == 3
    assert len(openinference_spans(harness, "AGENT")) == 1
    assert count("loopguard.internal_errors") == 0
    assert harness.open_spans() == []


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("mode", MODES)
def test_the_looping_run_is_caught_in_either_order(request, order, mode) -> None:
    harness = _installed(request, order, mode)
    if mode == "enforce":
        assert_interrupted(harness, looping_start(), invocations=2, agent="researcher")
        return
    count = metric_counter(harness)
    search = CountingSearch()
    events = run(new_runner(looping_agent(search, turns=6)))
    assert final_text(events) == "gave up"  # observe mode: never interrupted
    assert len(search.executions) == 6
    assert harness.run_state("researcher") == "stopped"
    assert count("loopguard.internal_errors") == 0


@pytest.mark.parametrize("order", ORDERS)
def test_the_looping_run_is_interrupted_through_runner_run_too(request, order) -> None:
    harness = _installed(request, order, "enforce")
    search = CountingSearch()
    with pytest.raises(LoopGuardInterrupt):
        _sync_run(new_runner(looping_agent(search)))
    assert 1 <= len(search.executions) <= 4
    assert harness.run_state("researcher") == "stopped"
    assert harness.open_spans() == []
