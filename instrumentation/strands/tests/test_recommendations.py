"""Delivering a replan's recommendation (``enforce`` mode): a real Strands ``Agent``, a
scripted ``Model`` that records the messages of every request it gets.

The message goes into the next request once, as a text block after the ``toolResult``
blocks of the trailing user message; a model that listens completes, one that ignores it is
stopped saying the nudge did not help; a truncated answer (which Strands would raise
``MaxTokensReachedException`` on) is continued and joined, an empty give-up re-prompted;
observe mode changes no request."""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from scripted_models import answer_text
from strands import Agent, tool
from strands.models import Model
from strands.types.exceptions import MaxTokensReachedException

from otel_loopguard.engine.decisions import LoopGuardInterrupt

NUDGE = "Act on what you found"
CONTINUE = "cut off at the output token limit"
REPROMPT = "You ended your turn without completing the task"
SHELL_HINT = "The shell command keeps failing"

_ids = itertools.count(1)


@dataclass
class Cut:
    """An answer cut off at the output token limit (``max_tokens``)."""

    text: str


#: what the model answers: a text, ``Cut``, ``None`` (nothing at all), or tool calls
Reply = str | Cut | None | list[tuple[str, dict[str, Any]]]
Messages = list[dict[str, Any]]


class RecordingModel(Model):
    """Answers each request with ``policy(messages)``, streaming the events a provider's
    model yields; keeps a deep copy of every request's messages."""

    def __init__(self, policy: Callable[[Messages], Reply]) -> None:
        self.policy = policy
        self.requests: list[Messages] = []
        self.config: dict[str, Any] = {"model_id": "scripted-model"}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        return self.config

    async def structured_output(self, output_model, prompt, system_prompt=None, **kwargs):  # type: ignore[no-untyped-def]
        raise NotImplementedError
        yield {}  # pragma: no cover

    async def stream(
        self, messages, tool_specs=None, system_prompt=None, **kwargs: Any
    ) -> AsyncGenerator[dict[str, Any], None]:
        self.requests.append(copy.deepcopy(messages))
        reply = self.policy(messages)
        yield {"messageStart": {"role": "assistant"}}
        stop_reason = "end_turn"
        if isinstance(reply, list):
            for name, arguments in reply:
                start = {"toolUse": {"name": name, "toolUseId": f"call-{next(_ids)}"}}
                yield {"contentBlockStart": {"start": start}}
                yield {
                    "contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(arguments)}}}
                }
                yield {"contentBlockStop": {}}
            stop_reason = "tool_use"
        elif reply is not None:
            if isinstance(reply, Cut):
                reply, stop_reason = reply.text, "max_tokens"
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": reply}}}
            yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": stop_reason}}
        usage = {"inputTokens": 20, "outputTokens": 10, "totalTokens": 30}
        yield {"metadata": {"usage": usage, "metrics": {"latencyMs": 1}}}


