"""Delivery through LiteLLM: in enforce mode a replan's recommendation reaches the run's next
request LiteLLM sends, once, where the API allows it; a truncated or empty answer is asked
again inside the caller's ``completion``; observe mode sends every request as it was built."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import litellm
import pytest
from agent_loop import MODEL
from conftest import TRACER
from otel_loopguard_testing import CHAT_TOOL_SCHEMAS
from otel_loopguard_testing.scripted_openai import ScriptedAPI, Turn
from otel_loopguard_testing.third_party import serve_fixture

from otel_loopguard.engine.decisions import LoopGuardInterrupt
from otel_loopguard.guard import get_guard

NUDGE = "Act on what you found"
CONTINUE = "cut off at the output token limit"
REPROMPT = "You ended your turn without completing the task"
SHELL = "The shell command keeps failing with"
DELIVERED = "loopguard.recommendation.delivered"
TOOLS = [
    *CHAT_TOOL_SCHEMAS,
    *(
        {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
        for name in ("read_file", "write_file", "bash")
    ),
]


class ListeningAPI(ScriptedAPI):
    """The scripted API answering each request from ``answer(body)`` (what it was sent): a
    model that may change course on what it reads."""

    def __init__(self, answer: Callable[[dict[str, Any]], Turn]) -> None:
        super().__init__([])
        self.answer = answer

    def handle(self, request: Any) -> Any:
        self.turns = [self.answer(json.loads(request.content or b"{}"))]
        return super().handle(request)


#: ``listen(answer)``: a :class:`ListeningAPI` on a loopback port (``.base``)
listen = serve_fixture("listen", ListeningAPI)


def _texts(body: dict[str, Any]) -> list[str]:
    items = body.get("messages", body.get("input"))
    if isinstance(items, str):
        return [items]
    return [str(item.get("content") or item.get("output") or "") for item in items]


def _mentions(body: dict[str, Any], text: str) -> int:
    return sum(text in t for t in _texts(body))


def _carrying(api: ScriptedAPI, text: str) -> list[int]:
    return [i for i, body in enumerate(api.requests) if _mentions(body, text)]


def assert_valid_chat_position(body: dict[str, Any], text: str) -> None:
    """``text`` once, as the last message, a user message; every assistant tool call is
    answered by its tool message right after the assistant message."""
    messages = body["messages"]
    assert _mentions(body, text) == 1
    assert messages[-1]["role"] == "user" and text in messages[-1]["content"]
    for i, message in enumerate(messages):
        calls = [c["id"] for c in message.get("tool_calls") or ()]
        if calls:
            answers = messages[i + 1 : i + 1 + len(calls)]
            assert [m.get("tool_call_id") for m in answers] == calls


def _delivered_events(lg: Any) -> list[tuple[str, Any]]:
    return [
        (span.name, event.attributes["loopguard.detectors"])
        for span in lg.spans()
        for event in span.events
        if event.name == DELIVERED
    ]


def run_tool(name: str, arguments: dict[str, Any], call_id: str) -> str:
    """Reads return a file's text, ``bash`` fails as a missing program, ``fetch`` is
    forbidden."""
    try:
        with get_guard().tool_call(TRACER, name, arguments, call_id=call_id) as call:
            if name == "fetch":
                raise PermissionError("403 forbidden")
            result: Any = f"contents of {arguments.get('path')}"
            if name == "bash":
                result = {"exit_code": 127, "stderr": "bash: pytest: command not found"}
            call.set_result(result)
        return json.dumps(result) if isinstance(result, dict) else result
    except Exception as exc:
        return f"error: {exc}"


def loop_step(messages: list[dict[str, Any]], response: Any) -> bool:
    """Append the answer, run its tools; False when it ends the turn. The loop never adds a
    message of its own: delivery does."""
    message = response.choices[0].message
    messages.append(message.model_dump(exclude_none=True))
    if not message.tool_calls:
        return False
    for call in message.tool_calls:
        output = run_tool(call.function.name, json.loads(call.function.arguments), call.id)
        messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    return True


def _request(api: Any, **options: Any) -> dict[str, Any]:
    return {"tools": TOOLS, "api_base": api.base, "api_key": "test-key", **options}


def run_loop(api: Any, *, turns: int = 12, **options: Any) -> Any:
    """A hand-written agent loop over ``litellm.completion`` (the model and messages given
    by position, as LiteLLM's signature allows); returns the last answer."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
    with get_guard().agent_run(TRACER, "coder"):
        for _ in range(turns):
            response = litellm.completion(MODEL, messages, **_request(api, **options))
            if not loop_step(messages, response):
                return response
    return None


async def run_async_loop(api: Any, *, turns: int = 12) -> Any:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
    with get_guard().agent_run(TRACER, "coder"):
        for _ in range(turns):
            response = await litellm.acompletion(model=MODEL, messages=messages, **_request(api))
            if not loop_step(messages, response):
                return response
    return None


def reads_until_nudged(body: dict[str, Any]) -> Turn:
    if _mentions(body, NUDGE):
        return Turn(tool_calls=[("write_file", {"path": "fix.py"})])
    if any(m.get("role") == "tool" and "fix.py" in str(m.get("content")) for m in body["messages"]):
        return Turn(text="Fixed.")
    return Turn(tool_calls=[("read_file", {"path": f"f{len(body['messages'])}.py"})])


def reads_forever(body: dict[str, Any]) -> Turn:
    items = body.get("messages", body.get("input"))
    return Turn(tool_calls=[("read_file", {"path": f"f{len(items)}.py"})])


# -- what the next request carries, and where -------------------------------------------------


def test_the_read_only_nudge_reaches_the_next_request_once_and_the_model_that_listens_completes(
    make_loopguard, listen
):
    lg = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    api = listen(reads_until_nudged)

    answer = run_loop(api)

    assert answer.choices[0].message.content == "Fixed."
    assert _carrying(api, NUDGE) == [4]
    assert_valid_chat_position(api.requests[4], NUDGE)
    assert lg.run_state("coder") == "completed"
    chats = lg.spans("chat ")
    assert _delivered_events(lg) == [(chats[4].name, ("read_only_loop",))]


def test_a_model_that_ignores_the_nudge_is_stopped_saying_the_nudge_did_not_help(
    make_loopguard, listen
):
    lg = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    api = listen(reads_forever)

    with pytest.raises(LoopGuardInterrupt) as stopped:
        run_loop(api, turns=20)

    assert "the nudge did not help" in stopped.value.decision.reason
    assert _carrying(api, NUDGE) == [4]
    assert len(api.requests) == 7
    assert lg.run_state("coder") == "stopped"


def test_the_shell_hint_follows_the_failing_command_results(make_loopguard, listen):
    lg = make_loopguard(mode="enforce", shell_failure_threshold=2)

    def model(body: dict[str, Any]) -> Turn:
        if _mentions(body, SHELL):
            return Turn(text="pytest is not installed here; install it first.")
        return Turn(tool_calls=[("bash", {"command": "pytest"})])

    api = listen(model)
    answer = run_loop(api)

    assert answer.choices[0].message.content.startswith("pytest is not installed")
    assert _carrying(api, SHELL) == [2]
    assert_valid_chat_position(api.requests[2], SHELL)
    assert lg.run_state("coder") == "completed"


def test_a_truncated_answer_is_continued_inside_completion_and_joined(make_loopguard, serve):
    lg = make_loopguard(mode="enforce")
    api = serve(
        [
            Turn(text="The fix: first ", finish_reason="length", input_tokens=10, output_tokens=5),
            Turn(text="change utils.py.", input_tokens=20, output_tokens=4),
        ]
    )

    answer = run_loop(api, max_tokens=5)

    assert isinstance(answer, litellm.ModelResponse)
    assert answer.choices[0].message.content == "The fix: first change utils.py."
    assert answer.choices[0].finish_reason == "stop"
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (30, 9)
    assert len(api.requests) == 2
    assert api.requests[1]["messages"][-2] == {"role": "assistant", "content": "The fix: first "}
    assert_valid_chat_position(api.requests[1], CONTINUE)
    assert lg.run_state("coder") == "completed"
    chats = lg.spans("chat ")
    assert _delivered_events(lg) == [(chats[1].name, ("truncation",))]


def test_an_empty_give_up_after_a_failing_tool_is_asked_again_inside_completion(
    make_loopguard, listen
):
    lg = make_loopguard(mode="enforce")

    def model(body: dict[str, Any]) -> Turn:
        if _mentions(body, REPROMPT):
            return Turn(text="I could not open the page: access is forbidden.")
        if any(m.get("role") == "tool" for m in body["messages"]):
            return Turn(text="")
        return Turn(tool_calls=[("fetch", {"url": "https://example.test/pricing"})])

    api = listen(model)
    answer = run_loop(api)

    assert answer.choices[0].message.content == "I could not open the page: access is forbidden."
    assert len(api.requests) == 3
    assert api.requests[2]["messages"][:-1] == api.requests[1]["messages"]
    assert_valid_chat_position(api.requests[2], REPROMPT)
    assert lg.run_state("coder") == "completed"


# -- async and streamed ------------------------------------------------------------------------


def test_acompletion_delivers_and_re_asks_too(make_loopguard, listen):
    lg = make_loopguard(mode="enforce", read_only_loop_threshold=3)

    def model(body: dict[str, Any]) -> Turn:
        if _mentions(body, CONTINUE):
            return Turn(text="done.")
        if _mentions(body, NUDGE):
            return Turn(text="The fix is ", finish_reason="length")
        return reads_forever(body)

    api = listen(model)
    answer = asyncio.run(run_async_loop(api))

    assert answer.choices[0].message.content == "The fix is done."
    assert _carrying(api, NUDGE) == [4]
    assert_valid_chat_position(api.requests[4], NUDGE)
    assert_valid_chat_position(api.requests[5], CONTINUE)
    assert lg.run_state("coder") == "completed"


def test_a_streamed_request_carries_the_nudge(make_loopguard, listen):
    lg = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    api = listen(reads_forever)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]

    with pytest.raises(LoopGuardInterrupt) as stopped:
        with get_guard().agent_run(TRACER, "coder"):
            for _ in range(20):
                chunks = list(
                    litellm.completion(model=MODEL, messages=messages, stream=True, **_request(api))
                )
                message = litellm.stream_chunk_builder(chunks).choices[0].message
                loop_step(messages, litellm.ModelResponse(choices=[{"message": message}]))

    assert "the nudge did not help" in stopped.value.decision.reason
    assert _carrying(api, NUDGE) == [4]
    assert api.requests[4]["stream"] is True
    assert_valid_chat_position(api.requests[4], NUDGE)
    assert lg.run_state("coder") == "stopped"


