"""Our anthropic package beside OpenLLMetry's Anthropic instrumentation and the SDK's own span,
in both instrumentation orders (theirs first: ``beside_ours``; ours first: ``ours_inside``),
enforce mode: three spans of every request (ours, theirs, the SDK's), one step each; the
looping run is interrupted within four executions, the productive one completes with its
real steps and tokens; nothing raises into the agent, streamed or not."""

from __future__ import annotations

import pytest
from agents import ToolBox, looping, productive, run_agent
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import assert_interrupted
from scripted_api import ScriptedMessagesAPI
from test_core_only import CALLS, USAGE

ORDERS = {"theirs first": "beside_ours", "ours first": "ours_inside"}


def _installed(request, order: str, **settings):
    return request.getfixturevalue(ORDERS[order])(mode="enforce", **settings)


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
@pytest.mark.parametrize("order", list(ORDERS))
def test_a_productive_run_completes_with_its_real_steps_and_tokens(request, order, stream) -> None:
    harness = _installed(request, order, max_steps=CALLS, token_budget=sum(USAGE) + 20)
    count = metric_counter(harness)
    api = ScriptedMessagesAPI(productive())
    result = run_agent(api.client(), ToolBox(), tracer=harness.app_tracer(), stream=stream)
    assert result.answer.startswith("Answer:")
    assert len(api.requests) == CALLS
    assert harness.run_state("claude_agent") == "completed"
    assert harness.run_usage("claude_agent") == USAGE
    assert harness.decision_events("stop") == []
    assert count("loopguard.internal_errors") == 0
    assert harness.open_spans() == []


@pytest.mark.parametrize("order", list(ORDERS))
def test_a_looping_run_is_interrupted_within_four_executions(request, order) -> None:
    harness = _installed(request, order)

    def start():
        api = ScriptedMessagesAPI(looping())
        tools = ToolBox()
        return (
            lambda: run_agent(api.client(), tools, tracer=harness.app_tracer()),
            lambda: tools["search"],
        )

    assert_interrupted(harness, start, invocations=2, agent="claude_agent")
