"""Our litellm package beside OpenInference's LiteLLM instrumentation, in both
instrumentation orders (theirs first: ``beside_ours``, our wrapper outside theirs; ours
first: ``ours_inside``, their span around our call), enforce mode: the looping run is
interrupted within four executions, the productive one completes with its real steps and
tokens, and a request our pre-flight refused (never sent) is no step: not from our span of
the refused call, not from theirs ended by our interrupt (issue 29, point 9)."""

from __future__ import annotations

import itertools

import pytest
from agent_loop import run_agent
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import (
    assert_interrupted,
    assert_refused_request_is_no_step,
)
from otel_loopguard_testing.scripted_openai import usage_turns
from otel_loopguard_testing.third_party import ORDERS, installed_in_order
from test_core_only import TOTALS, USAGE, looping_start, run_usage

from otel_loopguard import LoopGuardInterrupt

_CONVERSATIONS = itertools.count(1)


@pytest.mark.parametrize("order", list(ORDERS))
def test_a_productive_run_completes_with_its_real_steps_and_tokens(request, order, serve) -> None:
    harness = installed_in_order(request, order, max_steps=len(USAGE))
    count = metric_counter(harness)
    api = serve(usage_turns(USAGE))
    tools = {"search": lambda query: f"result {query}"}
    outcome = run_agent(api.base, harness.app_tracer(), tools)
    assert outcome.answer == "answer"
    assert len(api.requests) == len(USAGE)
    (agent,) = harness.spans("invoke_agent")
    assert agent.attributes["loopguard.run.state"] == "completed"
    assert run_usage(agent) == TOTALS
    assert not harness.decision_events("stop")
    assert count("loopguard.internal_errors") == 0
    assert harness.open_spans() == []


@pytest.mark.parametrize("order", list(ORDERS))
def test_a_looping_run_is_interrupted_within_four_executions(request, order, serve) -> None:
    harness = installed_in_order(request, order)
    assert_interrupted(harness, looping_start(harness, serve), invocations=2)


@pytest.mark.parametrize("order", list(ORDERS))
def test_a_refused_request_is_no_step(request, order, serve) -> None:
    """A step limit one short of the productive run: its last request is refused before it
    is sent; the run has the steps and tokens of the answers that came, not one more step
    for the request that never left."""
    harness = installed_in_order(request, order, max_steps=len(USAGE) - 1)
    api = serve(usage_turns(USAGE))
    conversation = f"refused-{next(_CONVERSATIONS)}"
    tools = {"search": lambda query: f"result {query}"}
    with pytest.raises(LoopGuardInterrupt):
        run_agent(api.base, harness.app_tracer(), tools, conversation_id=conversation)
    assert len(api.requests) == len(USAGE) - 1  # the last was never sent
    came = USAGE[:-1]
    usage = (sum(u[0] for u in came), sum(u[1] for u in came))
    assert_refused_request_is_no_step(harness, conversation, len(came), usage)
