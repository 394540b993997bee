"""otel-loopguard for the Anthropic Python SDK (the Messages API, sync, async, streaming).

``opentelemetry-instrument`` loads :class:`AnthropicInstrumentor` when ``anthropic`` is
installed. Before each Messages request it runs the pre-flight check (a stopped run, max
steps, timeout, token or cost budget: in ``enforce`` mode ``LoopGuardInterrupt`` and no
request leaves the process); after it, the turn (stop reason, usage, the tool calls the
model asked for, emptiness) feeds the loop detectors. The span is the SDK's own when it
makes one, else ours (``chat {model}``); see :mod:`.model_turns`.
"""

from __future__ import annotations

import importlib
from functools import partial

from otel_loopguard.kit.instrumentor import FrameworkInstrumentor, Hook
from otel_loopguard_anthropic.model_turns import request_wrapper, sdk_span_wrapper
from otel_loopguard_anthropic.package import _instruments
from otel_loopguard_anthropic.version import __version__

_BASE_CLIENT = "anthropic._base_client"

__all__ = ["AnthropicInstrumentor", "__version__"]


def _sdk_makes_spans() -> bool:
    """The SDK starts its own span per API call (2.x): we defer to it."""
    return hasattr(importlib.import_module(_BASE_CLIENT), "start_api_call_span")


class AnthropicInstrumentor(FrameworkInstrumentor):
    """Pre-flight checks, chat spans and loop decisions for Anthropic Messages calls."""

    instruments = _instruments
    version = __version__
    schema_url = "https://opentelemetry.io/schemas/1.37.0"
    hooks = (
        Hook(
            _BASE_CLIENT,
            "SyncAPIClient.request",
            make=partial(request_wrapper, asynchronous=False),
        ),
        Hook(
            _BASE_CLIENT,
            "AsyncAPIClient.request",
            make=partial(request_wrapper, asynchronous=True),
        ),
        Hook(_BASE_CLIENT, "start_api_call_span", sdk_span_wrapper, when=_sdk_makes_spans),
    )
