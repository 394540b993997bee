"""kit.model_turn: one wrapper checks, opens and reports a model turn, plain or async."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from otel_loopguard import LoopGuardInterrupt, agent_run, current_run, get_guard
from otel_loopguard.kit import ModelCall, in_a_run, model_turn_wrapper


class Model:
    """A framework's agent step: asks the model once, returns the framework's answer."""

    def __init__(self, calls: list[str], below: bool = False, tokens: int = 10) -> None:
        self.calls = calls
        self.below = below  # a model SDK's instrumentation under the step reports the turn
        self.tokens = tokens

    def step(self, prompt: str) -> dict[str, Any]:
        self.calls.append(prompt)
        if self.below:
            get_guard().observe_llm_response(model="sdk-model", output_tokens=self.tokens)
        return {"text": f"answer to {prompt}", "tokens": self.tokens}

    async def astep(self, prompt: str) -> dict[str, Any]:
        await asyncio.sleep(0)
        return self.step(prompt)


def _read(call: ModelCall) -> dict[str, Any]:
    return {
        "model": "framework-model",
        "output_tokens": call.result["tokens"],
        "empty": not call.result["text"],
    }


def _steps(kit: Any) -> int:
    handle = current_run()
    assert handle is not None
    return kit.steps(handle.run_id)


@pytest.mark.parametrize("asynchronous", [False, True])
def test_each_turn_counts_once_and_the_call_after_max_steps_is_never_made(
    make_kit: Any, asynchronous: bool
) -> None:
    kit = make_kit(mode="enforce", max_steps=2)
    model = Model([])
    wrapper = model_turn_wrapper(_read, package="tests")
    counted = []

    async def agent() -> None:
        with agent_run("a", tracer=kit.tracer):
            for index in range(5):
                if asynchronous:  # the coroutine flavour is the same wrapper
                    answer = await wrapper(model.astep, model, (f"p{index}",), {})
                else:
                    answer = wrapper(model.step, model, (f"p{index}",), {})
                assert answer["text"] == f"answer to p{index}"
                counted.append(_steps(kit))

    with pytest.raises(LoopGuardInterrupt) as raised:
        asyncio.run(agent())
    assert counted == [1, 2]
    assert model.calls == ["p0", "p1"]  # the third call was stopped before it was made
    assert raised.value.decision.end_state.value == "max_steps"


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_turn_a_layer_below_reported_is_not_reported_again(
    make_kit: Any, asynchronous: bool
) -> None:
    kit = make_kit()
    model = Model([], below=True)
    read: list[ModelCall] = []
    wrapper = model_turn_wrapper(lambda call: read.append(call) or _read(call), package="tests")

    async def agent() -> list[int]:
        counted = []
        with agent_run("a", tracer=kit.tracer):
            for index in range(3):
                if asynchronous:
                    await wrapper(model.astep, model, (f"p{index}",), {})
                else:
                    wrapper(model.step, model, (f"p{index}",), {})
                counted.append(_steps(kit))
        return counted

    assert asyncio.run(agent()) == [1, 2, 3]
    assert read == []  # never asked: the SDK's report was the turn's


def test_outside_a_run_the_call_is_left_alone(make_kit: Any) -> None:
    make_kit(mode="enforce", max_steps=1)
    calls: list[str] = []
    model = Model(calls)
    wrapper = model_turn_wrapper(_read, package="tests", applies=in_a_run)
    for index in range(3):
        assert wrapper(model.step, model, (f"p{index}",), {})["text"] == f"answer to p{index}"
    assert asyncio.run(wrapper(model.astep, model, ("async",), {}))["tokens"] == 10
    assert calls == ["p0", "p1", "p2", "async"]


def test_before_and_first_run_in_order_and_read_sees_before(make_kit: Any) -> None:
    kit = make_kit()
    order: list[str] = []
    model = Model([])

    def before(call: ModelCall) -> int:
        order.append("before")
        return 41

    def read(call: ModelCall) -> dict[str, Any]:
        order.append("read")
        assert call.before == 41 and call.instance is model and call.args == ("p",)
        return {"output_tokens": call.before + 1}

    wrapper = model_turn_wrapper(
        read, package="tests", before=before, first=lambda: order.append("first")
    )
    with agent_run("a", tracer=kit.tracer):
        wrapper(model.step, model, ("p",), {})
        assert _steps(kit) == 1
    assert order == ["first", "before", "read"]


class FrameworkStop(Exception):
    """A framework that carries only its own exception type out of a step."""


def test_the_interrupt_can_be_the_frameworks_own_exception(make_kit: Any) -> None:
    kit = make_kit(mode="enforce", token_budget=15)
    model = Model([], tokens=20)
    wrapper = model_turn_wrapper(
        _read, package="tests", interrupt=lambda stop: FrameworkStop(stop.decision)
    )
    with agent_run("a", tracer=kit.tracer):
        with pytest.raises(FrameworkStop):  # the report's STOP
            wrapper(model.step, model, ("p0",), {})
        with pytest.raises(FrameworkStop):  # the next call's pre-flight STOP
            wrapper(model.step, model, ("p1",), {})
    assert model.calls == ["p0"]


def test_a_failed_call_is_reported_without_raising_when_asked(make_kit: Any) -> None:
    kit = make_kit(mode="enforce", token_budget=15)

    def failing_step(prompt: str) -> Any:
        raise ConnectionError("the stream broke after the answer was committed")

    seen: list[BaseException | None] = []

    def read(call: ModelCall) -> dict[str, Any]:
        seen.append(call.error)
        return {"output_tokens": 20}

    wrapper = model_turn_wrapper(read, package="tests", report_failed=True)
    with pytest.raises(LoopGuardInterrupt):
        with agent_run("a", tracer=kit.tracer):
            with pytest.raises(ConnectionError):  # the caller's error goes on, not a STOP
                wrapper(failing_step, None, ("p",), {})
            assert _steps(kit) == 1
            wrapper(failing_step, None, ("p",), {})  # the run is stopped: vetoed
    assert len(seen) == 1 and isinstance(seen[0], ConnectionError)
