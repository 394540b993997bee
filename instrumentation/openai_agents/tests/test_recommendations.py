"""Delivered recommendations in real OpenAI Agents SDK runs: a replan's message reaches the
model's next input once, as a user input item after the tool outputs; a model that listens
finishes, one that ignores it is stopped; observe mode sends every input as it was.

The SDK's own ``ScriptedModel`` answers each call from a responder that reads the input it
was given, and records every call's input (plain and streamed), so the tests read what the
model really got.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from agents import Agent, Runner, function_tool
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

from otel_loopguard import LoopGuardInterrupt

NUDGE = "Act on what you found"
CONTINUE = "cut off at the output token limit"
REPROMPT = "You ended your turn without completing the task"
SHELL_HINT = "The shell command keeps failing with"
ANSWER = "The bug is in utils.py, line 3."
STEPS = 30

#: the model's next move, from (calls so far, the input it got): ("read", path),
#: ("bash", command), ("cut", text) with a read, or ("answer", text)
Step = tuple[str, str]


class Coder:
    """A real ``Agent`` with a coding agent's tools, whose ``ScriptedModel`` answers from
    ``policy``."""

    def __init__(self, policy: Callable[[int, list[Any]], Step]) -> None:
        self.policy = policy
        self.ran: list[str] = []
        self.model = ScriptedModel([ModelStep.respond(self._respond) for _ in range(STEPS)])

    @property
    def inputs(self) -> list[list[Any]]:
        return [call.input for call in self.model.calls]

    def _respond(self, call: Any) -> Any:
        count = len(self.model.calls)
        kind, value = self.policy(count, call.input)
        if kind == "answer":
            return [assistant_message(value)]
        if kind == "cut":  # an explanation cut off at the token limit, with a read
            message = assistant_message(value)
            message.status = "incomplete"
            return [message, function_call("read_file", {"path": "notes.md"}, call_id=f"c{count}")]
        name, arguments = (
            ("bash", {"command": value}) if kind == "bash" else ("read_file", {"path": value})
        )
        return [function_call(name, arguments, call_id=f"c{count}")]

    def agent(self) -> Agent:
        @function_tool
        def read_file(path: str) -> str:
            """Read a file."""
            self.ran.append(path)
            return f"contents of {path}"

        @function_tool
        def bash(command: str) -> str:
            """Run a shell command."""
            self.ran.append(command)
            return f"bash: {command.split()[0]}: command not found"

        return Agent(name="coder", tools=[read_file, bash], model=self.model)


def _user_texts(items: Any) -> list[str]:
    if isinstance(items, str):
        return [items]
    return [
        item["content"]
        for item in items
        if isinstance(item, dict)
        and item.get("role") == "user"
        and isinstance(item.get("content"), str)
    ]


def _mentions(items: Any, text: str) -> int:
    return sum(text in content for content in _user_texts(items))


def _carrying(coder: Coder, text: str) -> list[int]:
    return [i for i, items in enumerate(coder.inputs) if _mentions(items, text)]


def _assert_last_after_the_tool_outputs(items: list[Any], text: str) -> None:
    """Our item ends the input, right after the outputs of the previous turn's calls."""
    assert items[-1] == {"role": "user", "content": items[-1]["content"]}
    assert text in items[-1]["content"]
    assert items[-2]["type"] == "function_call_output"


def _reads_until_nudged(count: int, items: list[Any]) -> Step:
    if _mentions(items, NUDGE):
        return ("answer", ANSWER)
    return ("read", f"src/f{count}.py")


def _reads_forever(count: int, items: list[Any]) -> Step:
    return ("read", f"src/f{count}.py")


def _run(agent: Agent, how: str) -> Any:
    if how == "run_sync":
        return Runner.run_sync(agent, "Fix the bug.").final_output
    if how == "run":
        return asyncio.run(Runner.run(agent, "Fix the bug.")).final_output

    async def consume() -> Any:
        streamed = Runner.run_streamed(agent, "Fix the bug.")
        async for _event in streamed.stream_events():
            pass
        return streamed.final_output

    return asyncio.run(consume())


@pytest.mark.parametrize("how", ["run_sync", "run", "run_streamed"])
def test_the_nudge_reaches_the_next_input_once_and_a_model_that_listens_completes(
    make_loopguard: Any, how: str
) -> None:
    harness = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    coder = Coder(_reads_until_nudged)

    output = _run(coder.agent(), how)

    assert output == ANSWER
    # the 3rd read-only step is judged when the 4th turn answers: the 5th call carries it
    assert coder.ran == ["src/f1.py", "src/f2.py", "src/f3.py", "src/f4.py"]
    assert _carrying(coder, NUDGE) == [4]  # the last call, and no other
    assert _mentions(coder.inputs[4], NUDGE) == 1
    _assert_last_after_the_tool_outputs(coder.inputs[4], NUDGE)
    assert harness.run_state("coder") == "completed"
    delivered = [
        event
        for span in harness.spans()
        for event in span.events
        if event.name == "loopguard.recommendation.delivered"
    ]
    assert [event.attributes["loopguard.detectors"] for event in delivered] == [("read_only_loop",)]


