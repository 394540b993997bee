"""otel-loopguard for the Anthropic Python SDK (the Messages API, sync, async, streaming).

``opentelemetry-instrument`` loads :class:`AnthropicInstrumentor` when ``anthropic`` is
installed. Before each Messages request it runs the pre-flight check (a stopped run, max
steps, timeout, token or cost budget: in ``enforce`` mode ``LoopGuardInterrupt`` and no
request leaves the process); after it, the turn (stop reason, usage, the tool calls the
model asked for, emptiness) feeds the loop detectors. The span is the SDK's own when it
makes one, else ours (``chat {model}``); see :mod:`.model_turns`.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from opentelemetry import trace
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor
from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from otel_loopguard_anthropic.model_turns import request_wrapper, sdk_span_wrapper
from otel_loopguard_anthropic.package import _instruments
from otel_loopguard_anthropic.version import __version__

_BASE_CLIENT = "anthropic._base_client"

__all__ = ["AnthropicInstrumentor", "__version__"]


class AnthropicInstrumentor(BaseInstrumentor):
    """Pre-flight checks, chat spans and loop decisions for Anthropic Messages calls."""

    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        tracer = trace.get_tracer(
            __name__,
            __version__,
            tracer_provider=kwargs.get("tracer_provider"),
            schema_url="https://opentelemetry.io/schemas/1.37.0",
        )
        for client, asynchronous in (("SyncAPIClient", False), ("AsyncAPIClient", True)):
            wrapper = request_wrapper(tracer, asynchronous=asynchronous)
            wrap_function_wrapper(_BASE_CLIENT, f"{client}.request", wrapper)
        self._sdk_spans = hasattr(_import(_BASE_CLIENT), "start_api_call_span")
        if self._sdk_spans:
            wrap_function_wrapper(_BASE_CLIENT, "start_api_call_span", sdk_span_wrapper)

    def _uninstrument(self, **kwargs: Any) -> None:
        module = _import(_BASE_CLIENT)
        unwrap(module.SyncAPIClient, "request")
        unwrap(module.AsyncAPIClient, "request")
        if getattr(self, "_sdk_spans", False):
            unwrap(module, "start_api_call_span")


def _import(name: str) -> Any:
    import importlib

    return importlib.import_module(name)
