"""The kit's wrappers never break the framework for our bookkeeping: a hook of the package
that raises is counted in ``loopguard.internal_errors`` as ``<package>.<place>``, and the
framework's call runs and returns as without us."""

from __future__ import annotations

from typing import Any

import pytest

from otel_loopguard import RunEndState, agent_run
from otel_loopguard.kit import (
    GatedCall,
    agent_run_wrapper,
    model_turn_wrapper,
    tool_gate_wrapper,
)


def _broken(*args: Any) -> Any:
    raise KeyError("a shape this package does not know")


def _call(kit: Any, wrapper: Any) -> Any:
    with agent_run("a", tracer=kit.tracer):
        return wrapper(lambda value: value * 2, None, (21,), {})


WRAPPERS = {
    "tool call unread": (
        lambda kit: tool_gate_wrapper(kit.tracer, _broken, package="pkg"),
        ["pkg.tool_call"],
    ),
    "tool outcome unreported": (
        lambda kit: tool_gate_wrapper(
            kit.tracer, lambda i, a, k: GatedCall("search", a), _broken, package="pkg"
        ),
        ["pkg.tool_outcome"],
    ),
    "model answer unread": (
        lambda kit: model_turn_wrapper(_broken, package="pkg"),
        ["pkg.model_turn"],
    ),
    "run undescribed": (
        lambda kit: agent_run_wrapper(kit.tracer, _broken, package="pkg"),
        ["pkg.run"],
    ),
    "run result unread": (
        lambda kit: agent_run_wrapper(
            kit.tracer, lambda i, a, k: ("planner", None), package="pkg", on_result=_broken
        ),
        ["pkg.run"],
    ),
}


@pytest.mark.parametrize("case", sorted(WRAPPERS))
def test_a_failing_hook_is_counted_and_the_call_goes_on(
    make_kit: Any, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    make_wrapper, where = WRAPPERS[case]
    kit = make_kit()
    counted = kit.internal_errors(monkeypatch)
    assert _call(kit, make_wrapper(kit)) == 42
    assert counted == where
    assert {span.attributes.get("loopguard.run.state") for span in kit.spans("invoke_agent a")} == {
        RunEndState.COMPLETED.value
    }


def test_an_unknown_shape_runs_untouched(make_kit: Any) -> None:
    kit = make_kit()
    for wrapper in (
        tool_gate_wrapper(kit.tracer, lambda i, a, k: None, package="pkg"),
        agent_run_wrapper(kit.tracer, lambda i, a, k: None, package="pkg"),
        model_turn_wrapper(_broken, package="pkg", applies=lambda i, a, k: False),
    ):
        assert wrapper(len, None, ("ab",), {}) == 2
    assert kit.spans() == []
