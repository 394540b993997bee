"""The tool gate around every function call an ADK ``LlmAgent`` runs, and its handoffs.

Why this hook point (google-adk 2.13): the flow runs each function call of a model turn in
a task of its own through one module function,
``google.adk.flows.llm_flows.tools._caller._execute_single_prepared_call(invocation_context,
prepared_call, agent, *, tool_runner)``: the before-tool callbacks, the tool (a
``FunctionTool``, an ``AgentTool``, an MCP tool, ``transfer_to_agent``, or a name the model
made up, which ADK answers with a "not found" error), the after-tool callbacks, and the
response event. Its callers look it up in the module when they call it, so wrapping the
module attribute reaches them all (the live flow imports it by name and is not covered).
ADK's own ``execute_tool`` span is opened inside it, so it nests in our gate span and the
span processor does not count the execution a second time.

ADK catches ``Exception`` around the tool only to offer it to the ``on_tool_error``
callbacks, and re-raises it when none answers; our ``LoopGuardInterrupt`` is a
``BaseException`` and passes straight through, cancelling the calls of the same turn still
running (see :mod:`.runs`). So the gate is used as designed: a vetoed call raises before the
tool runs, a STOP decided on a call's result raises once the call has run.

Handoffs: ADK's one transfer tool, ``transfer_to_agent(agent_name=...)``, sets
``actions.transfer_to_agent`` on its response event; the target is read there, after the
call, and reported with :meth:`~otel_loopguard.LoopGuard.observe_handoff`
from the agent that called it. The call goes through the gate like any tool (a stopped run
transfers nowhere); its name names no agent, so the gate reports no handoff of its own.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard import get_guard
from otel_loopguard.kit.scoped_call import Wrapper
from otel_loopguard.kit.tool_gate import GatedCall, tool_gate_wrapper


def tool_wrapper(tracer: Tracer) -> Wrapper:
    """Wrap ``_execute_single_prepared_call(invocation_context, prepared_call, agent, *,
    tool_runner)``; returns the call's function response event (or ``None``, deferred)."""
    return tool_gate_wrapper(tracer, _read_call, _report, package="google_adk", asynchronous=True)


def _read_call(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> GatedCall | None:
    """The prepared call to gate (a call shape we do not know raises: the call runs untouched
    and the error is counted as ``google_adk.tool_call``)."""
    prepared = _argument(args, kwargs, 1, "prepared_call")
    agent = _argument(args, kwargs, 2, "agent")
    call = prepared.function_call
    name = call.name
    if not isinstance(name, str) or not name:
        return None
    agent_name = getattr(agent, "name", None)
    return GatedCall(
        name,
        call.args,
        call_id=call.id if isinstance(call.id, str) else None,
        agent=agent_name if isinstance(agent_name, str) else None,
    )


def _report(gate: Any, response_event: Any, call: GatedCall) -> None:
    """The response to the gate, and a transfer it asks for as a handoff (raises only our
    interrupt, enforce mode, at STOP)."""
    guard = get_guard()
    target = _record_outcome(guard, gate, response_event)
    if target is not None:
        guard.observe_handoff(call.agent, target, call_id=call.call_id, span=gate.span)


def _argument(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str) -> Any:
    return args[index] if len(args) > index else kwargs[name]


def _record_outcome(guard: Any, gate: Any, response_event: Any) -> str | None:
    """Report the call's response to the gate; return the agent it transferred to, if any.

    ADK hands a tool's failure back as a response ``{"error": ...}`` when a callback answered
    it, and so does it for a tool name the model made up: that is the call's error."""
    try:
        if response_event is None:  # a long-running tool: its response comes later
            return None
        responses = response_event.get_function_responses()
        response = responses[0].response if responses else None
        error = response.get("error") if isinstance(response, dict) else None
        if error is not None and len(response) == 1:
            gate.set_error("ToolError", error if isinstance(error, str) else None)
        else:
            gate.set_result(response)
        target = getattr(getattr(response_event, "actions", None), "transfer_to_agent", None)
        return target if isinstance(target, str) and target else None
    except Exception as exc:  # never let our bookkeeping break the agent
        guard.telemetry.internal_error("google_adk.tool_outcome", exc)
        return None
