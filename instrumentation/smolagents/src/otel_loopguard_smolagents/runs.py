"""``invoke_agent {agent}`` spans around smolagents runs.

``MultiStepAgent._run_stream`` is the one generator behind ``run()`` (which drains it with
``list()``) and ``run(stream=True)`` (which hands it to the caller). Wrapping it gives one
``invoke_agent`` span per run for both, and its end when the caller closes the generator
early.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard import RunEndState, get_guard
from otel_loopguard.kit.scoped_call import Wrapper


def agent_name(agent: Any) -> str:
    return getattr(agent, "name", None) or type(agent).__name__


def run_stream_wrapper(tracer: Tracer) -> Wrapper:
    """Wrap ``MultiStepAgent._run_stream``."""

    def wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return _observed_run(tracer, wrapped(*args, **kwargs), instance)

    return wrapper


def _observed_run(tracer: Tracer, steps: Generator[Any, None, None], agent: Any) -> Generator[Any]:
    """Yield the agent's steps inside its ``invoke_agent`` span.

    ``yield from`` forwards ``close()`` and ``throw()`` to the agent's generator, and
    the ``with`` block ends the span exactly once on every way out: exhausted,
    raised (``LoopGuardInterrupt`` included), or closed early by the caller.
    """
    with get_guard().agent_run(tracer, agent_name(agent)) as run:
        yield from steps
        if _hit_max_steps(agent):
            run.set_state(RunEndState.MAX_STEPS)


def _hit_max_steps(agent: Any) -> bool:
    """smolagents does not raise at ``max_steps``: it records an ``AgentMaxStepsError``
    on the last memory step and asks the model for a final answer."""
    try:
        from smolagents.utils import AgentMaxStepsError

        steps = agent.memory.steps
        return bool(steps) and isinstance(getattr(steps[-1], "error", None), AgentMaxStepsError)
    except Exception:
        return False
