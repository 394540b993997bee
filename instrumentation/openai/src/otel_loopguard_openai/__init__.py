"""otel-loopguard for the OpenAI Python SDK (Chat Completions and Responses).

Model calls are where budgets are best enforced: a token or cost budget, max steps or a
timeout is checked *before* the request is sent, so a stopped run costs nothing more.
Every answer (usage, finish reasons, the tool calls the model asked for) feeds the
budget, truncation, premature-end and repeated-tool-steps detectors.

Usage::

    from otel_loopguard_openai import OpenAIInstrumentor
    OpenAIInstrumentor().instrument()

or run the program under ``opentelemetry-instrument``, which loads it through the
``opentelemetry_instrumentor`` entry point when ``openai`` is installed.
"""

from __future__ import annotations

from typing import Any

from otel_loopguard.kit.instrumentor import FrameworkInstrumentor, Hook
from otel_loopguard.kit.openai_format import CHAT, RESPONSES, ApiShape
from otel_loopguard_openai.model_turns import ModelCallRecorder, request_wrapper
from otel_loopguard_openai.package import _instruments
from otel_loopguard_openai.recommendations import (
    again_chat,
    deliver_chat,
    deliver_responses,
    join_chat,
)
from otel_loopguard_openai.version import __version__

__all__ = ["OpenAIInstrumentor", "__version__"]

_CHAT_MODULE = "openai.resources.chat.completions.completions"
_RESPONSES_MODULE = "openai.resources.responses.responses"
# (module, class, method, api shape, async?)
_TARGETS = (
    (_CHAT_MODULE, "Completions", "create", CHAT, False),
    (_CHAT_MODULE, "Completions", "parse", CHAT, False),
    (_CHAT_MODULE, "AsyncCompletions", "create", CHAT, True),
    (_CHAT_MODULE, "AsyncCompletions", "parse", CHAT, True),
    (_RESPONSES_MODULE, "Responses", "create", RESPONSES, False),
    (_RESPONSES_MODULE, "Responses", "parse", RESPONSES, False),
    (_RESPONSES_MODULE, "AsyncResponses", "create", RESPONSES, True),
    (_RESPONSES_MODULE, "AsyncResponses", "parse", RESPONSES, True),
)


def _default_guard() -> Any:
    from otel_loopguard import get_guard

    return get_guard()


def _request_hook(module: str, cls: str, method: str, shape: ApiShape, is_async: bool) -> Hook:
    def make(tracer: Any) -> Any:
        recorder = ModelCallRecorder(tracer, _default_guard)
        deliver = deliver_chat if shape is CHAT else deliver_responses
        # re-asks for Chat Completions ``create`` only: ``parse`` raises on a truncated
        # answer, and a Responses request has no one message list to continue
        reasks = shape is CHAT and method == "create"
        return request_wrapper(
            recorder,
            shape,
            asynchronous=is_async,
            deliver=deliver,
            again=again_chat if reasks else None,
            join=join_chat,
        )

    return Hook(module, f"{cls}.{method}", make=make)


class OpenAIInstrumentor(FrameworkInstrumentor):
    """Wraps ``chat.completions`` and ``responses`` ``create`` / ``parse`` (sync and async).

    The SDK's ``stream()`` helpers call ``create(stream=True)``, so they are covered too.
    """

    instruments = _instruments
    version = __version__
    hooks = tuple(_request_hook(*target) for target in _TARGETS)