def test_responses_input_carries_the_nudge_after_the_function_call_outputs(make_loopguard, listen):
    lg = make_loopguard(mode="enforce", read_only_loop_threshold=3)
    api = listen(reads_forever)
    items: list[Any] = [{"role": "user", "content": "Fix the failing test."}]

    with pytest.raises(LoopGuardInterrupt) as stopped:
        with get_guard().agent_run(TRACER, "coder"):
            for _ in range(20):
                response = litellm.responses(
                    input=items, model=MODEL, api_base=api.base, api_key="k"
                )
                for item in response.output:
                    if getattr(item, "type", None) != "function_call":
                        continue
                    items.append(
                        {
                            "type": "function_call",
                            "call_id": item.call_id,
                            "name": item.name,
                            "arguments": item.arguments,
                        }
                    )
                    output = run_tool(item.name, json.loads(item.arguments), item.call_id)
                    result = {"call_id": item.call_id, "output": output}
                    items.append({"type": "function_call_output", **result})

    assert "the nudge did not help" in stopped.value.decision.reason
    assert _carrying(api, NUDGE) == [4]
    carried = api.requests[4]["input"]
    assert _mentions(api.requests[4], NUDGE) == 1
    assert carried[-1]["role"] == "user" and NUDGE in str(carried[-1]["content"])
    assert carried[-2]["type"] == "function_call_output"
    assert not any(NUDGE in str(item) for item in items)  # the caller's list as it was
    assert lg.run_state("coder") == "stopped"


# -- observe mode and the off switch ------------------------------------------------------------


@pytest.mark.parametrize(
    "settings",
    [{"mode": "observe"}, {"mode": "enforce", "deliver_recommendations": False}],
    ids=["observe", "delivery-off"],
)
def test_without_delivery_every_request_goes_as_the_loop_built_it(make_loopguard, listen, settings):
    lg = make_loopguard(read_only_loop_threshold=3, **settings)
    api = listen(reads_forever)

    run_loop(api, turns=8)

    assert len(api.requests) == 8
    for i, body in enumerate(api.requests):
        assert len(body["messages"]) == 1 + 2 * i
        assert [m["role"] for m in body["messages"]].count("user") == 1
    assert any(d.action.value == "replan" for d, _ in lg.decided)
    assert _delivered_events(lg) == []


def test_observe_mode_never_re_asks_a_truncated_answer(make_loopguard, serve):
    make_loopguard(mode="observe")
    api = serve([Turn(text="part one ", finish_reason="length"), Turn(text="part two")])

    answer = run_loop(api)

    assert answer.choices[0].message.content == "part one "
    assert len(api.requests) == 1
