"""kit.tool_gate: one wrapper gates a framework's plain and coroutine tool methods."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import wrapt
from opentelemetry import trace

from otel_loopguard import LoopGuardInterrupt, agent_run
from otel_loopguard.kit import CHECK_AROUND, CHECK_BEFORE, GatedCall, tool_gate_wrapper


class Tool:
    """A framework's tool: ``run`` and ``arun`` take the model's arguments and return the
    framework's outcome object (a failure the framework caught is a value, not an error)."""

    def __init__(self, name: str, executed: list[Any], fail: bool = False) -> None:
        self.name = name
        self.executed = executed
        self.fail = fail

    def run(self, arguments: dict[str, Any], call_id: str | None = None) -> dict[str, Any]:
        return self._execute(arguments)

    async def arun(self, arguments: dict[str, Any], call_id: str | None = None) -> dict[str, Any]:
        await asyncio.sleep(0)
        return self._execute(arguments)

    def _execute(self, arguments: dict[str, Any]) -> dict[str, Any]:
        self.executed.append(arguments)
        if self.fail:
            raise ValueError("403 permission denied")
        return {"content": f"result of {arguments}", "is_error": False}


def _read(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> GatedCall | None:
    if instance.name == "unknown-shape":
        return None
    return GatedCall(instance.name, args[0], call_id=kwargs.get("call_id"), agent="researcher")


def _report(gate: Any, outcome: Any, call: GatedCall) -> None:
    if outcome["is_error"]:
        gate.set_error("ToolError", outcome["content"])
    else:
        gate.set_result(outcome["content"])


@pytest.fixture
def tool_class(make_kit: Any) -> Any:
    """A fresh tool class whose ``run`` / ``arun`` are wrapped by one ``tool_gate``."""

    class Wrapped(Tool):
        pass

    kit = make_kit(mode="enforce", max_tool_calls=2)
    wrapper = tool_gate_wrapper(kit.tracer, _read, _report, package="tests")
    wrapt.wrap_function_wrapper(Wrapped, "run", wrapper)
    wrapt.wrap_function_wrapper(Wrapped, "arun", wrapper)
    Wrapped.kit = kit  # type: ignore[attr-defined]
    return Wrapped


def _framework_loop(call: Any, times: int) -> list[Any]:
    """What frameworks do: catch ``Exception`` around a tool and hand it to the model."""
    seen = []
    for index in range(times):
        try:
            seen.append(call({"q": index}))
        except Exception as exc:
            seen.append(exc)
    return seen


def test_a_stopped_run_never_runs_the_tool_and_every_span_ends_once(tool_class: Any) -> None:
    executed: list[Any] = []
    tool = tool_class("search", executed)
    kit = tool_class.kit
    with pytest.raises(LoopGuardInterrupt) as raised:
        with agent_run("researcher", tracer=kit.tracer):
            _framework_loop(tool.run, 5)
    assert executed == [{"q": 0}, {"q": 1}]  # the third call was vetoed unexecuted
    assert raised.value.decision.detectors == ("budget",)
    spans = kit.spans("execute_tool search")
    assert len(spans) == 3 and len({span.context.span_id for span in spans}) == 3
    vetoed = spans[-1]
    assert vetoed.attributes["error.type"] == "LoopGuardInterrupt"
    assert vetoed.attributes["gen_ai.agent.name"] == "researcher"


def test_the_coroutine_method_is_gated_by_the_same_wrapper(tool_class: Any) -> None:
    executed: list[Any] = []
    tool = tool_class("search", executed)
    kit = tool_class.kit

    async def agent() -> list[Any]:
        outcomes = []
        with agent_run("researcher", tracer=kit.tracer):
            for index in range(5):
                try:
                    outcomes.append(await tool.arun({"q": index}))
                except Exception as exc:  # the framework's handler: not ours to pass
                    outcomes.append(exc)
        return outcomes

    with pytest.raises(LoopGuardInterrupt):
        asyncio.run(agent())
    assert executed == [{"q": 0}, {"q": 1}]
    assert len(kit.spans("execute_tool search")) == 3


def test_inside_a_coroutine_the_span_is_current_and_the_callers_context_is_untouched(
    make_kit: Any,
) -> None:
    kit = make_kit()
    seen: list[Any] = []

    async def body(arguments: dict[str, Any]) -> str:
        seen.append(trace.get_current_span())
        await asyncio.sleep(0)
        return "ok"

    gated = wrapt.FunctionWrapper(
        body,
        tool_gate_wrapper(kit.tracer, lambda i, a, k: GatedCall("lookup", a[0]), package="tests"),
    )

    async def main() -> Any:
        with agent_run("a", tracer=kit.tracer):
            # coroutines made first and awaited together: each opens its span in its task
            await asyncio.gather(gated({"n": 1}), gated({"n": 2}))
            return trace.get_current_span()

    caller_span = asyncio.run(main())
    spans = kit.spans("execute_tool lookup")
    assert len(spans) == 2
    assert {span.context.span_id for span in spans} == {s.get_span_context().span_id for s in seen}
    (agent,) = kit.spans("invoke_agent a")
    assert caller_span.get_span_context().span_id == agent.context.span_id
    assert all(span.parent.span_id == agent.context.span_id for span in spans)


def test_a_failure_returned_as_a_value_is_the_calls_error(tool_class: Any) -> None:
    kit = tool_class.kit
    tool = tool_class("search", [])

    def failing(arguments: dict[str, Any], call_id: str | None = None) -> dict[str, Any]:
        return {"content": "403 permission denied", "is_error": True}

    with agent_run("a", tracer=kit.tracer):
        wrapper = tool_gate_wrapper(kit.tracer, _read, _report, package="tests")
        outcome = wrapper(failing, tool, ({"q": 1},), {"call_id": "call-1"})
    assert outcome["is_error"] is True  # the framework's value goes on unchanged
    (span,) = kit.spans("execute_tool search")
    assert span.attributes["error.type"] == "ToolError"
    assert span.attributes["gen_ai.tool.call.id"] == "call-1"
    assert span.status.status_code.name == "ERROR"


def test_a_raised_error_reaches_the_framework_and_report_error_sees_it_first(
    make_kit: Any,
) -> None:
    kit = make_kit()
    errors: list[Exception] = []

    def report_error(gate: Any, error: Exception, call: GatedCall) -> None:
        errors.append(error)
        gate.set_error("PermissionError", "the tool's own error")

    wrapper = tool_gate_wrapper(
        kit.tracer, _read, _report, package="tests", report_error=report_error
    )
    tool = Tool("search", [], fail=True)
    with pytest.raises(ValueError, match="403"):
        wrapper(tool.run, tool, ({"q": 1},), {})
    assert [str(error) for error in errors] == ["403 permission denied"]
    (span,) = kit.spans("execute_tool search")
    assert span.attributes["error.type"] == "PermissionError"


def test_an_unknown_call_shape_runs_untouched(make_kit: Any) -> None:
    kit = make_kit()
    tool = Tool("unknown-shape", [])
    wrapper = tool_gate_wrapper(kit.tracer, _read, package="tests")
    assert wrapper(tool.run, tool, ({"q": 1},), {})["is_error"] is False
    assert asyncio.run(wrapper(tool.arun, tool, ({"q": 1},), {}))["is_error"] is False
    assert kit.spans() == []


@pytest.mark.parametrize("check", [CHECK_BEFORE, CHECK_AROUND])
def test_check_only_calls_make_no_span_but_a_stopped_run_does_not_call(
    make_kit: Any, check: Any
) -> None:
    kit = make_kit(mode="enforce", max_tool_calls=1)
    executed: list[Any] = []
    tool = Tool("search", executed)
    checked = tool_gate_wrapper(kit.tracer, lambda i, a, k: check, package="tests")
    gated = tool_gate_wrapper(kit.tracer, _read, package="tests")
    with pytest.raises(LoopGuardInterrupt):
        with agent_run("a", tracer=kit.tracer):
            checked(tool.run, tool, ({"q": "before"},), {})
            gated(tool.run, tool, ({"q": 1},), {})
            with pytest.raises(LoopGuardInterrupt):
                gated(tool.run, tool, ({"q": 2},), {})  # vetoed: the run is stopped
            asyncio.run(checked(tool.arun, tool, ({"q": "after"},), {}))
    assert executed == [{"q": "before"}, {"q": 1}]
    assert len(kit.spans("execute_tool search")) == 2


def test_check_around_checks_after_the_call_too(make_kit: Any) -> None:
    kit = make_kit(mode="enforce", max_tool_calls=1)
    gated = tool_gate_wrapper(kit.tracer, _read, package="tests")
    tool = Tool("search", [])

    def stopping_call(arguments: dict[str, Any]) -> str:
        # the framework's own span would be fed here; a gated call stands in for it
        with pytest.raises(LoopGuardInterrupt):
            gated(tool.run, tool, ({"q": 1},), {})
            gated(tool.run, tool, ({"q": 2},), {})
        return "done"

    for check, raises in ((CHECK_BEFORE, False), (CHECK_AROUND, True)):
        with agent_run("a", tracer=kit.tracer):
            checked = tool_gate_wrapper(kit.tracer, lambda i, a, k, c=check: c, package="tests")
            if raises:
                with pytest.raises(LoopGuardInterrupt):
                    checked(stopping_call, None, ({},), {})
            else:
                assert checked(stopping_call, None, ({},), {}) == "done"


def test_json_arguments_and_function_tool_attributes() -> None:
    from otel_loopguard.kit import function_tool_attributes, json_arguments

    assert json_arguments('{"b": 1, "a": [2]}') == {"b": 1, "a": [2]}
    assert json_arguments("not json") == "not json" and json_arguments({"a": 1}) == {"a": 1}
    assert json_arguments("", blank=dict) == {} and json_arguments("  ") == "  "
    assert json_arguments('{"a": 1}', max_chars=3) == '{"a": 1}'  # too long: as it came
    assert json_arguments("[" * 100_000) == "[" * 100_000  # too deep for the parser
    assert function_tool_attributes("d" * 2000, "planner") == {
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "d" * 1024,
        "gen_ai.agent.name": "planner",
    }
    assert function_tool_attributes(None, None) == {"gen_ai.tool.type": "function"}


def test_record_outcome_tells_a_result_from_a_returned_failure(make_kit: Any) -> None:
    from otel_loopguard.kit import record_outcome

    kit = make_kit()
    with kit.guard.tool_call(kit.tracer, "ok", {}) as gate:
        assert record_outcome(gate, "content", None) is True
    with kit.guard.tool_call(kit.tracer, "failed", {}) as gate:
        assert record_outcome(gate, "content", "403 denied", "ToolException") is False
    (ok,) = kit.spans("execute_tool ok")
    (failed,) = kit.spans("execute_tool failed")
    assert "error.type" not in ok.attributes
    assert failed.attributes["error.type"] == "ToolException"