def test_the_nudge_is_not_kept_in_the_runs_items(make_loopguard: Any) -> None:
    make_loopguard(mode="enforce", read_only_loop_threshold=3)
    coder = Coder(_reads_until_nudged)

    result = Runner.run_sync(coder.agent(), "Fix the bug.")

    assert _mentions(coder.inputs[-1], NUDGE) == 1
    assert _mentions(result.to_input_list(), NUDGE) == 0


@pytest.mark.parametrize("how", ["run_sync", "run_streamed"])
def test_a_model_that_ignores_the_nudge_is_stopped_saying_the_nudge_did_not_help(
    make_loopguard: Any, how: str
) -> None:
    harness = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    coder = Coder(_reads_forever)

    with pytest.raises(LoopGuardInterrupt) as raised:
        _run(coder.agent(), how)

    decision = raised.value.decision
    assert "the nudge did not help" in decision.reason
    assert decision.detectors == ("read_only_loop",)
    assert _carrying(coder, NUDGE) == [4]  # nudged once, never again
    # the nudged read and the next are judged when the 7th turn answers: stopped there
    assert len(coder.inputs) == 7
    assert len(coder.ran) == 6
    assert harness.run_state("coder") == "stopped"
    harness.assert_every_span_ended_once()


def test_observe_mode_sends_every_input_as_it_was(make_loopguard: Any) -> None:
    harness = make_loopguard(mode="observe", read_only_loop_threshold=3)
    coder = Coder(lambda count, items: ("read", f"f{count}") if count < 8 else ("answer", "ok"))

    assert Runner.run_sync(coder.agent(), "Fix the bug.").final_output == "ok"

    assert harness.decision_events("replan")  # decided, and only recorded
    for text in (NUDGE, CONTINUE, REPROMPT, SHELL_HINT):
        assert _carrying(coder, text) == []


def test_delivery_off_sends_every_input_as_it_was(make_loopguard: Any) -> None:
    make_loopguard(mode="enforce", read_only_loop_threshold=3, deliver_recommendations=False)
    coder = Coder(lambda count, items: ("read", f"f{count}") if count < 8 else ("answer", "ok"))

    assert Runner.run_sync(coder.agent(), "Fix the bug.").final_output == "ok"

    assert _carrying(coder, NUDGE) == []


@pytest.mark.parametrize("how", ["run", "run_streamed"])
def test_the_shell_hint_reaches_the_input_after_the_failures(make_loopguard: Any, how: str) -> None:
    harness = make_loopguard(mode="enforce", shell_failure_threshold=2)

    def policy(count: int, items: list[Any]) -> Step:
        if _mentions(items, SHELL_HINT):
            return ("answer", "pytest is not installed; install it first.")
        return ("bash", "pytest -q")

    coder = Coder(policy)

    assert _run(coder.agent(), how) == "pytest is not installed; install it first."

    assert coder.ran == ["pytest -q", "pytest -q"]
    assert _carrying(coder, SHELL_HINT) == [2]
    _assert_last_after_the_tool_outputs(coder.inputs[2], SHELL_HINT)
    assert harness.run_state("coder") == "completed"


def test_the_continuation_prompt_reaches_the_input_after_a_truncated_turn(
    make_loopguard: Any,
) -> None:
    """A turn cut off at the token limit that still asked for a tool: the SDK runs the tool
    and calls the model again, and that input carries the continuation prompt."""
    make_loopguard(mode="enforce")
    coder = Coder(
        lambda count, items: (
            ("cut", "Looking at the notes, the") if count == 1 else ("answer", ANSWER)
        )
    )

    assert Runner.run_sync(coder.agent(), "Fix the bug.").final_output == ANSWER

    assert _carrying(coder, CONTINUE) == [1]
    _assert_last_after_the_tool_outputs(coder.inputs[1], CONTINUE)


def test_a_string_input_becomes_a_list_with_the_message(make_loopguard: Any) -> None:
    """The first call of a run gets the caller's string: a message waiting from before
    goes in after it, as a second user item."""
    from otel_loopguard_openai_agents.recommendations import deliver

    from otel_loopguard.kit.model_turn import ModelCall

    call = ModelCall(None, (), {"input": "Fix the bug."})
    assert deliver(call, "Act on what you found.")
    assert call.kwargs["input"] == [
        {"role": "user", "content": "Fix the bug."},
        {"role": "user", "content": "Act on what you found."},
    ]


def test_a_truncated_final_answer_is_not_asked_again(make_loopguard: Any) -> None:
    """The SDK ends the run on a message; the continuation waits for a call that never
    comes (README)."""
    harness = make_loopguard(mode="enforce")
    model = ScriptedModel([ModelStep.respond(_incomplete)])
    agent = Agent(name="writer", model=model)

    assert Runner.run_sync(agent, "What does it cost?").final_output == "The team plan costs"

    ((_span, replan),) = harness.decision_events("replan")
    assert replan["loopguard.recommendation.delivery"] == "queued"
    assert harness.run_state("writer") == "completed"


def _incomplete(call: Any) -> Any:
    message = assistant_message("The team plan costs")
    message.status = "incomplete"
    return [message]
