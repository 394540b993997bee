"""otel-loopguard for LiteLLM (``litellm.completion`` / ``acompletion``, ``responses`` /
``aresponses``).

LiteLLM is the model-call layer under CrewAI (non-native providers), smolagents'
``LiteLLMModel``, Google ADK's ``LiteLlm``, DSPy, LiteLLM's ``Router`` and many
hand-written agents. Instrumenting it once gives all of them what our OpenAI package gives
the OpenAI SDK: budgets, cost limits, ``max_steps`` and timeouts checked *before* the
request is sent, and every answer (usage, finish reasons, the tool calls the model asked
for) fed to the budget, truncation, premature-end and repeated-tool-steps detectors.

Usage::

    from otel_loopguard_litellm import LiteLLMInstrumentor
    LiteLLMInstrumentor().instrument()

or run the program under ``opentelemetry-instrument``, which loads it through the
``opentelemetry_instrumentor`` entry point when ``litellm`` is installed.

Hook points (LiteLLM 1.110): the public ``litellm.completion`` / ``litellm.acompletion``
are the dispatchers of ``litellm.chat_completions.dispatch`` (re-exported by ``from
.chat_completions.dispatch import *``), which route a call to LiteLLM's native (Rust)
path or to the Python ``litellm.main.completion`` / ``acompletion``. Wrapping the
dispatchers sees every call whichever route it takes, before anything is sent.
Frameworks call them through the module attribute (``litellm.completion(...)``: CrewAI,
smolagents, DSPy, ``Router``) or bind the name at import (``from litellm import
acompletion``: Google ADK), so the same functions are replaced in every module that
exports them: ``litellm``, ``litellm.chat_completions.dispatch`` (where
``completion(acompletion=True)`` finds ``acompletion``) and ``litellm.main`` (older import
paths; also where ``main.acompletion`` finds ``completion``). Calls nested in an
instrumented one pass through (see :mod:`otel_loopguard_litellm.model_turns`). A name bound
*before* :meth:`instrument` ran keeps the original function, which is why
``opentelemetry-instrument`` (instrumentors run before the program imports anything) or
an early ``instrument()`` call is the way to use it. ``litellm.responses`` /
``aresponses`` (LiteLLM's Responses API, any provider) are dispatched the same way, from
``litellm.responses.dispatch`` to ``litellm.responses.main``, and wrapped likewise.
"""

from __future__ import annotations

import importlib
from typing import Any

from otel_loopguard.kit.instrumentor import FrameworkInstrumentor, Hook
from otel_loopguard.kit.openai_format import CHAT, RESPONSES, ApiShape
from otel_loopguard_litellm.model_turns import ModelCallRecorder, call_wrapper
from otel_loopguard_litellm.package import _instruments
from otel_loopguard_litellm.recommendations import (
    again_chat,
    deliver_chat,
    deliver_responses,
    join_chat,
)
from otel_loopguard_litellm.version import __version__

__all__ = ["LiteLLMInstrumentor", "__version__"]

# (module, function, API shape, async?); a module or name missing in an older LiteLLM is
# skipped. ``litellm.responses`` is the function, shadowing the subpackage of that name:
# the modules are looked up by their full names, never as attributes.
_TARGETS = tuple(
    (module, name, CHAT, name.startswith("a"))
    for module in ("litellm", "litellm.chat_completions.dispatch", "litellm.main")
    for name in ("completion", "acompletion")
) + tuple(
    (module, name, RESPONSES, name.startswith("a"))
    for module in ("litellm", "litellm.responses.dispatch", "litellm.responses.main")
    for name in ("responses", "aresponses")
)


def _default_guard() -> Any:
    from otel_loopguard import get_guard

    return get_guard()


def _call_hook(module: str, name: str, shape: ApiShape, is_async: bool) -> Hook:
    def make(tracer: Any) -> Any:
        deliver = deliver_chat if shape is CHAT else deliver_responses
        # re-asks for ``completion`` only: a Responses call has no one message list
        return call_wrapper(
            ModelCallRecorder(tracer, _default_guard),
            shape,
            asynchronous=is_async,
            deliver=deliver,
            again=again_chat if shape is CHAT else None,
            join=join_chat,
        )

    def present() -> bool:
        try:
            return callable(getattr(importlib.import_module(module), name, None))
        except ImportError:
            return False

    return Hook(module, name, make=make, when=present)


class LiteLLMInstrumentor(FrameworkInstrumentor):
    """Wraps ``litellm.completion`` / ``acompletion`` and ``litellm.responses`` /
    ``aresponses`` (streamed or not)."""

    instruments = _instruments
    version = __version__
    hooks = tuple(_call_hook(*target) for target in _TARGETS)
