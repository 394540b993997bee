"""Delivering a replan's recommendation (``enforce`` mode): a real Agno ``Agent``, a scripted
``Model`` that records the messages of every request it gets.

The message goes into the next request once, as a user message after the tool messages
(the loop's own list never holds it); a model that listens completes, one that ignores it is
stopped saying the nudge did not help; an empty give-up after a failing tool is re-prompted
at once; observe mode changes no request."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from agno.agent import Agent
from agno.metrics import MessageMetrics
from agno.models.base import Model
from agno.models.message import Message
from agno.models.response import ModelResponse

from otel_loopguard.engine.decisions import LoopGuardInterrupt

NUDGE = "Act on what you found"
REPROMPT = "You ended your turn without completing the task"
SHELL_HINT = "The shell command keeps failing"

#: what the model answers: a text, ``None`` (nothing at all), or tool calls
Reply = str | None | list[tuple[str, dict[str, Any]]]
#: a request as the model got it: (role, content) of each message
Request = list[tuple[str, Any]]


@dataclass
class RecordingModel(Model):
    """Answers each request with ``policy(request)``; keeps every request's messages."""

    id: str = "scripted-gpt"
    name: str = "RecordingModel"
    provider: str = "scripted"
    policy: Callable[[Request], Reply] = field(default=lambda request: "done")
    requests: list[Request] = field(default_factory=list)
    max_calls: int = 30

    def _answer(self, messages: list[Message]) -> tuple[Reply, list[dict[str, Any]]]:
        request = [(m.role, m.content) for m in messages]
        self.requests.append(request)
        if len(self.requests) > self.max_calls:
            raise RuntimeError("the recording model was called too often")
        reply = self.policy(request)
        if not isinstance(reply, list):
            return reply, []
        n = len(self.requests)
        calls = [
            {
                "id": f"call_{n}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (name, args) in enumerate(reply)
        ]
        return None, calls

    @staticmethod
    def _usage() -> MessageMetrics:
        return MessageMetrics(input_tokens=40, output_tokens=10, total_tokens=50)

    def _response(self, messages: list[Message]) -> ModelResponse:
        text, calls = self._answer(messages)
        return ModelResponse(
            role="assistant", content=text, tool_calls=calls, response_usage=self._usage()
        )

    def _deltas(self, messages: list[Message]) -> Iterator[ModelResponse]:
        text, calls = self._answer(messages)
        if text:
            for word in text.split(" "):
                yield ModelResponse(role="assistant", content=word + " ")
        if calls:
            yield ModelResponse(role="assistant", tool_calls=calls)
        yield ModelResponse(response_usage=self._usage())

    def invoke(self, messages: list[Message], **kwargs: Any) -> ModelResponse:
        return self._response(messages)

    async def ainvoke(self, messages: list[Message], **kwargs: Any) -> ModelResponse:
        return self._response(messages)

    def invoke_stream(self, messages: list[Message], **kwargs: Any) -> Iterator[ModelResponse]:
        yield from self._deltas(messages)

    async def ainvoke_stream(
        self, messages: list[Message], **kwargs: Any
    ) -> AsyncIterator[ModelResponse]:
        for delta in self._deltas(messages):
            yield delta

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]


def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def write_file(path: str, text: str) -> str:
    """Write a file."""
    return f"wrote {path}"


def bash(command: str) -> str:
    """Run a shell command."""
    return f"bash: {command.split()[0]}: command not found"


def _agent(policy: Callable[[Request], Reply]) -> Agent:
    # telemetry off: Agno would post each run to its API (no network here)
    return Agent(
        name="coder",
        model=RecordingModel(policy=policy),
        tools=[read_file, write_file, bash],
        telemetry=False,
    )


def _mentions(request: Request, text: str) -> int:
    return sum(isinstance(content, str) and text in content for _, content in request)


def _tool_calls(request: Request) -> int:
    return sum(role == "tool" for role, _ in request)


def _reads(request: Request) -> Reply:
    return [("read_file", {"path": f"f{_tool_calls(request)}.py"})]


def _reads_until_nudged(request: Request) -> Reply:
    if _mentions(request, "wrote utils.py"):
        return "fixed in utils.py"
    if _mentions(request, NUDGE):
        return [("write_file", {"path": "utils.py", "text": "fixed"})]
    return _reads(request)


def _answer(outcome: Any) -> str:
    """The final text of a run's output, or of its streamed content events."""
    if isinstance(outcome, list):
        return "".join(
            event.content for event in outcome if isinstance(getattr(event, "content", None), str)
        ).strip()
    return outcome.content.strip()


def _arun(agent: Agent, prompt: str, stream: bool) -> Any:
    async def run() -> Any:
        if stream:
            return [event async for event in agent.arun(prompt, stream=True)]
        return await agent.arun(prompt)

    return asyncio.run(asyncio.wait_for(run(), timeout=60))


#: each way to run an agent, to its end
RUNS: dict[str, Callable[[Agent, str], Any]] = {
    "run": lambda agent, prompt: agent.run(prompt),
    "arun": lambda agent, prompt: _arun(agent, prompt, False),
    "run-stream": lambda agent, prompt: list(agent.run(prompt, stream=True)),
    "arun-stream": lambda agent, prompt: _arun(agent, prompt, True),
}


