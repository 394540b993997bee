"""Delivering a replan's recommendation into a real CrewAI crew's next model request.

The model is the suite's ``ScriptedLLM`` (a real ``BaseLLM``) recording the messages each
call is sent and answering from what it reads, so a model that "listens" changes course
when the nudge is in its request. The truncation re-ask needs a finish reason, which only a
model SDK below CrewAI reports: there the model is CrewAI's own OpenAI provider over the
real OpenAI SDK, against the scripted OpenAI API, and the serialised requests are checked.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from crewai import LLM, Agent, Crew, Task
from crewai.tools import tool
from otel_loopguard_openai import OpenAIInstrumentor
from otel_loopguard_testing.scripted_openai import ScriptedAPI, Turn
from scripted_crew import Move, ScriptedLLM

from otel_loopguard.engine.decisions import LoopGuardInterrupt

NUDGE = "Act on what you found"
SHELL_HINT = "The shell command keeps failing with"
CONTINUATION = "cut off at the output token limit"

Policy = Callable[[list[dict[str, Any]]], Move]


class ListeningLLM(ScriptedLLM):
    """A ``ScriptedLLM`` that keeps a copy of every request's messages and answers from
    ``policy(messages)``."""

    policy: Any = None
    requests: Any = None

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        self.requests.append(copy.deepcopy(list(messages)))
        self.script = lambda n: self.policy(self.requests[-1])
        return super().call(messages, *args, **kwargs)


def _crew(policy: Policy, *, native: bool = True, max_iter: int = 15) -> tuple[Crew, Any]:
    """A coder agent with ``read_file`` (read-only) and ``bash`` tools."""

    @tool("read_file")
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return f"contents of {path}"

    @tool("bash")
    def bash(command: str) -> str:
        """Run a shell command."""
        return f"bash: {command.split()[0]}: command not found"

    llm = ListeningLLM(model="scripted", policy=policy, requests=[], native=native)
    agent = Agent(
        role="coder",
        goal="fix the bug",
        backstory="a careful engineer",
        llm=llm,
        tools=[read_file, bash],
        max_iter=max_iter,
        verbose=False,
    )
    task = Task(description="Fix the bug in utils.py", expected_output="a summary", agent=agent)
    return Crew(agents=[agent], tasks=[task], verbose=False), llm


def _mentions(request: list[dict[str, Any]], text: str) -> int:
    return sum(text in str(message.get("content")) for message in request)


def _carrying(requests: list[list[dict[str, Any]]], text: str) -> list[int]:
    return [i for i, request in enumerate(requests) if _mentions(request, text)]


def _reads_until(text: str) -> Policy:
    def policy(messages: list[dict[str, Any]]) -> Move:
        if _mentions(messages, text):
            return ("answer", "the fix is in utils.py", None)
        return ("tool", "read_file", {"path": f"f{len(messages)}.py"})

    return policy


def _reads_forever(messages: list[dict[str, Any]]) -> Move:
    return ("tool", "read_file", {"path": f"f{len(messages)}.py"})


def _reads_then_answers(messages: list[dict[str, Any]]) -> Move:
    """Eight reads whatever it is told, then the answer (CrewAI's own ``max_iter`` end
    asks the model once more for a text, which a reader would not give)."""
    if sum(message["role"] == "tool" for message in messages) >= 8:
        return ("answer", "read enough", None)
    return _reads_forever(messages)


def _assert_nudged_once_at_the_end(requests: list[list[dict[str, Any]]], text: str) -> None:
    """One request carries ``text``, once, as its last message: a user message after the
    tool result it follows (the executor's history never keeps it)."""
    (carrying,) = _carrying(requests, text)
    request = requests[carrying]
    assert _mentions(request, text) == 1
    assert request[-1]["role"] == "user"
    assert text in request[-1]["content"]
    assert request[-2]["role"] in ("tool", "user", "assistant")
    assert not any(_mentions(r, text) for r in requests[carrying + 1 :])


def _run_state(harness: Any) -> str:
    (run,) = harness.spans("invoke_agent coder")
    return str(run.attributes["loopguard.run.state"])


@pytest.mark.parametrize("native", [True, False], ids=["function_calling", "react"])
def test_the_read_only_nudge_reaches_the_next_request_once_and_a_listening_model_completes(
    make_loopguard: Any, native: bool
) -> None:
    harness = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    crew, llm = _crew(_reads_until(NUDGE), native=native)

    result = crew.kickoff()

    assert result.raw == "the fix is in utils.py"
    _assert_nudged_once_at_the_end(llm.requests, NUDGE)
    assert _carrying(llm.requests, NUDGE) == [len(llm.requests) - 1]
    if native:  # the nudge follows the tool message answering the last tool call
        assert llm.requests[-1][-2]["role"] == "tool"
    assert _run_state(harness) == "completed"
    events = [e for s in harness.spans() for e in s.events]
    delivered = [e for e in events if e.name == "loopguard.recommendation.delivered"]
    assert [e.attributes["loopguard.detectors"] for e in delivered] == [("read_only_loop",)]


def test_a_model_that_ignores_the_nudge_is_stopped_saying_the_nudge_did_not_help(
    make_loopguard: Any,
) -> None:
    harness = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    crew, llm = _crew(_reads_forever)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        crew.kickoff()

    assert "the nudge did not help" in stopped.value.decision.reason
    assert stopped.value.decision.detectors == ("read_only_loop",)
    assert len(_carrying(llm.requests, NUDGE)) == 1
    assert _run_state(harness) == "stopped"


def test_the_shell_hint_reaches_the_next_request_once(make_loopguard: Any) -> None:
    harness = make_loopguard(mode="enforce", shell_failure_threshold=2)

    def policy(messages: list[dict[str, Any]]) -> Move:
        if _mentions(messages, SHELL_HINT):
            return ("answer", "pytest is not installed here", None)
        return ("tool", "bash", {"command": f"pytestx -k case{len(messages)}"})

    crew, llm = _crew(policy)
    result = crew.kickoff()

    assert result.raw == "pytest is not installed here"
    _assert_nudged_once_at_the_end(llm.requests, SHELL_HINT)
    assert llm.requests[-1][-2]["role"] == "tool"
    assert _run_state(harness) == "completed"


def test_kickoff_async_delivers_the_nudge(make_loopguard: Any) -> None:
    harness = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    crew, llm = _crew(_reads_until(NUDGE))

    result = asyncio.run(crew.kickoff_async())

    assert result.raw == "the fix is in utils.py"
    _assert_nudged_once_at_the_end(llm.requests, NUDGE)
    assert _run_state(harness) == "completed"


def test_a_streamed_crew_delivers_the_nudge(make_loopguard: Any) -> None:
    harness = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    crew, llm = _crew(_reads_until(NUDGE))
    crew.stream = True

    stream = crew.kickoff()
    for _chunk in stream:
        pass

    assert stream.result.raw == "the fix is in utils.py"
    _assert_nudged_once_at_the_end(llm.requests, NUDGE)
    assert _run_state(harness) == "completed"
    assert harness.open_spans() == []


def test_observe_mode_never_changes_a_request(make_loopguard: Any) -> None:
    make_loopguard(mode="observe", read_only_loop_threshold=3, shell_failure_threshold=2)
    crew, llm = _crew(_reads_then_answers)

    assert crew.kickoff().raw == "read enough"

    assert len(llm.requests) == 9
    assert not _carrying(llm.requests, NUDGE)
    assert all(request[-1]["role"] == "tool" for request in llm.requests[1:])


def test_delivery_off_changes_no_request(make_loopguard: Any) -> None:
    make_loopguard(mode="enforce", read_only_loop_threshold=3, deliver_recommendations=False)
    crew, llm = _crew(_reads_then_answers)

    assert crew.kickoff().raw == "read enough"  # no nudge, so no ladder: no stop

    assert len(llm.requests) == 9
    assert not _carrying(llm.requests, NUDGE)


# -- a truncated answer, reported by the OpenAI SDK package below CrewAI -------------------


def _openai_crew(api: ScriptedAPI, base_url: str) -> Crew:
    llm = LLM(model="gpt-4o-mini", base_url=base_url, api_key="test-key", max_retries=0)
    agent = Agent(
        role="coder",
        goal="fix the bug",
        backstory="a careful engineer",
        llm=llm,
        max_iter=5,
        verbose=False,
    )
    task = Task(description="Fix the bug in utils.py", expected_output="a summary", agent=agent)
    return Crew(agents=[agent], tasks=[task], verbose=False)


def _with_openai_below(harness: Any, api: ScriptedAPI, run: Callable[[Crew], Any]) -> Any:
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=harness.provider)
    base_url, stop = api.serve()
    try:
        return run(_openai_crew(api, base_url))
    finally:
        stop()
        instrumentor.uninstrument()


