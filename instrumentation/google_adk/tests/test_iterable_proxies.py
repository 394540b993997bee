"""Another instrumentation applied before ours (issue 29): what ``Runner.run_async`` and the
flow's model call return is its iterable-only proxy (``__aiter__`` without ``__anext__``, as
OpenInference's Google ADK instrumentation makes). Nothing raises into the agent, observe or
enforce, ``run_async`` or ``run``, and their proxy is iterated, not bypassed. The real
OpenInference instrumentation: ``compat/openinference-google-adk``."""

from __future__ import annotations

import asyncio

import pytest
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.iterable_proxies import theirs_applied_first
from scripted_models import (
    CountingSearch,
    final_text,
    looping_agent,
    message,
    new_runner,
    productive_agent,
    run,
)

from otel_loopguard.engine.decisions import LoopGuardInterrupt

TARGETS = [
    ("google.adk.runners", "Runner.run_async"),
    ("google.adk.flows.llm_flows.base_llm_flow", "BaseLlmFlow._call_llm_async"),
]


def _sync_run(runner) -> list:
    asyncio.run(
        runner.session_service.create_session(app_name="tests", user_id="user", session_id="s")
    )
    return list(runner.run(user_id="user", session_id="s", new_message=message()))


@pytest.mark.parametrize("mode", ["observe", "enforce"])
@pytest.mark.parametrize("entry", ["run_async", "run"])
def test_a_productive_run_through_their_proxies_is_untouched(make_loopguard, mode, entry):
    harness = make_loopguard(mode=mode)
    count = metric_counter(harness)
    with theirs_applied_first(harness, TARGETS) as seen:
        search = CountingSearch()
        runner = new_runner(productive_agent(search))
        events = run(runner) if entry == "run_async" else _sync_run(runner)
    assert final_text(events) == "found after 3 searches"
    assert "Event" in seen and "LlmResponse" in seen  # both of their proxies iterated
    assert harness.run_state("researcher") == "completed"
    assert count("loopguard.internal_errors") == 0


def test_a_looping_run_through_their_proxies_is_interrupted(make_loopguard):
    harness = make_loopguard(mode="enforce")
    with theirs_applied_first(harness, TARGETS):
        search = CountingSearch()
        with pytest.raises(LoopGuardInterrupt):
            run(new_runner(looping_agent(search)))
    assert 1 <= len(search.executions) <= 4
    assert harness.run_state("researcher") == "stopped"
