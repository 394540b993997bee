"""A model that says the same thing turn after turn is looping (issue 18, point 11).

Each turn asks for a different search, so no tool-call detector sees a loop; the text is
the same apology every time. Read from the answers (created and streamed), hashed only.
"""

from __future__ import annotations

from typing import Any

import pytest
from agents import ToolBox, productive, run_agent
from scripted_api import Reply, ScriptedMessagesAPI

from otel_loopguard import LoopGuardInterrupt

APOLOGY = "I apologize for the confusion. Let me search the order history again for the price."


def apologising(messages: list[dict[str, Any]]) -> Reply:
    attempt = sum(1 for m in messages if m["role"] == "user")
    return Reply(text=APOLOGY, tool_calls=[("search", {"query": f"order price {attempt}"})])


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_the_same_answer_every_turn_replans_then_stops(make_loopguard, stream):
    guard = make_loopguard(mode="enforce", deliver_recommendations=False)
    with pytest.raises(LoopGuardInterrupt) as raised:
        run_agent(ScriptedMessagesAPI(apologising).client(), ToolBox(), stream=stream)
    assert raised.value.decision.detectors == ("repeated_text",)
    actions = [d.action.value for d, _ in guard.decided if "repeated_text" in d.detectors]
    assert actions == ["replan", "replan", "replan", "stop"]


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_the_same_answer_after_its_nudge_stops_at_once(make_loopguard, stream):
    """Delivered, the replan's message reaches the model once; the same apology after it
    is the nudge not helping: the next decision stops."""
    guard = make_loopguard(mode="enforce")
    api = ScriptedMessagesAPI(apologising)
    with pytest.raises(LoopGuardInterrupt) as raised:
        run_agent(api.client(), ToolBox(), stream=stream)
    assert raised.value.decision.detectors == ("repeated_text",)
    assert "the nudge did not help" in raised.value.decision.reason
    actions = [d.action.value for d, _ in guard.decided if "repeated_text" in d.detectors]
    assert actions == ["replan", "stop"]
    (replan,) = [d for d, _ in guard.decided if d.action.value == "replan"]
    carrying = [r for r in api.requests if replan.recommendation in str(r["messages"])]
    assert len(carrying) == 1


def test_a_productive_agent_says_different_things(make_loopguard):
    guard = make_loopguard(mode="enforce")
    run_agent(ScriptedMessagesAPI(productive()).client(), ToolBox())
    assert not [d for d, _ in guard.decided if "repeated_text" in d.detectors]
