"""Delivering a replan's recommendation (``enforce`` mode): a real ADK runner, a scripted
``BaseLlm`` that records the contents of every request it gets.

The message goes into the next request once, as a user ``Content`` after the function
responses; a model that listens completes, one that ignores it is stopped saying the nudge
did not help; a truncated answer is continued and joined, an empty give-up re-prompted;
observe mode changes no request."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from scripted_models import final_text, message, new_runner, run

from otel_loopguard.engine.decisions import LoopGuardInterrupt

NUDGE = "Act on what you found"
CONTINUE = "cut off at the output token limit"
REPROMPT = "You ended your turn without completing the task"
SHELL_HINT = "The shell command keeps failing"


@dataclass
class Cut:
    """An answer cut off at the output token limit (``MAX_TOKENS``)."""

    text: str


#: what the model answers: a text, ``Cut``, ``None`` (nothing at all), or tool calls
Reply = str | Cut | None | list[tuple[str, dict[str, Any]]]


class RecordingModel(BaseLlm):
    """Answers each request with ``policy(contents)``; keeps a copy of every request's
    contents as ``(role, [part texts / function names])`` pairs."""

    model: str = "scripted-gemini"
    policy: Callable[[list[types.Content]], Reply]
    requests: list[list[tuple[str, list[str]]]] = []

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append([_summary(c) for c in llm_request.contents])
        reply = self.policy(llm_request.contents)
        finish = types.FinishReason.STOP
        if isinstance(reply, list):
            n = len(self.requests)
            parts = [
                types.Part(function_call=types.FunctionCall(name=name, args=args, id=f"c{n}{i}"))
                for i, (name, args) in enumerate(reply)
            ]
        else:
            if isinstance(reply, Cut):
                reply, finish = reply.text, types.FinishReason.MAX_TOKENS
            parts = [types.Part(text=reply)] if reply else []
            if stream and reply:
                for word in reply.split(" "):
                    yield LlmResponse(
                        content=types.Content(role="model", parts=[types.Part(text=word)]),
                        partial=True,
                    )
        yield LlmResponse(
            content=types.Content(role="model", parts=parts),
            finish_reason=finish,
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=40, candidates_token_count=10
            ),
        )


def _summary(content: types.Content) -> tuple[str, list[str]]:
    said = []
    for part in content.parts or ():
        if part.function_response is not None:
            said.append(f"<response {part.function_response.name}>")
        elif part.function_call is not None:
            said.append(f"<call {part.function_call.name}>")
        else:
            said.append(part.text or "")
    return content.role or "", said


def _mentions(request: list[tuple[str, list[str]]], text: str) -> int:
    return sum(text in said for _, parts in request for said in parts)


def _seen(contents: list[types.Content], text: str) -> bool:
    return any(text in (p.text or "") for c in contents for p in c.parts or ())


def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def write_file(path: str, text: str) -> str:
    """Write a file."""
    return f"wrote {path}"


def bash(command: str) -> str:
    """Run a shell command."""
    return f"bash: {command.split()[0]}: command not found"


def _agent(policy: Callable[[list[types.Content]], Reply]) -> LlmAgent:
    return LlmAgent(
        name="coder",
        model=RecordingModel(policy=policy, requests=[]),
        tools=[read_file, write_file, bash],
    )


def _reads(contents: list[types.Content]) -> Reply:
    return [("read_file", {"path": f"f{len(contents)}.py"})]


def _reads_until_nudged(contents: list[types.Content]) -> Reply:
    if _seen(contents, NUDGE):
        return [("write_file", {"path": "utils.py", "text": "fixed"})]
    last = contents[-1].parts[0] if contents and contents[-1].parts else None
    if last is not None and last.function_response and last.function_response.name == "write_file":
        return "fixed in utils.py"
    return _reads(contents)


def _delivered(loopguard: Any) -> list[tuple[str, ...]]:
    return [
        e.attributes["loopguard.detectors"]
        for s in loopguard.spans()
        for e in s.events
        if e.name == "loopguard.recommendation.delivered"
    ]


def _assert_carried_once_after_the_responses(
    requests: list[list[tuple[str, list[str]]]], text: str, index: int
) -> None:
    """Request ``index`` (and no other) carries ``text`` once, as the last content: a user
    text after the function responses it follows."""
    carrying = [i for i, r in enumerate(requests) if _mentions(r, text)]
    assert carrying == [index % len(requests)]
    request = requests[index]
    assert _mentions(request, text) == 1
    role, parts = request[-1]
    assert role == "user" and len(parts) == 1 and text in parts[0]
    assert request[-2][1][0].startswith("<response ")


@pytest.mark.parametrize("streaming", [StreamingMode.NONE, StreamingMode.SSE])
def test_a_read_only_loop_is_nudged_once_and_a_model_that_listens_completes(
    make_loopguard: Any, streaming: StreamingMode
) -> None:
    loopguard = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    agent = _agent(_reads_until_nudged)

    events = run(new_runner(agent), run_config=RunConfig(streaming_mode=streaming))

    requests = agent.model.requests
    assert final_text(events) == "fixed in utils.py"
    # the 3rd read-only step is judged when the 4th turn answers: the 5th request carries it
    _assert_carried_once_after_the_responses(requests, NUDGE, 4)
    assert len(requests) == 6
    assert loopguard.run_state("coder") == "completed"
    assert _delivered(loopguard) == [("read_only_loop",)]
    loopguard.assert_every_span_ended_once()


def test_the_sync_runner_delivers_too(make_loopguard: Any) -> None:
    loopguard = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    agent = _agent(_reads_until_nudged)
    runner = new_runner(agent)
    asyncio.run(
        runner.session_service.create_session(app_name="tests", user_id="user", session_id="s")
    )

    events = list(runner.run(user_id="user", session_id="s", new_message=message()))

    assert final_text(events) == "fixed in utils.py"
    _assert_carried_once_after_the_responses(agent.model.requests, NUDGE, 4)
    assert loopguard.run_state("coder") == "completed"


def test_a_model_that_ignores_the_nudge_is_stopped_saying_the_nudge_did_not_help(
    make_loopguard: Any,
) -> None:
    loopguard = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    agent = _agent(_reads)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        run(new_runner(agent))

    assert "the nudge did not help" in stopped.value.decision.reason
    assert stopped.value.decision.detectors == ("read_only_loop",)
    requests = agent.model.requests
    assert sum(_mentions(r, NUDGE) for r in requests) == 1
    assert len(requests) == 7  # nudged in the 5th, stopped when the 7th answered
    assert loopguard.run_state("coder") == "stopped"


def test_a_shell_failure_hint_reaches_the_next_request(make_loopguard: Any) -> None:
    loopguard = make_loopguard(mode="enforce", shell_failure_threshold=2)

    def policy(contents: list[types.Content]) -> Reply:
        if _seen(contents, SHELL_HINT):
            return "pytest is not installed here; please install it"
        return [("bash", {"command": "pytest -q"})]

    agent = _agent(policy)
    events = run(new_runner(agent))

    assert final_text(events) == "pytest is not installed here; please install it"
    _assert_carried_once_after_the_responses(agent.model.requests, SHELL_HINT, 2)
    assert loopguard.run_state("coder") == "completed"
    assert _delivered(loopguard) == [("shell_failure",)]


@pytest.mark.parametrize("streaming", [StreamingMode.NONE, StreamingMode.SSE])
def test_a_truncated_answer_is_continued_and_the_caller_gets_it_joined(
    make_loopguard: Any, streaming: StreamingMode
) -> None:
    loopguard = make_loopguard(mode="enforce")
    parts = iter([Cut("The fix is "), Cut("in utils.py, "), "line 3."])
    agent = _agent(lambda contents: next(parts))
    runner = new_runner(agent)

    events = run(runner, run_config=RunConfig(streaming_mode=streaming))

    complete = [e for e in events if not e.partial and e.content and e.content.parts]
    assert [e.content.parts[0].text for e in complete] == ["The fix is in utils.py, line 3."]
    requests = agent.model.requests
    assert len(requests) == 3
    assert requests[1][-2] == ("model", ["The fix is "])
    assert requests[2][-2] == ("model", ["The fix is in utils.py, "])
    for request in requests[1:]:
        assert request[-1][0] == "user" and _mentions(request, CONTINUE) == 1
    assert loopguard.run_usage("coder") == (3 * 40, 3 * 10)
    assert loopguard.run_state("coder") == "completed"
    # the session keeps the joined answer, not the parts nor our prompts
    session = asyncio.run(
        runner.session_service.get_session(app_name="tests", user_id="user", session_id="session-1")
    )
    texts = [p.text for e in session.events for p in e.content.parts or () if p.text]
    assert "The fix is in utils.py, line 3." in texts
    assert not any(CONTINUE in t for t in texts)


def test_an_empty_give_up_after_a_failing_tool_is_re_prompted(make_loopguard: Any) -> None:
    loopguard = make_loopguard(mode="enforce")

    def policy(contents: list[types.Content]) -> Reply:
        if _seen(contents, REPROMPT):
            return "pytest is missing, so I could not run the tests"
        if _seen(contents, "command not found") or any(
            p.function_response for c in contents for p in c.parts or ()
        ):
            return None  # gives up without a word
        return [("bash", {"command": "pytest -q"})]

    agent = _agent(policy)
    events = run(new_runner(agent))

    assert final_text(events) == "pytest is missing, so I could not run the tests"
    requests = agent.model.requests
    assert len(requests) == 3
    _assert_carried_once_after_the_responses(requests, REPROMPT, 2)
    assert not any(e.error_code for e in events)  # the empty answer never reached the flow
    assert loopguard.run_state("coder") == "completed"


def test_observe_mode_changes_no_request(make_loopguard: Any) -> None:
    make_loopguard(mode="observe", read_only_loop_threshold=3, shell_failure_threshold=2)
    parts = iter([Cut("The fix is "), "in utils.py."])

    def policy(contents: list[types.Content]) -> Reply:
        if len(contents) < 12:
            return _reads(contents)
        return next(parts)

    agent = _agent(policy)
    events = run(new_runner(agent))

    assert final_text(events) == "The fix is "  # ADK ends the turn on the truncated answer
    for request in agent.model.requests:
        assert not any(_mentions(request, text) for text in (NUDGE, CONTINUE, REPROMPT))
    assert len(agent.model.requests) == 7
