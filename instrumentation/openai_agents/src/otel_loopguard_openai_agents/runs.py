"""``invoke_agent {agent}`` spans around whole runs, streamed or not (the kit's run wrapper)."""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard.kit.agent_runs import agent_run_wrapper
from otel_loopguard.kit.scoped_call import Wrapper


def run_wrapper(tracer: Tracer) -> Wrapper:
    """Wrap ``AgentRunner.run`` (``Runner.run`` and ``run_sync`` both go through it)."""
    return agent_run_wrapper(tracer, _describe_run, package="openai_agents", asynchronous=True)


def streaming_wrapper(tracer: Tracer) -> Wrapper:
    """Wrap ``start_streaming``, the coroutine ``run_streamed``'s background task awaits.

    Opening the span inside that task (not in ``run_streamed``, which returns at once) makes
    it end exactly when the streamed run ends: normally, with an error, with our interrupt,
    or cancelled because the consumer called ``cancel()`` or stopped iterating.
    """
    return agent_run_wrapper(
        tracer, _describe_streaming, package="openai_agents", asynchronous=True
    )


def _describe_run(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    agent = kwargs.get("starting_agent", args[0] if args else None)
    return _agent_name(agent), kwargs.get("conversation_id")


def _describe_streaming(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return _agent_name(kwargs.get("starting_agent")), kwargs.get("conversation_id")


def _agent_name(agent: Any) -> str:
    name = getattr(agent, "name", None)
    return name if isinstance(name, str) and name else "agent"
