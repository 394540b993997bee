"""Our anthropic package beside OpenInference's Anthropic instrumentation, in both
instrumentation orders (theirs first: ``beside_ours``, our wrapper outside theirs; ours
first: ``ours_inside``, their span around our call), enforce mode: the looping run is
interrupted within four executions, the productive one completes with its real steps and
tokens, and a request our pre-flight refused (never sent) is no step: not from our span of
the refused call, not from theirs ended by our interrupt (issue 29, point 9)."""

from __future__ import annotations

import itertools

import pytest
from agents import ToolBox, productive, run_agent
from otel_loopguard_testing import metric_counter
from otel_loopguard_testing.compat_checks import (
    assert_interrupted,
    assert_refused_request_is_no_step,
    openinference_spans,
)
from otel_loopguard_testing.third_party import ORDERS, installed_in_order
from scripted_api import ScriptedMessagesAPI
from test_core_only import CALLS, USAGE, looping_start

from otel_loopguard import LoopGuardInterrupt

_CONVERSATIONS = itertools.count(1)


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
@pytest.mark.parametrize("order", list(ORDERS))
def test_a_productive_run_completes_with_its_real_steps_and_tokens(request, order, stream) -> None:
    harness = installed_in_order(request, order, max_steps=CALLS)
    count = metric_counter(harness)
    api = ScriptedMessagesAPI(productive())
    result = run_agent(api.client(), ToolBox(), tracer=harness.app_tracer(), stream=stream)
    assert result.answer.startswith("Answer:")
    assert len(api.requests) == CALLS
    assert len(openinference_spans(harness, "LLM")) == CALLS  # theirs, as without us
    assert harness.run_state("claude_agent") == "completed"
    assert harness.run_usage("claude_agent") == USAGE
    assert not harness.decision_events("stop")
    assert count("loopguard.internal_errors") == 0
    assert harness.open_spans() == []


@pytest.mark.parametrize("order", list(ORDERS))
def test_a_looping_run_is_interrupted_within_four_executions(request, order) -> None:
    harness = installed_in_order(request, order)
    assert_interrupted(harness, looping_start(harness), invocations=2, agent="claude_agent")


@pytest.mark.parametrize("order", list(ORDERS))
def test_a_refused_request_is_no_step(request, order) -> None:
    """A step limit of 3 for a four-call run: the fourth request is refused before it is
    sent; the run (a conversation: it outlives the agent span, so its counts can be read
    after it) has three steps and three answers' tokens, not a fourth step for the request
    that never left."""
    harness = installed_in_order(request, order, max_steps=CALLS - 1)
    api = ScriptedMessagesAPI(productive())
    conversation = f"refused-{next(_CONVERSATIONS)}"
    with pytest.raises(LoopGuardInterrupt):
        run_agent(
            api.client(), ToolBox(), tracer=harness.app_tracer(), conversation_id=conversation
        )
    assert len(api.requests) == CALLS - 1  # the fourth was never sent
    assert harness.run_state("claude_agent") == "max_steps"
    assert_refused_request_is_no_step(
        harness, conversation, CALLS - 1, (100 * (CALLS - 1), 20 * (CALLS - 1))
    )
