"""Failures recorded as span errors (issue 18, points 2 and 3), through the real SDK.

Instrumentations mark a failed tool call as a span error (status ERROR, ``error.type``, an
``exception`` event) instead of returning the error text. The error is then the call's
outcome: the same call failing with the same message again and again is a loop whatever
the error class; distinct calls failing, a permanent-sounding type name, and a permanent
failure that comes back after much successful work are not.
"""

from __future__ import annotations

import json

from opentelemetry.trace import Status, StatusCode
from scripted_runs import exchange, failing
from sdk_stack import AGENT, SdkStack, sdk_stack

from otel_loopguard.engine.config import LoopGuardConfig
from otel_loopguard.engine.decisions import Action
from otel_loopguard.engine.monitor import Monitor


class ToolFailed(Exception):
    """What a tool raised; the instrumentation records it on the span."""


def failing_tool_span(stack: SdkStack, tool: str, arguments: dict, message: str) -> None:
    """An ``execute_tool`` span that failed the way instrumentations record it: the
    exception recorded (an ``exception`` event), ``error.type`` its class, status ERROR."""
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool,
        "gen_ai.tool.call.arguments": json.dumps(arguments),
    }
    try:
        with stack.tracer.start_as_current_span(f"execute_tool {tool}", attributes=attributes):
            raise ToolFailed(message)
    except ToolFailed:
        pass  # the SDK recorded it, set the status and ended the span


def ok_tool_span(stack: SdkStack, tool: str, arguments: dict, result: str) -> None:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool,
        "gen_ai.tool.call.arguments": json.dumps(arguments),
        "gen_ai.tool.call.result": result,
    }
    with stack.tracer.start_as_current_span(f"execute_tool {tool}", attributes=attributes):
        pass


def actions(stack: SdkStack) -> list[str]:
    return [d["loopguard.action"] for d in stack.decisions()]


def test_the_same_call_failing_as_a_span_error_with_the_same_message_stops() -> None:
    stack = sdk_stack()
    with stack.tracer.start_as_current_span("invoke_agent writer", attributes=AGENT):
        for _ in range(4):
            failing_tool_span(stack, "apply_patch", {"patch": "@@ -1 +1 @@"}, "hunk 1 FAILED")
    stack.provider.shutdown()
    assert "stop" in actions(stack)
    stop = next(d for d in stack.decisions() if d["loopguard.action"] == "stop")
    assert "no_progress" in stop["loopguard.detectors"]
    (run,) = stack.spans("loopguard.run")
    assert run.attributes["loopguard.run.state"] == "stopped"


def test_distinct_edits_failing_as_span_errors_never_stop() -> None:
    stack = sdk_stack()
    with stack.tracer.start_as_current_span("invoke_agent writer", attributes=AGENT):
        for i in range(10):
            failing_tool_span(stack, "edit_file", {"path": "a.py", "new": f"x = {i}"}, "rejected")
    stack.provider.shutdown()
    assert "stop" not in actions(stack)
    assert "pause" not in actions(stack)


def test_a_token_refresh_and_much_work_between_two_401s_is_no_stop() -> None:
    stack = sdk_stack()
    with stack.tracer.start_as_current_span("invoke_agent writer", attributes=AGENT):
        failing_tool_span(stack, "get_repo", {"name": "app"}, "401 Unauthorized")
        ok_tool_span(stack, "refresh_token", {}, "refreshed")
        for i in range(50):
            ok_tool_span(stack, "read_issue", {"n": i}, f"issue {i}")
        failing_tool_span(stack, "get_repo", {"name": "app"}, "401 Unauthorized")
        ok_tool_span(stack, "refresh_token", {}, "refreshed")
        ok_tool_span(stack, "get_repo", {"name": "app"}, "repo app")
    stack.provider.shutdown()
    # (the third get_repo may warn as a repetition; nothing more)
    assert set(actions(stack)) <= {"warn"}


def _monitor_actions(events: list) -> list[Action]:
    monitor = Monitor(LoopGuardConfig())
    return [monitor.observe(event).action for event in events]


def test_monitor_retryable_failures_pause_then_stop_when_they_persist() -> None:
    """30+ PAUSE decisions and never a STOP was the bug."""
    decided = _monitor_actions(failing("fetch", {"url": "/a"}, "Read timed out") * 12)
    assert Action.PAUSE in decided
    assert decided.index(Action.STOP) == 2 * 8 - 1  # the 8th failure's error event


def test_monitor_a_retry_that_succeeds_is_no_stop() -> None:
    events = failing("fetch", {"url": "/a"}, "Read timed out") * 3
    events += exchange("fetch", {"url": "/a"}, "page")
    assert max(_monitor_actions(events)) < Action.PAUSE


def error_typed_span(stack: SdkStack, tool: str, arguments: dict, result: str) -> None:
    """A failed tool span that records only ``error.type``, an ERROR status without a
    description, and the error text the tool returned as its result."""
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool,
        "gen_ai.tool.call.arguments": json.dumps(arguments),
        "gen_ai.tool.call.result": result,
        "error.type": "ToolError",
    }
    with stack.tracer.start_as_current_span(f"execute_tool {tool}", attributes=attributes) as span:
        span.set_status(Status(StatusCode.ERROR))


def test_the_result_of_an_error_typed_span_is_its_error_message() -> None:
    """Different failures of one call are different outcomes (a test run getting closer is
    not stuck); the same failure's wording classifies it (no such file: permanent)."""
    stack = sdk_stack()
    with stack.tracer.start_as_current_span("invoke_agent writer", attributes=AGENT):
        for failed in (3, 2, 1):
            error_typed_span(stack, "run_tests", {"k": "calc"}, f"{failed} of 7 tests failed")
    stack.provider.shutdown()
    assert "stop" not in actions(stack)

    stack = sdk_stack()
    with stack.tracer.start_as_current_span("invoke_agent writer", attributes=AGENT):
        for _ in range(2):
            error_typed_span(stack, "read_file", {"path": "a.py"}, "No such file: a.py")
    stack.provider.shutdown()
    (stop,) = [d for d in stack.decisions() if d["loopguard.action"] == "stop"]
    assert stop["loopguard.detectors"] == ("permanent_failure",)
