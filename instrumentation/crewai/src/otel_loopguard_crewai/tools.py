"""The tool gate on CrewAI's native function-calling path (the ReAct text path is
:mod:`.react_path`'s).

``AgentExecutor._execute_single_native_tool_call`` sees every call the model asked for,
also those the tool cache answers without running the tool: the model still made the same
call and got the same answer, which is the loop. Failures come back as a ``ToolFailure``
in the result, not as an exception.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard.kit.scoped_call import Wrapper
from otel_loopguard.kit.tool_gate import GatedCall, tool_gate_wrapper
from otel_loopguard_crewai.model_turns import parse_arguments
from otel_loopguard_crewai.runs import agent_name


def report_failure(call: Any, failure: Any) -> None:
    """A ``ToolFailure`` (returned, not raised) becomes the call's error."""
    if failure is None:
        return
    reason = getattr(failure, "reason", None)
    reason_name = getattr(reason, "value", None) or str(reason or "tool_failure")
    # for a raised exception crewai keeps its class name in `code`
    error_type = getattr(failure, "code", None) if reason_name == "exception" else None
    call.set_error(error_type or reason_name, getattr(failure, "message", None))


def native_tool_call_wrapper(tracer: Tracer) -> Wrapper:
    """Wrap ``AgentExecutor._execute_single_native_tool_call(tool_call, ...)``."""
    return tool_gate_wrapper(
        tracer, _read_native_call, _report_native_outcome, package="crewai", asynchronous=False
    )


def _tool_call_info(tool_call: Any) -> tuple[Any, str, Any] | None:
    """(call id, name, raw arguments) as CrewAI reads them from any provider's shape;
    ``None`` (call passed through unobserved) if this CrewAI version reads them otherwise."""
    try:
        from crewai.utilities.agent_utils import extract_tool_call_info

        return extract_tool_call_info(tool_call)
    except Exception:
        return None


def _read_native_call(
    instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> GatedCall | None:
    info = _tool_call_info(args[0] if args else kwargs.get("tool_call"))
    if info is None:  # crewai answers malformed calls itself; nothing ran
        return None
    call_id, name, raw_arguments = info
    return GatedCall(
        name,
        parse_arguments(raw_arguments),
        call_id=str(call_id) if call_id else None,
        agent=agent_name(getattr(instance, "agent", None)),
    )


def _report_native_outcome(call: Any, outcome: Any, gated: GatedCall) -> None:
    if isinstance(outcome, dict):
        report_failure(call, outcome.get("tool_failure"))
        call.set_result(outcome.get("result"))