def _delivered(loopguard: Any) -> list[tuple[str, ...]]:
    return [
        e.attributes["loopguard.detectors"]
        for s in loopguard.spans()
        for e in s.events
        if e.name == "loopguard.recommendation.delivered"
    ]


def _assert_carried_once_after_the_tool_messages(
    requests: list[Request], text: str, index: int
) -> None:
    """Request ``index`` (and no other) carries ``text`` once, as its last message: a user
    message right after the tool message answering the last tool call."""
    carrying = [i for i, r in enumerate(requests) if _mentions(r, text)]
    assert carrying == [index % len(requests)]
    request = requests[index]
    assert _mentions(request, text) == 1
    assert request[-1][0] == "user" and text in request[-1][1]
    assert request[-2][0] == "tool"


@pytest.mark.parametrize("how", RUNS)
def test_a_read_only_loop_is_nudged_once_and_a_model_that_listens_completes(
    make_loopguard: Any, how: str
) -> None:
    loopguard = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    agent = _agent(_reads_until_nudged)

    outcome = RUNS[how](agent, "fix the bug")

    assert _answer(outcome) == "fixed in utils.py"
    requests = agent.model.requests
    # the 3rd read-only step is judged when the 4th turn answers: the 5th request carries it
    _assert_carried_once_after_the_tool_messages(requests, NUDGE, 4)
    assert len(requests) == 6
    assert loopguard.run_state("coder") == "completed"
    assert _delivered(loopguard) == [("read_only_loop",)]
    loopguard.assert_every_span_ended_once()


@pytest.mark.parametrize("how", ["run", "arun-stream"])
def test_a_model_that_ignores_the_nudge_is_stopped_saying_the_nudge_did_not_help(
    make_loopguard: Any, how: str
) -> None:
    loopguard = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    agent = _agent(_reads)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        RUNS[how](agent, "fix the bug")

    assert "the nudge did not help" in stopped.value.decision.reason
    assert stopped.value.decision.detectors == ("read_only_loop",)
    requests = agent.model.requests
    assert sum(_mentions(r, NUDGE) for r in requests) == 1
    assert len(requests) == 7  # nudged in the 5th, stopped when the 7th answered
    assert loopguard.run_state("coder") == "stopped"


@pytest.mark.parametrize("how", ["run", "arun"])
def test_a_shell_failure_hint_reaches_the_next_request(make_loopguard: Any, how: str) -> None:
    loopguard = make_loopguard(mode="enforce", shell_failure_threshold=2)

    def policy(request: Request) -> Reply:
        if _mentions(request, SHELL_HINT):
            return "pytest is not installed here; please install it"
        return [("bash", {"command": "pytest -q"})]

    agent = _agent(policy)
    outcome = RUNS[how](agent, "run the tests")

    assert _answer(outcome) == "pytest is not installed here; please install it"
    _assert_carried_once_after_the_tool_messages(agent.model.requests, SHELL_HINT, 2)
    assert loopguard.run_state("coder") == "completed"
    assert _delivered(loopguard) == [("shell_failure",)]


@pytest.mark.parametrize("how", ["run", "arun"])
def test_an_empty_give_up_after_a_failing_tool_is_re_prompted_at_once(
    make_loopguard: Any, how: str
) -> None:
    loopguard = make_loopguard(mode="enforce")

    def policy(request: Request) -> Reply:
        if _mentions(request, REPROMPT):
            return "pytest is missing, so I could not run the tests"
        if _mentions(request, "command not found"):
            return None  # gives up without a word
        return [("bash", {"command": "pytest -q"})]

    agent = _agent(policy)
    outcome = RUNS[how](agent, "run the tests")

    assert _answer(outcome) == "pytest is missing, so I could not run the tests"
    requests = agent.model.requests
    assert len(requests) == 3
    _assert_carried_once_after_the_tool_messages(requests, REPROMPT, 2)
    # the run's messages: the loop's own list, with the answer, never our prompt
    stored = [(m.role, m.content) for m in outcome.messages]
    assert not _mentions(stored, REPROMPT)
    assert stored[-1] == ("assistant", "pytest is missing, so I could not run the tests")
    assert loopguard.run_state("coder") == "completed"


@pytest.mark.parametrize("how", RUNS)
def test_observe_mode_changes_no_request(make_loopguard: Any, how: str) -> None:
    make_loopguard(mode="observe", read_only_loop_threshold=3, shell_failure_threshold=2)

    def policy(request: Request) -> Reply:
        if _tool_calls(request) < 6:
            return _reads(request)
        if _tool_calls(request) < 9:
            return [("bash", {"command": "pytest -q"})]
        return None

    agent = _agent(policy)
    RUNS[how](agent, "fix the bug")

    for request in agent.model.requests:
        assert not any(_mentions(request, text) for text in (NUDGE, SHELL_HINT, REPROMPT))
    assert len(agent.model.requests) == 10
