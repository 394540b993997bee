"""wrapt wrappers for CrewAI: agent runs and both tool paths.

Where the hooks sit, and why (crewai 1.x, ``AgentExecutor``):

- ``Agent.execute_task`` / ``aexecute_task``: one ``invoke_agent {role}`` span per task an
  agent works on; each is its own run (give the crew a conversation id to make it one).
  A standalone ``Agent.kickoff`` (no crew) runs its executor through
  ``_execute_and_build_output`` (``_async``), wrapped the same way: without a run, its
  tool calls would share one process-wide run.
- Native function calling: ``AgentExecutor._execute_single_native_tool_call`` sees every
  call the model asked for, also those the tool cache answers without running the tool:
  the model still made the same call and got the same answer, which is the loop.
  Failures come back as a ``ToolFailure`` in the result, not as an exception.
- ReAct text path: see :mod:`otel_loopguard_crewai.react_path`.
- Model calls (``get_llm_response``): see :mod:`otel_loopguard_crewai.model_calls`.

``LoopGuardInterrupt`` is a ``BaseException``: the retries, the tool-error handling and the
Flow listeners of the executor catch ``Exception`` only, so it reaches ``crew.kickoff()``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard_crewai.model_calls import observed_llm_response, parse_arguments
from otel_loopguard_crewai.react_path import ReactPathWrappers, report_failure
from otel_loopguard_crewai.streaming import crew_kickoff


def _agent_name(agent: Any) -> str | None:
    role = getattr(agent, "role", None)
    return str(role) if role else None


def _tool_call_info(tool_call: Any) -> tuple[Any, str, Any] | None:
    """(call id, name, raw arguments) as CrewAI reads them from any provider's shape;
    ``None`` (call passed through unobserved) if this CrewAI version reads them otherwise."""
    try:
        from crewai.utilities.agent_utils import extract_tool_call_info

        return extract_tool_call_info(tool_call)
    except Exception:
        return None


class CrewAIWrappers(ReactPathWrappers):
    def __init__(self, tracer: Tracer, guard_provider: Callable[[], Any]) -> None:
        self._tracer = tracer
        self._guard = guard_provider

    crew_kickoff = staticmethod(crew_kickoff)

    # -- agent runs ---------------------------------------------------------------------------

    def execute_task(
        self, wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        with self._guard().agent_run(self._tracer, _agent_name(instance)):
            return wrapped(*args, **kwargs)

    async def aexecute_task(
        self, wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        with self._guard().agent_run(self._tracer, _agent_name(instance)):
            return await wrapped(*args, **kwargs)

    # -- model calls ---------------------------------------------------------------------------

    def llm_response(
        self, wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        return observed_llm_response(self._guard, wrapped, args, kwargs)

    # -- native function calling ----------------------------------------------------------------

    def native_tool_call(
        self, wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        tool_call = args[0] if args else kwargs.get("tool_call")
        info = _tool_call_info(tool_call)
        if info is None:  # crewai answers malformed calls itself; nothing ran
            return wrapped(*args, **kwargs)
        call_id, name, raw_arguments = info
        with self._guard().tool_call(
            self._tracer,
            name,
            parse_arguments(raw_arguments),
            call_id=str(call_id) if call_id else None,
            agent_name=_agent_name(getattr(instance, "agent", None)),
        ) as call:
            outcome = wrapped(*args, **kwargs)
            if isinstance(outcome, dict):
                report_failure(call, outcome.get("tool_failure"))
                call.set_result(outcome.get("result"))
        return outcome
