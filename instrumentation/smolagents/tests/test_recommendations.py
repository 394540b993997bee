"""Recommendations reach the model: a replan's message is in the next step's request, once.

A scripted ``Model`` records each request the way smolagents' API models send it
(``Model._prepare_completion_kwargs``: the role conversions and the merging of
consecutive same-role messages every API model applies), and answers from a policy that
sees those messages, so a model can change course when it reads the recommendation.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from smolagents import CodeAgent, Model, ToolCallingAgent, tool
from smolagents.models import (
    ChatMessage,
    ChatMessageStreamDelta,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    ChatMessageToolCallStreamDelta,
    MessageRole,
)
from smolagents.monitoring import LogLevel, TokenUsage

from otel_loopguard.engine.decisions import LoopGuardInterrupt

READ_ONLY = "Act on what you found"
SHELL = "The shell command keeps failing"
GIVE_UP = "You ended your turn without completing the task"
CUT = "cut off at the output token limit"

Request = list[dict[str, Any]]
#: what a step answers: ("tool", name, arguments), ("text", content, finish_reason),
#: or ("code", snippet)
Answer = tuple[Any, ...]


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content or ())


def mentions(request: Request, text: str) -> int:
    return sum(_text(message).count(text) for message in request)


def said(request: Request, text: str) -> bool:
    return mentions(request, text) > 0


class RecordingModel(Model):
    """A model answering ``policy(request, n)`` (``n``: the call's number), recording every
    request as the API models send it; ``generate_stream`` streams the same answer."""

    def __init__(self, policy: Callable[[Request, int], Answer]) -> None:
        super().__init__(model_id="scripted-recording")
        self.policy = policy
        self.requests: list[Request] = []

    def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
        kwargs.pop("response_format", None)
        request = self._prepare_completion_kwargs(messages, **kwargs)["messages"]
        self.requests.append(request)
        answer = self.policy(request, len(self.requests))
        usage = TokenUsage(input_tokens=20, output_tokens=5)
        if answer[0] == "tool":
            call = ChatMessageToolCall(
                id=f"call_{len(self.requests)}",
                type="function",
                function=ChatMessageToolCallFunction(name=answer[1], arguments=answer[2]),
            )
            return ChatMessage(
                role=MessageRole.ASSISTANT, content=None, tool_calls=[call], token_usage=usage
            )
        if answer[0] == "code":
            content, finish = f"Thought: next step.\n<code>\n{answer[1]}\n</code>", "stop"
        else:
            content, finish = answer[1], answer[2]
        raw = {"choices": [{"index": 0, "finish_reason": finish}]}  # the OpenAI shape
        return ChatMessage(role=MessageRole.ASSISTANT, content=content, raw=raw, token_usage=usage)

    def generate_stream(self, messages: list[Any], **kwargs: Any) -> Iterator[Any]:
        message = self.generate(messages, **kwargs)
        calls = [
            ChatMessageToolCallStreamDelta(
                index=i,
                id=call.id,
                type=call.type,
                function=ChatMessageToolCallFunction(
                    name=call.function.name, arguments=json.dumps(call.function.arguments)
                ),
            )
            for i, call in enumerate(message.tool_calls or ())
        ]
        yield ChatMessageStreamDelta(content=message.content, tool_calls=calls or None)
        yield ChatMessageStreamDelta(token_usage=message.token_usage)


def _tools() -> list[Any]:
    @tool
    def read_file(path: str) -> str:
        """Read a file.

        Args:
            path: the file
        """
        return f"contents of {path}"

    @tool
    def bash(command: str) -> str:
        """Run a shell command.

        Args:
            command: the command line
        """
        program = command.split()[0]
        return f"bash: {program}: command not found"

    @tool
    def deploy(target: str) -> str:
        """Deploy the service.

        Args:
            target: where to
        """
        raise RuntimeError(f"deploy to {target} failed: connection refused")

    return [read_file, bash, deploy]


def tool_agent(policy: Callable[[Request, int], Answer], **options: Any) -> ToolCallingAgent:
    return ToolCallingAgent(
        tools=_tools(),
        model=RecordingModel(policy),
        max_steps=options.pop("max_steps", 12),
        verbosity_level=LogLevel.OFF,
        **options,
    )


def code_agent(policy: Callable[[Request, int], Answer], **options: Any) -> CodeAgent:
    return CodeAgent(
        tools=_tools(),
        model=RecordingModel(policy),
        max_steps=options.pop("max_steps", 12),
        verbosity_level=LogLevel.OFF,
        **options,
    )


def reads_until(nudge: str | None) -> Callable[[Request, int], Answer]:
    """Reads a new file each step; answers once the last message says ``nudge``."""

    def policy(request: Request, n: int) -> Answer:
        if nudge is not None and said(request[-1:], nudge):
            return ("tool", "final_answer", {"answer": "the fix is in utils.py"})
        return ("tool", "read_file", {"path": f"f{n}.py"})

    return policy


def _carrying(model: RecordingModel, text: str) -> list[int]:
    return [i for i, request in enumerate(model.requests) if said(request, text)]


def _run(agent: Any, *, stream: bool = False) -> Any:
    if stream:
        steps = list(agent.run("fix the bug", stream=True))
        return steps[-1].output
    return agent.run("fix the bug")


def _delivered(lg: Any) -> list[tuple[str, ...]]:
    return [
        tuple(event.attributes["loopguard.detectors"])
        for span in lg.spans()
        for event in span.events
        if event.name == "loopguard.recommendation.delivered"
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["run", "run-stream"])
def test_read_only_nudge_reaches_the_next_request_once_and_a_listening_model_completes(
    make_loopguard, stream
):
    lg = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    agent = tool_agent(reads_until(READ_ONLY))

    answer = _run(agent, stream=stream)

    assert answer == "the fix is in utils.py"
    model = agent.model
    assert _carrying(model, READ_ONLY) == [len(model.requests) - 1]  # the last one only
    last = model.requests[-1]
    assert mentions(last, READ_ONLY) == 1
    # after the last observation, in the same user turn (the API never gets two in a row)
    final = _text(last[-1])
    assert last[-1]["role"] == "user"
    assert final.index(READ_ONLY) > final.rindex("contents of f")
    assert all(a["role"] != b["role"] for a, b in itertools.pairwise(last))
    (run,) = lg.spans("invoke_agent")
    assert run.attributes["loopguard.run.state"] == "completed"
    assert _delivered(lg) == [("read_only_loop",)]


def test_a_model_that_ignores_the_nudge_is_stopped_saying_the_nudge_did_not_help(make_loopguard):
    lg = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    agent = tool_agent(reads_until(None), max_steps=20)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        agent.run("fix the bug")

    assert "the nudge did not help" in stopped.value.decision.reason
    assert stopped.value.decision.detectors == ("read_only_loop",)
    assert len(_carrying(agent.model, READ_ONLY)) == 1
    assert len(agent.model.requests) < 20
    (run,) = lg.spans("invoke_agent")
    assert run.attributes["loopguard.run.state"] == "stopped"


def test_the_nudge_is_not_kept_in_the_agents_memory(make_loopguard):
    make_loopguard(mode="enforce", read_only_loop_threshold=3)

    def policy(request: Request, n: int) -> Answer:
        if said(request, READ_ONLY):
            return ("tool", "bash", {"command": "make fix"})  # acts: the streak ends
        if any(said([m], "command not found") for m in request):
            return ("tool", "final_answer", {"answer": "done"})
        return ("tool", "read_file", {"path": f"f{n}.py"})

    agent = tool_agent(policy)
    agent.run("fix the bug")

    nudged = _carrying(agent.model, READ_ONLY)
    assert len(nudged) == 1 and nudged[0] < len(agent.model.requests) - 1
    # smolagents logs the request on its step (model_input_messages); the history it
    # rebuilds the next requests from does not have it
    assert not any(READ_ONLY in str(m.content) for m in agent.write_memory_to_messages())


def test_shell_hint_reaches_the_next_request(make_loopguard):
    lg = make_loopguard(mode="enforce", shell_failure_threshold=2)

    def policy(request: Request, n: int) -> Answer:
        if said(request[-1:], SHELL):
            return ("tool", "final_answer", {"answer": "ripgrep is not installed"})
        return ("tool", "bash", {"command": f"rg pattern{n} src"})

    agent = tool_agent(policy)

    assert agent.run("find the pattern") == "ripgrep is not installed"
    assert _carrying(agent.model, SHELL) == [2]  # after the second failure, once
    assert mentions(agent.model.requests[2], SHELL) == 1
    assert agent.model.requests[2][-1]["role"] == "user"
    assert lg.spans("invoke_agent")[0].attributes["loopguard.run.state"] == "completed"


@pytest.mark.parametrize("stream_outputs", [False, True], ids=["generate", "generate-stream"])
def test_an_empty_give_up_after_a_failing_tool_is_re_prompted(make_loopguard, stream_outputs):
    lg = make_loopguard(mode="enforce")

    def policy(request: Request, n: int) -> Answer:
        if said(request[-1:], GIVE_UP):
            return ("tool", "final_answer", {"answer": "deploy failed: connection refused"})
        if n == 1:
            return ("tool", "deploy", {"target": "prod"})
        return ("text", "", "stop")  # an empty end of turn

    agent = tool_agent(policy, stream_outputs=stream_outputs)

    assert agent.run("deploy the service") == "deploy failed: connection refused"
    model = agent.model
    assert len(model.requests) == 3
    assert _carrying(model, GIVE_UP) == [2]
    assert mentions(model.requests[2], GIVE_UP) == 1
    assert model.requests[2][-1]["role"] == "user"
    assert _delivered(lg) == [("premature_end",)]
    assert lg.spans("invoke_agent")[0].attributes["loopguard.run.state"] == "completed"


def test_a_truncated_answer_gets_the_continuation_prompt_in_the_next_step(make_loopguard):
    """smolagents fails a step whose answer was cut off and asks again: no re-ask needed,
    the next step's request carries the continuation prompt."""
    make_loopguard(mode="enforce")

    def policy(request: Request, n: int) -> Answer:
        if said(request[-1:], CUT):
            return ("tool", "final_answer", {"answer": "complete"})
        return ("text", "I will now call the search tool with the argu", "length")

    agent = tool_agent(policy)

    assert agent.run("find it") == "complete"
    assert _carrying(agent.model, CUT) == [1]
    assert mentions(agent.model.requests[1], CUT) == 1


def test_code_agent_truncated_code_gets_the_continuation_prompt(make_loopguard):
    make_loopguard(mode="enforce")

    def policy(request: Request, n: int) -> Answer:
        if said(request[-1:], CUT):
            return ("code", "final_answer('complete')")
        return ("text", "Thought: read it.\n<code>\nprint(read_file(path='a.p", "length")

    agent = code_agent(policy)

    assert agent.run("find it") == "complete"
    assert _carrying(agent.model, CUT) == [1]
    assert agent.model.requests[1][-1]["role"] == "user"


@pytest.mark.parametrize(
    "options", [{}, {"stream_outputs": True}], ids=["generate", "generate-stream"]
)
def test_code_agent_read_only_nudge_and_ignoring_it_stops(make_loopguard, options):
    lg = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    files = itertools.count()

    def listens(request: Request, n: int) -> Answer:
        if said(request[-1:], READ_ONLY):
            return ("code", "final_answer('fixed')")
        return ("code", f"print(read_file(path='f{next(files)}.py'))")

    agent = code_agent(listens, **options)
    assert agent.run("fix the bug") == "fixed"
    assert _carrying(agent.model, READ_ONLY) == [len(agent.model.requests) - 1]
    assert lg.spans("invoke_agent")[0].attributes["loopguard.run.state"] == "completed"

    lg = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    ignoring = code_agent(
        lambda request, n: ("code", f"print(read_file(path='g{n}.py'))"), max_steps=20, **options
    )
    with pytest.raises(LoopGuardInterrupt) as stopped:
        ignoring.run("fix the bug")
    assert "the nudge did not help" in stopped.value.decision.reason
    assert len(_carrying(ignoring.model, READ_ONLY)) == 1


def test_observe_mode_leaves_every_request_as_without_the_plugin(make_loopguard):
    lg = make_loopguard(mode="observe", read_only_loop_threshold=3, shell_failure_threshold=2)

    def policy(request: Request, n: int) -> Answer:
        if n % 2:
            return ("tool", "read_file", {"path": f"f{n}.py"})
        return ("tool", "bash", {"command": f"rg x{n}"})

    baseline = tool_agent(policy, max_steps=8)
    lg.baseline(lambda: baseline.run("fix the bug"))
    observed = tool_agent(policy, max_steps=8)
    observed.run("fix the bug")

    assert observed.model.requests == baseline.model.requests
    assert not any(said(r, READ_ONLY) or said(r, SHELL) for r in observed.model.requests)
    assert any(d.action.value == "replan" for d, _ in lg.decided)
