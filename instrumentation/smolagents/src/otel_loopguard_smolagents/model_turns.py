"""The model side of a smolagents step, for budgets, max steps and repeated tool steps.

smolagents calls ``self.model.generate`` (or ``generate_stream``) once per step, on
whichever ``Model`` subclass the user chose (OpenAI, LiteLLM, Hugging Face, local), each
overriding ``generate``; the one place common to all of them is the agent's
``_step_stream`` generator (``ToolCallingAgent`` and ``CodeAgent`` each define one).

- Before the step: the pre-flight check (stopped run, max steps, timeout, token or cost
  budget) so in enforce mode a run over budget makes no further model call.
- After the step: one ``llm_response`` with the step's token usage and the tool calls it
  asked for (``CodeAgent``: its ``python_interpreter`` code), unless a model-call
  instrumentation (our OpenAI SDK package, for ``OpenAIServerModel``) already reported
  this turn, which marks the ``LoopGuard.model_turn`` open around the step (the step's
  tools start with no turn open, so a managed agent's turns stay its own). The report comes
  after the step's tool calls, because smolagents records the step only then; budgets and
  repeated steps do not mind.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from otel_loopguard import get_guard


def _requested(step: Any) -> list[tuple[str, Any]]:
    return [
        (str(getattr(call, "name", "")), getattr(call, "arguments", None))
        for call in getattr(step, "tool_calls", None) or ()
    ]


def _report_step(guard: Any, agent: Any, step: Any) -> None:
    usage = getattr(step, "token_usage", None)
    message = getattr(step, "model_output_message", None)
    requested = _requested(step)
    guard.observe_llm_response(
        model=getattr(getattr(agent, "model", None), "model_id", None),
        input_tokens=getattr(usage, "input_tokens", None),
        output_tokens=getattr(usage, "output_tokens", None),
        empty=not requested and not getattr(message, "content", None),
        requested_tool_calls=requested,
        raise_on_stop=True,
    )


def step_stream_wrapper(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Wrap ``ToolCallingAgent._step_stream`` / ``CodeAgent._step_stream``."""
    return _observed_step(wrapped, instance, args, kwargs)


def _observed_step(
    wrapped: Any, agent: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Generator[Any, None, None]:
    guard = get_guard()
    guard.preflight_llm()
    step = args[0] if args else kwargs.get("memory_step")
    # the step's tools run inside it too: the tool gate starts them with no turn open, so
    # a managed agent called as a tool reports its own turns, not this one
    with guard.model_turn() as turn:  # never raises
        yield from wrapped(*args, **kwargs)
    if turn.needs_report:  # no model-call instrumentation below reported it
        _report_step(guard, agent, step)  # raises only LoopGuardInterrupt (enforce, STOP)
