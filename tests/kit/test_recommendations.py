"""kit.recommendations: a replan's recommendation reaches the run's next model request once,
then the ladder stops a loop that goes on; observe mode and the off switch change nothing."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

import pytest

from otel_loopguard import LoopGuardInterrupt, agent_run, get_guard, tool_span
from otel_loopguard.kit import ModelCall, model_turn_wrapper

NUDGE = "Act on what you found"


class ChatModel:
    """A framework's model step over a message list: it records every request it gets and
    answers from ``policy(messages)``: ``("read", path)``, ``("write", path)``, ``("answer",
    text)``, or ``("cut", text)`` (an answer cut at the token limit)."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.requests: list[list[dict[str, str]]] = []

    def step(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        self.requests.append(list(messages))
        kind, value = self.policy(messages)
        if kind in ("read", "write"):
            return {"tool": f"{kind}_file", "path": value, "text": "", "finish": "tool_calls"}
        if kind == "cut":
            return {"tool": None, "text": value, "finish": "length"}
        return {"tool": None, "text": value, "finish": "stop"}

    async def astep(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        await asyncio.sleep(0)
        return self.step(messages)


def _read(call: ModelCall) -> dict[str, Any]:
    answer = call.result
    tool = answer["tool"]
    return {
        "model": "scripted",
        "finish_reason": answer["finish"],
        "empty": not answer["text"] and tool is None,
        "requested_tool_calls": [(tool, {"path": answer["path"]})] if tool else [],
        "output_tokens": 5,
    }


def _deliver(call: ModelCall, message: str) -> bool:
    (messages,) = call.args
    call.args = ([*messages, {"role": "user", "content": message}],)
    return True


def _again(call: ModelCall, detector: str) -> Any:
    (messages,) = call.args
    return ([*messages, {"role": "assistant", "content": call.result["text"]}],), {}


def _join(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    return {**second, "text": first["text"] + second["text"]}


def _agent(model: ChatModel, steps: int, *, asynchronous: bool = False, **hooks: Any) -> list[str]:
    """A hand-written agent loop through the kit's model-turn wrapper; returns tool paths run."""
    wrapper = model_turn_wrapper(_read, package="tests", deliver=_deliver, **hooks)
    ran: list[str] = []

    async def loop() -> None:
        messages = [{"role": "user", "content": "fix the bug"}]
        with agent_run("coder", tracer=get_guard().tracer()):
            for _ in range(steps):
                if asynchronous:
                    answer = await wrapper(model.astep, model, (messages,), {})
                else:
                    answer = wrapper(model.step, model, (messages,), {})
                if answer["tool"] is None:
                    messages.append({"role": "assistant", "content": answer["text"]})
                    return
                with tool_span(answer["tool"], {"path": answer["path"]}):
                    ran.append(answer["path"])
                messages.append({"role": "tool", "content": f"contents of {answer['path']}"})

    asyncio.run(loop())
    return ran


def _mentions(request: list[dict[str, str]], text: str) -> int:
    return sum(text in message["content"] for message in request)


def _reads_until_nudged(messages: list[dict[str, str]]) -> tuple[str, str]:
    if any(NUDGE in m["content"] for m in messages):
        return ("answer", "the fix is in utils.py")
    return ("read", f"f{len(messages)}.py")


def _reads_forever(messages: list[dict[str, str]]) -> tuple[str, str]:
    return ("read", f"f{len(messages)}.py")


@pytest.mark.parametrize("asynchronous", [False, True])
def test_the_nudge_reaches_the_next_request_once_and_a_model_that_listens_completes(
    make_kit: Any, asynchronous: bool
) -> None:
    kit = make_kit(mode="enforce", read_only_loop_threshold=3)
    model = ChatModel(_reads_until_nudged)
    ran = _agent(model, 20, asynchronous=asynchronous)
    carrying = [i for i, r in enumerate(model.requests) if _mentions(r, NUDGE)]
    assert carrying == [len(model.requests) - 1]  # the last request, and no other
    assert _mentions(model.requests[-1], NUDGE) == 1
    assert model.requests[-1][-1]["role"] == "user"  # after the tool result it answers
    assert len(ran) == 4  # the 3rd read-only step is judged when the 4th turn answers
    (agent,) = kit.spans("invoke_agent coder")
    assert agent.attributes["loopguard.run.state"] == "completed"
    delivered = [
        e for s in kit.spans() for e in s.events if e.name == "loopguard.recommendation.delivered"
    ]
    assert [e.attributes["loopguard.detectors"] for e in delivered] == [("read_only_loop",)]


def test_a_model_that_ignores_the_nudge_is_stopped_saying_the_nudge_did_not_help(
    make_kit: Any,
) -> None:
    kit = make_kit(mode="enforce", read_only_loop_threshold=3)
    model = ChatModel(_reads_forever)
    with pytest.raises(LoopGuardInterrupt) as raised:
        _agent(model, 30)
    decision = raised.value.decision
    assert "the nudge did not help" in decision.reason
    assert decision.detectors == ("read_only_loop",)
    # nudged after 3 read-only steps, stopped when the 6th completed: no 7th read
    assert len(model.requests) == 7
    assert sum(_mentions(r, NUDGE) for r in model.requests) == 1
    (agent,) = kit.spans("invoke_agent coder")
    assert agent.attributes["loopguard.run.state"] == "stopped"


def test_observe_mode_never_changes_a_request(make_kit: Any) -> None:
    make_kit(mode="observe", read_only_loop_threshold=3)
    model = ChatModel(_reads_forever)
    _agent(model, 12)
    assert not any(_mentions(r, NUDGE) for r in model.requests)


def test_delivery_off_keeps_requests_as_they_are_and_stops_still_interrupt(make_kit: Any) -> None:
    make_kit(mode="enforce", read_only_loop_threshold=3, deliver_recommendations=False)
    model = ChatModel(_reads_forever)
    _agent(model, 12)  # no nudge, so no ladder: a replan never stops
    assert not any(_mentions(r, NUDGE) for r in model.requests)
    with pytest.raises(LoopGuardInterrupt):  # a budget still stops
        make_kit(mode="enforce", deliver_recommendations=False, max_steps=2)
        _agent(ChatModel(_reads_forever), 5)


def test_a_deliver_that_fails_leaves_the_request_untouched_and_is_counted(
    make_kit: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    kit = make_kit(mode="enforce", read_only_loop_threshold=3)
    counted = kit.internal_errors(monkeypatch)

    def broken(call: ModelCall, message: str) -> bool:
        call.args = ("half-built",)
        raise KeyError("messages")

    wrapper = model_turn_wrapper(_read, package="tests", deliver=broken)
    model = ChatModel(_reads_forever)
    messages = [{"role": "user", "content": "go"}]
    with agent_run("coder"):
        for _ in range(6):
            answer = wrapper(model.step, model, (messages,), {})
            with tool_span(answer["tool"], {"path": answer["path"]}):
                pass
            messages.append({"role": "tool", "content": "x"})
    assert counted == ["tests.deliver"]
    assert all(isinstance(r, list) for r in model.requests)  # never "half-built"
    assert not any(_mentions(r, NUDGE) for r in model.requests)


def test_two_concurrent_runs_never_receive_each_others_message(make_kit: Any) -> None:
    make_kit(mode="enforce", read_only_loop_threshold=3)
    reader = ChatModel(_reads_forever)
    writer = ChatModel(lambda messages: ("write", f"w{len(messages)}.py"))
    barrier = threading.Barrier(2)

    def run(model: ChatModel) -> None:
        barrier.wait()
        with contextlib.suppress(LoopGuardInterrupt):
            _agent(model, 5)

    threads = [threading.Thread(target=run, args=(m,)) for m in (reader, writer)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(_mentions(r, NUDGE) for r in reader.requests) == 1
    assert not any(_mentions(r, NUDGE) for r in writer.requests)


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_truncated_answer_is_continued_and_joined_up_to_the_recoveries(
    make_kit: Any, asynchronous: bool
) -> None:
    make_kit(mode="enforce", max_tokens_recoveries=2)
    parts = iter(["The fix is ", "in utils.py, ", "line 3."])

    def cut_twice(messages: list[dict[str, str]]) -> tuple[str, str]:
        text = next(parts)
        return ("answer" if text.endswith(".") else "cut", text)

    model = ChatModel(cut_twice)
    wrapper = model_turn_wrapper(_read, package="tests", deliver=_deliver, again=_again, join=_join)

    async def loop() -> Any:
        with agent_run("writer"):
            if asynchronous:
                return await wrapper(model.astep, model, ([{"role": "user", "content": "q"}],), {})
            return wrapper(model.step, model, ([{"role": "user", "content": "q"}],), {})

    answer = asyncio.run(loop())
    assert answer["text"] == "The fix is in utils.py, line 3."
    assert len(model.requests) == 3
    second = model.requests[1]
    assert second[-2] == {"role": "assistant", "content": "The fix is "}
    assert "cut off at the output token limit" in second[-1]["content"]
    assert all(_mentions(r, "cut off at the output token limit") <= 1 for r in model.requests)


def test_truncations_past_the_recoveries_end_the_turn_normally(make_kit: Any) -> None:
    make_kit(mode="enforce", max_tokens_recoveries=1)
    model = ChatModel(lambda messages: ("cut", "more "))
    wrapper = model_turn_wrapper(_read, package="tests", deliver=_deliver, again=_again, join=_join)
    with agent_run("writer"):
        answer = wrapper(model.step, model, ([{"role": "user", "content": "q"}],), {})
    assert len(model.requests) == 2  # one continuation, then the answer is taken as it is
    assert answer["text"] == "more more "


def test_nothing_waiting_costs_one_test_per_call(make_kit: Any) -> None:
    """The common case: no replan anywhere, so no run is resolved for delivery."""
    kit = make_kit(mode="enforce")
    calls = []
    original = kit.guard.resolve_run

    def counting(*args: Any) -> Any:
        calls.append(1)
        return original(*args)

    kit.guard.resolve_run = counting  # type: ignore[method-assign]
    assert not get_guard().deliveries.any_waiting()
    model = ChatModel(lambda messages: ("answer", "done"))
    resolved = []
    for hooks in ({}, {"deliver": _deliver, "again": _again, "join": _join}):
        wrapper = model_turn_wrapper(_read, package="tests", **hooks)
        with agent_run("a"):
            before = len(calls)
            wrapper(model.step, model, ([{"role": "user", "content": "q"}],), {})
            resolved.append(len(calls) - before)
    # the pre-flight check and the report resolve the run; delivery adds no lookup
    assert resolved[0] == resolved[1]