def _chat_messages(api: ScriptedAPI) -> list[list[dict[str, Any]]]:
    return [json.loads(json.dumps(r["messages"])) for r in api.requests if "messages" in r]


def test_a_truncated_final_answer_is_continued_and_the_crew_gets_the_joined_text(
    make_loopguard: Any,
) -> None:
    harness = make_loopguard(mode="enforce")
    api = ScriptedAPI(
        [
            Turn(text="The bug is an off-by-one ", finish_reason="length"),
            Turn(text="in utils.py, line 3."),
        ],
        model="gpt-4o-mini",
    )

    result = _with_openai_below(harness, api, lambda crew: crew.kickoff())

    assert result.raw == "The bug is an off-by-one in utils.py, line 3."
    first, second = _chat_messages(api)
    assert second[: len(first)] == first  # the same request, then:
    assert second[-2] == {"role": "assistant", "content": "The bug is an off-by-one "}
    assert second[-1]["role"] == "user"
    assert CONTINUATION in second[-1]["content"]
    assert _mentions(second, CONTINUATION) == 1
    assert _run_state(harness) == "completed"


def test_observe_mode_leaves_a_truncated_answer_as_it_is(make_loopguard: Any) -> None:
    harness = make_loopguard(mode="observe")
    api = ScriptedAPI(
        [Turn(text="The bug is an off-by-one ", finish_reason="length")], model="gpt-4o-mini"
    )

    result = _with_openai_below(harness, api, lambda crew: crew.kickoff())

    assert result.raw == "The bug is an off-by-one "
    assert len(_chat_messages(api)) == 1
