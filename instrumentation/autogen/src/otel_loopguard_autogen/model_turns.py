"""The model side of each AssistantAgent step, for budgets, max steps and empty answers.

Why this hook point (autogen-agentchat 0.7): ``ChatCompletionClient`` is abstract and every
client (OpenAI, Azure, Anthropic, Ollama, a replay or a user's own) overrides ``create`` and
``create_stream``, so wrapping the base class would see none of them. AssistantAgent makes
its first call and every call of its tool loop through one class method,
``AssistantAgent._call_llm``, an async generator that yields the streamed chunks (when
``model_client_stream`` is on) and then the ``CreateResult``.

- Before the call: the pre-flight check (a stopped run, ``max_steps``, the run's timeout, no
  token headroom), so in ``enforce`` mode a vetoed call is never made nor paid for.
- Around each step of the generator (not across its ``yield``: the agent's consumer runs
  between chunks) a ``LoopGuard.model_turn``; when the ``CreateResult`` arrives and no layer
  below (our OpenAI package under ``OpenAIChatCompletionClient``) reported the turn, one
  ``llm_response`` with its usage, finish reason and requested function calls, before the
  agent runs those tools. A STOP there (a token budget) interrupts the run.

Not covered: the extra call ``reflect_on_tool_use=True`` makes after the tools
(``_reflect_on_tool_use_flow`` calls the client directly).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Any

from otel_loopguard.decisions import LoopGuardInterrupt
from otel_loopguard.enforcement import get_guard
from otel_loopguard_autogen.runs import interrupt_for_host
from otel_loopguard_autogen.tools import decode_arguments


def call_llm_wrapper(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Wrap ``AssistantAgent._call_llm(*, model_client, ..., agent_name, ...)``."""
    return _observed_call(wrapped(*args, **kwargs), kwargs)


async def _observed_call(
    outputs: AsyncGenerator[Any, None], kwargs: dict[str, Any]
) -> AsyncGenerator[Any, None]:
    guard = get_guard()
    try:
        guard.preflight_llm()
        reported = False
        in_run = False
        while True:
            turn = guard.model_turn()  # never raises
            try:
                output = await outputs.__anext__()
            except StopAsyncIteration:
                return
            finally:
                turn.end()
            in_run = turn.in_run
            reported = reported or turn.reported
            if _is_create_result(output) and in_run and not reported:
                _observe_result(guard, output, kwargs)  # raises only LoopGuardInterrupt
            yield output
    except LoopGuardInterrupt as interrupt:
        raise interrupt_for_host(interrupt) from interrupt.__cause__
    finally:
        await outputs.aclose()


def _is_create_result(output: Any) -> bool:
    return type(output).__name__ == "CreateResult"


def _observe_result(guard: Any, result: Any, kwargs: dict[str, Any]) -> None:
    try:
        content = getattr(result, "content", None)
        usage = getattr(result, "usage", None)
        requested: list[tuple[str, Any]] = []
        said = False
        if isinstance(content, str):
            said = bool(content.strip())
        else:
            for call in content or ():
                name = getattr(call, "name", None)
                if isinstance(name, str):
                    requested.append((name, decode_arguments(getattr(call, "arguments", None))))
        agent_name = kwargs.get("agent_name")
        finish_reason = getattr(result, "finish_reason", None)
        report: dict[str, Any] = {
            "model": _model_name(kwargs.get("model_client")),
            "finish_reason": finish_reason if isinstance(finish_reason, str) else None,
            "input_tokens": _tokens(getattr(usage, "prompt_tokens", None)),
            "output_tokens": _tokens(getattr(usage, "completion_tokens", None)),
            "empty": not said and not requested,
            "requested_tool_calls": requested,
            "agent_name": agent_name if isinstance(agent_name, str) else None,
        }
    except Exception as exc:  # never let our bookkeeping break the agent
        guard.telemetry.internal_error("autogen.model_turn", exc)
        return
    guard.observe_llm_response(**report)


def _model_name(client: Any) -> str | None:
    """The model a client calls: autogen's OpenAI-style clients keep it in their create
    arguments; other clients may expose ``model``. Unknown: ``None`` (no price)."""
    try:
        create_args = getattr(client, "_create_args", None)
        name = create_args.get("model") if isinstance(create_args, dict) else None
        if name is None:
            name = getattr(client, "model", None)
    except Exception:
        return None
    return name if isinstance(name, str) and name else None


def _tokens(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
