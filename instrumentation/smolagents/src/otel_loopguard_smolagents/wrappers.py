"""wrapt wrappers for smolagents: agent runs, tool executions, and the code executor thread.

Where the hooks sit, and why (smolagents 1.2x):

- ``MultiStepAgent._run_stream`` is the one generator behind ``run()`` (which drains it
  with ``list()``) and ``run(stream=True)`` (which hands it to the caller). Wrapping it
  gives one ``invoke_agent`` span per run for both, and its end when the caller closes the
  generator early.
- ``ToolCallingAgent.execute_tool_call`` sees every tool call of a tool-calling agent,
  also the failing ones (smolagents turns a tool's exception into
  ``AgentToolExecutionError`` and lets the model try again) and the unknown tools.
- ``Tool.__call__`` is how ``CodeAgent`` reaches tools from inside its Python executor.
  That executor catches ``Exception`` but lets a ``BaseException`` through, so
  ``LoopGuardInterrupt`` still reaches the caller. Inside ``execute_tool_call`` the same
  call is already a span, so a context flag keeps it from being counted twice.
- ``ToolCallingAgent._step_stream`` / ``CodeAgent._step_stream``: the model side of each
  step (see :mod:`otel_loopguard_smolagents.model_steps`).
- ``local_python_executor.timeout`` runs the generated code in a worker thread, which
  would lose the OpenTelemetry context (and with it the run a tool call belongs to); the
  wrapper hands the caller's context to that thread.
"""

from __future__ import annotations

import contextvars
import functools
import logging
from collections.abc import Callable, Generator
from typing import Any

from opentelemetry.trace import Tracer

from otel_loopguard.engine.decisions import RunEndState
from otel_loopguard_smolagents.model_steps import observed_step

logger = logging.getLogger(__name__)

# set while execute_tool_call already has the tool span open
_IN_TOOL_SPAN: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "otel_loopguard_smolagents_in_tool_span", default=False
)


def agent_name(agent: Any) -> str:
    return getattr(agent, "name", None) or type(agent).__name__


def _tool_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """What the tool was called with, as the model wrote it (positional or keywords)."""
    kwargs = {key: value for key, value in kwargs.items() if key != "sanitize_inputs_outputs"}
    if len(args) == 1 and not kwargs and isinstance(args[0], dict):
        return args[0]
    if args and kwargs:
        return {"args": list(args), **kwargs}
    if args:
        return args[0] if len(args) == 1 else list(args)
    return kwargs


class SmolagentsWrappers:
    def __init__(self, tracer: Tracer, guard_provider: Callable[[], Any]) -> None:
        self._tracer = tracer
        self._guard = guard_provider

    def run_stream(
        self, wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        return self._observed_run(wrapped(*args, **kwargs), instance)

    def _observed_run(self, steps: Generator[Any, None, None], agent: Any) -> Generator[Any]:
        """Yield the agent's steps inside its ``invoke_agent`` span.

        ``yield from`` forwards ``close()`` and ``throw()`` to the agent's generator, and
        the ``with`` block ends the span exactly once on every way out: exhausted,
        raised (``LoopGuardInterrupt`` included), or closed early by the caller.
        """
        with self._guard().agent_run(self._tracer, agent_name(agent)) as run:
            yield from steps
            if _hit_max_steps(agent):
                run.set_state(RunEndState.MAX_STEPS)

    def step_stream(
        self, wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        return observed_step(self._guard, wrapped, instance, args, kwargs)

    def execute_tool_call(
        self, wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        tool_name = args[0] if args else kwargs.get("tool_name")
        arguments = args[1] if len(args) > 1 else kwargs.get("arguments")
        with self._guard().tool_call(
            self._tracer, str(tool_name), arguments, agent_name=agent_name(instance)
        ) as call:
            token = _IN_TOOL_SPAN.set(True)
            try:
                result = wrapped(*args, **kwargs)
            except Exception as exc:
                _report_tool_cause(call, exc)
                raise
            finally:
                _IN_TOOL_SPAN.reset(token)
            call.set_result(result)
        return result

    def tool_call(
        self, wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if _IN_TOOL_SPAN.get():
            return wrapped(*args, **kwargs)
        name = getattr(instance, "name", None) or type(instance).__name__
        with self._guard().tool_call(self._tracer, name, _tool_arguments(args, kwargs)) as call:
            result = wrapped(*args, **kwargs)
            call.set_result(result)
        return result


def _report_tool_cause(call: Any, error: Exception) -> None:
    """Report the tool's own error rather than smolagents' wrapper around it.

    ``AgentToolExecutionError`` always ends with "Please try again or use another tool",
    which would make every tool failure look retryable to the permanent-failure detector;
    the exception the tool raised is its ``__cause__``.
    """
    cause = error.__cause__
    if cause is None or not isinstance(cause, Exception):
        return
    try:
        message = str(cause)
    except Exception:
        message = None
    call.set_error(type(cause).__qualname__, message)


def _hit_max_steps(agent: Any) -> bool:
    """smolagents does not raise at ``max_steps``: it records an ``AgentMaxStepsError``
    on the last memory step and asks the model for a final answer."""
    try:
        from smolagents.utils import AgentMaxStepsError

        steps = agent.memory.steps
        return bool(steps) and isinstance(getattr(steps[-1], "error", None), AgentMaxStepsError)
    except Exception:
        return False


def timeout_with_context(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``timeout(seconds)`` returns a decorator; make the function it runs in its worker
    thread see the OpenTelemetry context of the thread that called it."""
    decorator = wrapped(*args, **kwargs)

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def in_caller_context(*call_args: Any, **call_kwargs: Any) -> Any:
            context = contextvars.copy_context()
            runner = decorator(functools.partial(context.run, function))
            return runner(*call_args, **call_kwargs)

        return in_caller_context

    return decorate
