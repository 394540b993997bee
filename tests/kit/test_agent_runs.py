"""kit.agent_runs: one wrapper makes a framework's plain and coroutine run methods runs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from otel_loopguard import RunEndState, current_run
from otel_loopguard.kit import agent_run_wrapper


def _describe(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return ("planner", kwargs.get("conversation_id"))


def test_a_plain_and_a_coroutine_run_each_end_once_with_their_outcome(make_kit: Any) -> None:
    kit = make_kit()
    seen: list[Any] = []

    def run(task: str, conversation_id: str | None = None) -> str:
        seen.append(current_run())
        return f"done {task}"

    async def arun(task: str, conversation_id: str | None = None) -> str:
        await asyncio.sleep(0)
        seen.append(current_run())
        raise RuntimeError("the framework failed")

    wrapper = agent_run_wrapper(kit.tracer, _describe, package="tests")
    assert wrapper(run, None, ("t",), {"conversation_id": "c-1"}) == "done t"
    with pytest.raises(RuntimeError):
        asyncio.run(wrapper(arun, None, ("t",), {}))
    assert current_run() is None
    assert seen[0].run_id == "c-1" and seen[1] is not None
    completed, failed = kit.spans("invoke_agent planner")
    assert completed.attributes["loopguard.run.state"] == "completed"
    assert completed.attributes["gen_ai.conversation.id"] == "c-1"
    assert failed.attributes["loopguard.run.state"] == "error"


def test_on_result_sets_the_end_state_the_framework_reports(make_kit: Any) -> None:
    kit = make_kit()

    def on_result(handle: Any, result: Any) -> None:
        if result == "gave up":
            handle.set_state(RunEndState.MAX_STEPS)

    wrapper = agent_run_wrapper(kit.tracer, _describe, package="tests", on_result=on_result)
    wrapper(lambda: "gave up", None, (), {})
    (span,) = kit.spans("invoke_agent planner")
    assert span.attributes["loopguard.run.state"] == "max_steps"