@tool
def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: the file
    """
    return f"contents of {path}"


@tool
def write_file(path: str, text: str) -> str:
    """Write a file.

    Args:
        path: the file
        text: its new text
    """
    return f"wrote {path}"


@tool
def bash(command: str) -> str:
    """Run a shell command.

    Args:
        command: the command line
    """
    return f"bash: {command.split()[0]}: command not found"


def _agent(policy: Callable[[Messages], Reply]) -> Agent:
    return Agent(
        name="coder",
        model=RecordingModel(policy),
        tools=[read_file, write_file, bash],
        callback_handler=None,
    )


def _texts(message: dict[str, Any]) -> list[str]:
    return [b["text"] for b in message["content"] if "text" in b]


def _mentions(request: Messages, text: str) -> int:
    return sum(text in said for m in request for said in _texts(m))


def _seen(messages: Messages, text: str) -> bool:
    return _mentions(messages, text) > 0


def _reads(messages: Messages) -> Reply:
    return [("read_file", {"path": f"f{len(messages)}.py"})]


def _last_tool(messages: Messages) -> str | None:
    for message in reversed(messages):
        for block in message["content"]:
            if "toolUse" in block:
                return block["toolUse"]["name"]
    return None


def _reads_until_nudged(messages: Messages) -> Reply:
    if _last_tool(messages) == "write_file":
        return "fixed in utils.py"
    if _seen(messages, NUDGE):
        return [("write_file", {"path": "utils.py", "text": "fixed"})]
    return _reads(messages)


def _delivered(loopguard: Any) -> list[tuple[str, ...]]:
    return [
        e.attributes["loopguard.detectors"]
        for s in loopguard.spans()
        for e in s.events
        if e.name == "loopguard.recommendation.delivered"
    ]


def _assert_carried_once_after_the_results(requests: list[Messages], text: str, index: int) -> None:
    """Request ``index`` (and no other) carries ``text`` once: the last block of the
    trailing user message, after its ``toolResult`` blocks (no second user turn)."""
    carrying = [i for i, r in enumerate(requests) if _mentions(r, text)]
    assert carrying == [index % len(requests)]
    request = requests[index]
    assert _mentions(request, text) == 1
    last = request[-1]
    assert last["role"] == "user" and request[-2]["role"] == "assistant"
    assert "toolResult" in last["content"][0]
    assert text in last["content"][-1]["text"]


def _invoke(agent: Agent, how: str, prompt: str = "fix the bug") -> Any:
    """One invocation: ``agent(...)``, ``invoke_async`` or ``stream_async``."""
    if how == "call":
        return agent(prompt)
    if how == "invoke_async":
        return asyncio.run(asyncio.wait_for(agent.invoke_async(prompt), timeout=60))

    async def streamed() -> Any:
        result = None
        async for event in agent.stream_async(prompt):
            result = event.get("result", result)
        return result

    return asyncio.run(asyncio.wait_for(streamed(), timeout=60))


PATHS = ["call", "invoke_async", "stream_async"]


@pytest.mark.parametrize("how", PATHS)
def test_a_read_only_loop_is_nudged_once_and_a_model_that_listens_completes(
    make_loopguard: Any, how: str
) -> None:
    loopguard = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    agent = _agent(_reads_until_nudged)

    result = _invoke(agent, how)

    assert answer_text(result) == "fixed in utils.py"
    requests = agent.model.requests
    # the 3rd read-only step is judged when the 4th turn answers: the 5th request carries it
    _assert_carried_once_after_the_results(requests, NUDGE, 4)
    assert len(requests) == 6
    assert not _seen(agent.messages, NUDGE)  # the agent's history never holds it
    assert loopguard.run_state("coder") == "completed"
    assert _delivered(loopguard) == [("read_only_loop",)]
    loopguard.assert_every_span_ended_once()


def test_a_model_that_ignores_the_nudge_is_stopped_saying_the_nudge_did_not_help(
    make_loopguard: Any,
) -> None:
    loopguard = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    agent = _agent(_reads)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        agent("fix the bug")

    assert "the nudge did not help" in stopped.value.decision.reason
    assert stopped.value.decision.detectors == ("read_only_loop",)
    requests = agent.model.requests
    assert sum(_mentions(r, NUDGE) for r in requests) == 1
    assert len(requests) == 7  # nudged in the 5th, stopped when the 7th answered
    assert loopguard.run_state("coder") == "stopped"
    loopguard.assert_every_span_ended_once()


def test_a_shell_failure_hint_reaches_the_next_request(make_loopguard: Any) -> None:
    loopguard = make_loopguard(mode="enforce", shell_failure_threshold=2)

    def policy(messages: Messages) -> Reply:
        if _seen(messages, SHELL_HINT):
            return "pytest is not installed here; please install it"
        return [("bash", {"command": "pytest -q"})]

    agent = _agent(policy)
    result = agent("run the tests")

    assert answer_text(result) == "pytest is not installed here; please install it"
    _assert_carried_once_after_the_results(agent.model.requests, SHELL_HINT, 2)
    assert loopguard.run_state("coder") == "completed"
    assert _delivered(loopguard) == [("shell_failure",)]


@pytest.mark.parametrize("how", PATHS)
def test_a_truncated_answer_is_continued_and_the_caller_gets_it_joined(
    make_loopguard: Any, how: str
) -> None:
    loopguard = make_loopguard(mode="enforce")
    parts = iter([Cut("The fix is "), Cut("in utils.py, "), "line 3."])
    agent = _agent(lambda messages: next(parts))

    result = _invoke(agent, how, "where is the bug?")

    assert answer_text(result) == "The fix is in utils.py, line 3."
    assert result.stop_reason == "end_turn"
    requests = agent.model.requests
    assert len(requests) == 3
    assert requests[1][-2] == {"role": "assistant", "content": [{"text": "The fix is "}]}
    assert _texts(requests[2][-2]) == ["The fix is in utils.py, "]
    for request in requests[1:]:
        assert request[-1]["role"] == "user" and _mentions(request, CONTINUE) == 1
    # the history holds the question and the joined answer, not our prompts
    assert [m["role"] for m in agent.messages] == ["user", "assistant"]
    assert _texts(agent.messages[-1]) == ["The fix is in utils.py, line 3."]
    assert loopguard.run_usage("coder") == (3 * 20, 3 * 10)
    assert loopguard.run_state("coder") == "completed"


def test_an_empty_give_up_after_a_failing_tool_is_re_prompted(make_loopguard: Any) -> None:
    loopguard = make_loopguard(mode="enforce")

    def policy(messages: Messages) -> Reply:
        if _seen(messages, REPROMPT):
            return "pytest is missing, so I could not run the tests"
        if _last_tool(messages) == "bash":
            return None  # gives up without a word
        return [("bash", {"command": "pytest -q"})]

    agent = _agent(policy)
    result = agent("run the tests")

    assert answer_text(result) == "pytest is missing, so I could not run the tests"
    requests = agent.model.requests
    assert len(requests) == 3
    _assert_carried_once_after_the_results(requests, REPROMPT, 2)
    assert loopguard.run_state("coder") == "completed"


def test_observe_mode_changes_no_request(make_loopguard: Any) -> None:
    make_loopguard(mode="observe", read_only_loop_threshold=3, shell_failure_threshold=2)

    def policy(messages: Messages) -> Reply:
        if len(messages) < 13:
            return _reads(messages)
        return Cut("The fix is ")

    agent = _agent(policy)
    with pytest.raises(MaxTokensReachedException):  # as Strands does without us
        agent("fix the bug")

    for request in agent.model.requests:
        assert not any(_mentions(request, text) for text in (NUDGE, CONTINUE, REPROMPT))
    assert len(agent.model.requests) == 7
