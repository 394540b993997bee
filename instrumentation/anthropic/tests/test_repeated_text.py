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
    guard = make_loopguard(mode="enforce")
    with pytest.raises(LoopGuardInterrupt) as raised:
        run_agent(ScriptedMessagesAPI(apologising).client(), ToolBox(), stream=stream)
    assert raised.value.decision.detectors == ("repeated_text",)
    actions = [d.action.value for d, _ in guard.decided if "repeated_text" in d.detectors]
    assert actions == ["replan", "replan", "replan", "stop"]


def test_a_productive_agent_says_different_things(make_loopguard):
    guard = make_loopguard(mode="enforce")
    run_agent(ScriptedMessagesAPI(productive()).client(), ToolBox())
    assert not [d for d, _ in guard.decided if "repeated_text" in d.detectors]
