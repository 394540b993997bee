"""``invoke_agent {role}`` spans: one run per task an agent works on (the kit's run wrapper).

``Agent.execute_task`` / ``aexecute_task``: each task is its own run (give the crew a
conversation id to make it one). A standalone ``Agent.kickoff`` (no crew) runs its executor
through ``_execute_and_build_output`` (``_async``), wrapped the same way: without a run, its
tool calls would share one process-wide run.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard.kit.agent_runs import agent_run_wrapper
from otel_loopguard.kit.scoped_call import Wrapper


def agent_name(agent: Any) -> str | None:
    role = getattr(agent, "role", None)
    return str(role) if role else None


def execute_task_wrapper(tracer: Tracer) -> Wrapper:
    """Wrap ``Agent.execute_task`` / ``aexecute_task`` (and ``_execute_and_build_output``
    / ``_async``)."""
    return agent_run_wrapper(tracer, _describe, package="crewai")


def _describe(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return agent_name(instance), None
